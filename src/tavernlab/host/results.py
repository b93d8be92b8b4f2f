"""Stored tool results: ``tool-results/<key>/<record>.json`` and readable views
(docs/tool-calls.md).

tavernlab choices where upstream is unknown: "external" results (every tool whose id does not
start with ``workspace.``) longer than the Profile's inline limit (20 000 characters) get a
readable ``.txt`` view with hard line breaks every 3 000 characters, and the model sees the
first 3 000 characters plus a pointer to the view. A stored result (and its view) is created,
never replaced: call ids are unique within a run (:mod:`tavernlab.host.call_ids`), so a file
already there belongs to another call, whose result stays as it is.
"""

from __future__ import annotations

from tavernlab.events import (
    StoredResult,
    StoredResultView,
    ToolResultReadableViewStored,
    ToolResultStored,
)
from tavernlab.host.core import RunCore
from tavernlab.host.invocation import Invocation
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.fs import WriteGuard
from tavernlab.workspace.records import pretty_json
from tavernlab.workspace.tooling import ToolResult

#: Characters of an externalized result the model still sees inline.
EXTERNAL_PREFIX_CHARS = 3000
#: A readable view breaks lines hard every this many characters.
VIEW_LINE_CHARS = 3000


def results_key(core: RunCore, invocation: Invocation) -> str:
    """The ``tool-results/`` folder of a call: the run id for Session runs (their results
    share the session workspace), else the Invocation id."""
    return core.id if core.record.target.kind == "session" else invocation.id


def store_result(core: RunCore, invocation: Invocation, record_name: str, result: ToolResult
                 ) -> ToolResult:
    """Write ``result`` (and, when it is long and external, its readable view); returns the
    result the model sees."""
    key = results_key(core, invocation)
    json_path = WorkspacePath(f"tool-results/{key}/{record_name}.json")
    model_result = result
    limit = core.profile.workspace.inline_result_chars
    external = not result.tool_id or not result.tool_id.startswith("workspace.")
    if external and len(result.content) > limit:
        view_path = WorkspacePath(f"tool-results/{key}/{record_name}.txt")
        model_result = _externalize(core, invocation, result, view_path, json_path, limit)
    core.fs.write_text(json_path, pretty_json(result.to_json()), WriteGuard.must_not_exist())
    core.emit(ToolResultStored, StoredResult(
        invocation_id=invocation.id, round=core.counters.round, call_id=result.call_id or "",
        tool_id=result.tool_id or "", path=json_path.text))
    return model_result


def _externalize(core: RunCore, invocation: Invocation, result: ToolResult,
                 view_path: WorkspacePath, json_path: WorkspacePath, limit: int) -> ToolResult:
    content = result.content
    view = "\n".join(content[i:i + VIEW_LINE_CHARS]
                     for i in range(0, len(content), VIEW_LINE_CHARS))
    core.fs.write_text(view_path, view, WriteGuard.must_not_exist())
    core.emit(ToolResultReadableViewStored, StoredResultView(
        invocation_id=invocation.id, round=core.counters.round, call_id=result.call_id or "",
        tool_id=result.tool_id or "", path=view_path.text, audit_path=json_path.text))
    return ToolResult(
        content=(content[:EXTERNAL_PREFIX_CHARS] + f"\n\n[Result of {len(content)} "
                 f"characters stored at {view_path.text}. Read it with "
                 "workspace_read_file or search it with workspace_search_files.]"),
        structured={"externalized": True, "path": view_path.text, "auditPath": json_path.text,
                    "charCount": len(content), "charLimit": limit},
        is_error=result.is_error, error_code=result.error_code,
        resource_refs=result.resource_refs, call_id=result.call_id, tool_id=result.tool_id)
