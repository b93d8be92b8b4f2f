"""Stored tool results: ``tool-results/<key>/<record>.json`` and readable views
(docs/tool-calls.md).

External results (every tool that is not a builtin: its id starts with neither
``workspace.`` nor ``builtin:``) longer than the Profile's ``externalResultInlineCharLimit``
(50 000 characters) get a readable ``.txt`` view with hard line breaks every 3 000 characters,
and the model sees upstream's notice with the path and a preview of the first 3 000
characters. Builtin results are never externalized. A stored result (and its view) is
created, never replaced: call ids are unique within a run (:mod:`tavernlab.host._call_ids`), so
a file already there belongs to another call, whose result stays as it is.
"""

from __future__ import annotations

from collections.abc import Callable

import tavernlab.layout as layout
from tavernlab.events import (
    Level,
    StoredResult,
    StoredResultView,
    ToolResultReadableViewStored,
    ToolResultStored,
)
from tavernlab.host._core import RunCore
from tavernlab.host._invocation import Invocation
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.records import pretty_json
from tavernlab.workspace.storage import WriteGuard
from tavernlab.workspace.tools import ToolResult

#: Characters of an externalized result the model still sees inline.
EXTERNAL_PREFIX_CHARS = 3000
#: A readable view breaks lines hard every this many characters.
VIEW_LINE_CHARS = 3000


def results_key(core: RunCore, invocation: Invocation) -> str:
    """The ``tool-results/`` folder of a call: the run id for Session runs (their results
    share the session workspace), else the Invocation id."""
    return core.id if core.record.target.kind == "session" else invocation.id


def results_path(core: RunCore, invocation: Invocation, record_name: str) -> str:
    """``tool-results/<key>/<record>.json``, a call's stored result."""
    return layout.tool_result_path(results_key(core, invocation), record_name)


def store_result(core: RunCore, invocation: Invocation, record_name: str, result: ToolResult,
                 *, round_number: int | None = None, level: Level | None = None,
                 readers: tuple[str | None, str | None] | None = None,
                 then: Callable[[], object] | None = None) -> ToolResult:
    """Write ``result`` (and, when it is long and external, its readable view); returns the
    result the model sees. ``round_number`` is the call's round (default: the run's);
    ``level`` that of ``tool_result_stored`` (the agent loop's is upstream's ``debug``);
    ``readers`` the read and search aliases the externalized notice names (``None`` for
    one the caller cannot use; default: both workspace tools); ``then`` is called under the
    lock's hold that wrote the stored result, right after it."""
    round_number = core.counters.round if round_number is None else round_number
    key = results_key(core, invocation)
    json_path = WorkspacePath(results_path(core, invocation, record_name))
    model_result = result
    limit = invocation.profile.tools.external_result_inline_char_limit
    external = not result.tool_id or not result.tool_id.startswith(("workspace.", "builtin:"))
    if external and len(result.content) > limit:
        view_path = WorkspacePath(layout.tool_result_view_path(key, record_name))
        model_result = _externalize(core, invocation, result, view_path, json_path, limit,
                                    round_number, readers)
    core.fs.write_text(json_path, pretty_json(result.to_json()), WriteGuard.must_not_exist(),
                       then)
    core.emit(ToolResultStored, StoredResult(
        invocation_id=invocation.id, round=round_number, call_id=result.call_id or "",
        tool_id=result.tool_id or "", path=json_path.text), level=level)
    return model_result


def _externalize(core: RunCore, invocation: Invocation, result: ToolResult,
                 view_path: WorkspacePath, json_path: WorkspacePath, limit: int,
                 round_number: int, readers: tuple[str | None, str | None] | None
                 ) -> ToolResult:
    content = result.content
    view = "\n".join(content[i:i + VIEW_LINE_CHARS]
                     for i in range(0, len(content), VIEW_LINE_CHARS))
    core.fs.write_text(view_path, view, WriteGuard.must_not_exist())
    core.emit(ToolResultReadableViewStored, StoredResultView(
        invocation_id=invocation.id, round=round_number, call_id=result.call_id or "",
        tool_id=result.tool_id or "", path=view_path.text, audit_path=json_path.text))
    return ToolResult(
        content=(externalized_notice(content, view_path.text) if readers is None else
                 externalized_notice(content, view_path.text, read_alias=readers[0],
                                     search_alias=readers[1])),
        structured={"externalized": True, "path": view_path.text, "auditPath": json_path.text,
                    "charCount": len(content), "charLimit": limit},
        is_error=result.is_error, error_code=result.error_code,
        resource_refs=[*result.resource_refs, view_path.text, json_path.text],
        call_id=result.call_id, tool_id=result.tool_id)


def externalized_notice(content: str, view: str, *, read_alias: str | None =
                        "workspace_read_file", search_alias: str | None =
                        "workspace_search_files") -> str:
    """What the model reads instead of a result too large to inline (upstream's text): the
    size, the readable view's path, how to read and search it, and a prefix preview."""
    lines = [f"This tool result is too large to include in full ({len(content)} characters). "
             f"The full result is saved at `{view}`."]
    if read_alias is not None:
        lines.append(f"Use {read_alias} with this path to read the full result. If the reader "
                     "returns another preview, continue from the next line it indicates.")
    if search_alias is not None:
        lines.append(f"Use {search_alias} on the same path to find specific text.")
    return "\n".join(lines) + (
        "\n\n## Prefix preview\n\nThe following is at most 3000 Unicode characters from "
        "the beginning of the result and is not the complete result.\n\n"
        + content[:EXTERNAL_PREFIX_CHARS])
