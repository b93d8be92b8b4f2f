"""Pure renderers of a model-driven run's live view: one line per tool call, the outcome
line, the outcome as JSON and the table of model prefixes.

The ``%%agent`` magic and ``tavernlab agent run`` print the same lines: a tool call is shown
when it starts (``▶ workspace_write_file(path="output/main.md", …)``) and the same line is
completed when it ends (``✓ … 3 ms`` or ``✗ … code: message``); the run ends with
``completed · 2 rounds · 2 model calls · tokens 20 in, 10 out, 30 total`` (a failure adds its
code and message).
"""

from __future__ import annotations

import html
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from tavernlab.workspace.records import read_json

#: Longest argument value shown inline in a tool line before it is shortened with its length.
TOOL_ARGUMENT_PREVIEW = 48


class UsageLike(Protocol):
    """Token totals (a :class:`tavernlab.models.Usage`)."""

    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None


class PrefixLike(Protocol):
    """A known model prefix (a :class:`tavernlab.models.ModelPrefix`)."""

    def to_json(self) -> dict[str, Any]:
        """Its JSON form."""
        ...


class FollowedRun(Protocol):
    """What :func:`follow` needs of a run (a :class:`tavernlab.host.Run`)."""

    def subscribe(self, callback: Callable[[Any], object]) -> Any:
        """Call ``callback`` for every new record; returns a closable subscription."""
        ...

    def events(self) -> list[Any]:
        """The records written so far."""
        ...


def follow(run: FollowedRun, show: Callable[[Any], None], types: frozenset[str],
           key: Callable[[Any], Any]) -> Any:
    """Call ``show`` once for every record of ``types`` the run has written and will write,
    in order and each once (``key`` tells records apart): the records written before the
    subscription began come first, then the rest as they come, on the writer's thread.
    Returns the subscription (close it to stop). Nothing is held while the run's records
    are read, so a writer telling the subscription never waits for the reader."""
    order = threading.Lock()  # one record shown at a time, in order
    state = threading.Lock()
    held: list[Any] = []
    shown: set[Any] = set()
    live = False

    def show_once(record: Any) -> None:
        if record.type not in types:
            return
        marker = key(record)
        if marker in shown:
            return
        shown.add(marker)
        show(record)

    def received(record: Any) -> None:
        with state:
            if not live:
                held.append(record)
                return
        with order:
            show_once(record)

    with order:
        subscription = run.subscribe(received)
        backlog = run.events()
        with state:
            live = True
            queued = list(held)
        for record in sorted([*backlog, *queued], key=key):
            show_once(record)
    return subscription


def _argument(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    if len(text) > TOOL_ARGUMENT_PREVIEW:
        return f"{text[:TOOL_ARGUMENT_PREVIEW - 1]}…({len(text)} chars)"
    return text


def stored_arguments(stored: Any) -> Any:
    """A call's arguments from its ``tool-args/`` file: a call made by hand stores
    ``{callId, toolId, arguments}``, a call of the agent loop the arguments themselves."""
    if isinstance(stored, dict) and "arguments" in stored and set(stored) <= {
            "callId", "toolId", "arguments"}:
        return stored["arguments"]
    return stored


def arguments_at(run_dir: Path | None, path: str | None) -> Any:
    """The arguments stored at ``path`` under ``run_dir`` (see :func:`stored_arguments`), or
    ``None`` when there is no such file yet or it cannot be read (a live view shows the call
    without them rather than failing)."""
    if path is None or run_dir is None:
        return None
    try:
        stored = read_json(run_dir / path)
    except (OSError, ValueError):
        return None
    return stored_arguments(stored)


def tool_alias(name: str) -> str:
    """The name a model calls a tool by: ``workspace.write_file`` -> ``workspace_write_file``
    (a ``builtin:`` prefix dropped)."""
    return name.split(":", 1)[-1].replace(".", "_")


def tool_call_line(name: str, arguments: Any, *, status: str = "running",
                   elapsed_ms: int | None = None, error_code: str | None = None,
                   message: str | None = None) -> str:
    """One tool call as one line: ``▶`` while it runs, then ``✓`` (with its time) or ``✗``
    (with its code and message, first line only)."""
    if isinstance(arguments, Mapping):
        shown = ", ".join(f"{key}={_argument(value)}" for key, value in arguments.items())
    elif arguments is None:
        shown = ""
    else:
        shown = _argument(arguments)
    call = f"{tool_alias(name)}({shown})"
    if status == "running":
        return f"▶ {call}"
    took = f"  {elapsed_ms} ms" if elapsed_ms is not None else ""
    if status == "ok":
        return f"✓ {call}{took}"
    mark = "■" if status == "cancelled" else "✗"
    why = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    detail = ": ".join(part for part in (error_code or "", why) if part)
    return f"{mark} {call}{took}" + (f"  {detail}" if detail else "")


def tokens_text(usage: UsageLike) -> str:
    """``tokens 20 in, 10 out, 30 total`` (counts the provider did not report are left out;
    ``tokens not reported`` when it reported none)."""
    parts = [f"{value} {label}" for value, label in ((usage.input_tokens, "in"),
                                                     (usage.output_tokens, "out"),
                                                     (usage.total_tokens, "total"))
             if value is not None]
    return "tokens " + ", ".join(parts) if parts else "tokens not reported"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def outcome_line(status: str, rounds: int, usage: UsageLike, failure: Mapping[str, Any] | None,
                 *, model_calls: int | None = None, run_id: str | None = None) -> str:
    """``completed · 2 rounds · 2 model calls · tokens 20 in, 10 out, 30 total`` and, for a
    failed or partly successful run, `` · <code>: <message>``."""
    parts = [status, _plural(rounds, "round")]
    if model_calls is not None:
        parts.append(_plural(model_calls, "model call"))
    parts.append(tokens_text(usage))
    if run_id is not None:
        parts.append(run_id)
    line = " · ".join(parts)
    if failure:
        line += f" · {failure.get('code')}: {failure.get('message')}"
    return line


def usage_json(usage: UsageLike) -> dict[str, Any]:
    """Token totals in the records' names (``inputTokens`` …; unreported ones left out)."""
    shown = {"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens,
             "totalTokens": usage.total_tokens}
    return {key: value for key, value in shown.items() if value is not None}


def outcome_json(run_id: str, status: str, rounds: int, usage: UsageLike,
                 failure: Mapping[str, Any] | None, commits: Iterable[Mapping[str, Any]],
                 *, run_dir: str | None = None) -> dict[str, Any]:
    """The outcome as ``--json`` prints it: ``{runId, status, rounds, usage, failure,
    commits, runDir}``."""
    return {"runId": run_id, "status": status, "rounds": rounds, "usage": usage_json(usage),
            "failure": None if failure is None else dict(failure),
            "commits": [dict(commit) for commit in commits], "runDir": run_dir}


def _credential(entry: Mapping[str, Any]) -> str:
    env = entry.get("apiKeyEnv")
    if env is None:
        return "no key"
    state = "set" if entry.get("credentialSet") else "not set"
    optional = "" if entry.get("keyRequired") else ", optional"
    return f"{env} ({state}{optional})"


def model_prefixes_text(prefixes: Iterable[PrefixLike], default: str | None = None) -> str:
    """The known prefixes, one a line: ``openai:  OpenAI … OPENAI_API_KEY (not set)``; the
    default model first when there is one."""
    rows = [entry.to_json() for entry in prefixes]
    width = max((len(row["prefix"]) for row in rows), default=0) + 1
    lines = [f"default model: {default}"] if default else []
    for row in rows:
        where = f"  {row['baseUrl']}" if row.get("baseUrl") else ""
        lines.append(f"{row['prefix'] + ':':<{width}}  {row['description']}{where}  "
                     f"[{_credential(row)}]")
    return "\n".join(lines)


def model_prefixes_html(prefixes: Iterable[PrefixLike], default: str | None = None) -> str:
    """The known prefixes as a table (prefix, provider, endpoint, credential)."""
    rows = [entry.to_json() for entry in prefixes]
    cells = "".join(
        f"<tr><td><code>{html.escape(row['prefix'])}:</code></td>"
        f"<td>{html.escape(row['description'])}</td>"
        f"<td><code>{html.escape(row.get('baseUrl') or '')}</code></td>"
        f"<td>{html.escape(_credential(row))}</td></tr>" for row in rows)
    head = (f"<p>default model: <code>{html.escape(default)}</code></p>" if default else "")
    return (f"<div class=\"tl-agent-models\">{head}<table><thead><tr><th>prefix</th>"
            "<th>provider</th><th>endpoint</th><th>credential</th></tr></thead>"
            f"<tbody>{cells}</tbody></table></div>")
