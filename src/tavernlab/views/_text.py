"""Pure text renderers for tool calls, chat messages, persist states, run events and
worktree provisioning progress.

Used by the demo and the command line (and available to notebooks); they take data and
return strings, with no I/O of their own.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable
from typing import Any

from tavernlab.events import Event
from tavernlab.workspace.persist import Message, StateManifest
from tavernlab.workspace.tools import ToolResult
from tavernlab.worktree import ProgressEvent

#: Longest argument value shown inline before it is shortened with its length.
ARGUMENT_PREVIEW = 60


def _argument(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    if len(text) > ARGUMENT_PREVIEW:
        return f"{text[:ARGUMENT_PREVIEW - 1]}…({len(text)} chars)"
    return text


def render_tool_call(tool_id: str, arguments: dict[str, Any], result: ToolResult) -> str:
    """``▶ workspace_read_file(path="…")`` then the result, indented, with its error code."""
    args = ", ".join(f"{k}={_argument(v)}" for k, v in arguments.items())
    status = f"✗ {result.error_code}" if result.is_error else "✓"
    body = textwrap.indent(result.content, "    ") if result.content else "    (no content)"
    return f"▶ {tool_id.replace('.', '_')}({args})  {status}\n{body}"


def render_message(message: Message) -> str:
    """A chat message with its swipe and the run metadata of the selected swipe."""
    agent = message.current.agent
    meta = ", ".join(f"{k}={v}" for k, v in sorted(agent.items()))
    head = (f"message #{message.index} ({message.role}, swipe {message.swipe_id + 1}/"
            f"{len(message.swipes)})")
    body = "\n".join("  | " + line for line in message.body.split("\n"))
    return f"{head}{'  [' + meta + ']' if meta else ''}\n{body}"


def render_persist_state(manifest: StateManifest) -> str:
    """A persist state: id, base, files and the change list."""
    lines = [f"persist state {manifest.state_id} (base: {manifest.base_state_id or 'none'})"]
    lines += [f"  file {f.path} ({f.bytes} bytes, sha256 {f.sha256[:12]}…)"
              for f in manifest.files]
    lines += [f"  dir  {d}/" for d in manifest.directories or []]
    if manifest.changes:
        lines.append("  changes:")
        lines += [f"    {c.kind:<17}{c.path}" for c in manifest.changes]
    else:
        lines.append("  changes: none")
    return "\n".join(lines)


def render_events(events: Iterable[Event]) -> str:
    """One line per record: ``seq level type key=value…`` (journal records' seq as ``jN``)."""
    lines = []
    for event in events:
        payload = event.payload
        if hasattr(payload, "model_dump"):
            payload = payload.model_dump(mode="json", by_alias=True, exclude_none=True)
        summary = " ".join(f"{k}={_argument(v)}" for k, v in (payload or {}).items())
        seq = f"j{event.seq}" if event.source == "journal" else str(event.seq)
        lines.append(f"{seq:>4} {event.level:<5} {event.type} {summary}".rstrip())
    return "\n".join(lines)


def describe_event(event: ProgressEvent) -> str:
    """One human line per worktree provisioning progress event (``queued at position 2 (next
    phase: deps)``, ``slot granted, starting deps``, ``phase deps``, ``done: ok``)."""
    if event["kind"] == "queued":
        return f"queued at position {event['position']} (next phase: {event['phase']})"
    if event["kind"] == "started":
        return f"slot granted, starting {event['phase']}"
    if event["kind"] == "phase":
        return f"phase {event['phase']}"
    return f"done: {event['outcome']}"
