"""The run-control tools: ``workspace.commit``, ``workspace.finish`` and ``task.return``
(docs/workspace.md)."""

from __future__ import annotations

from typing import Any

from tavernlab.errors import (
    NotFound,
    ToolError,
    WorkspaceError,
)
from tavernlab.workspace.tooling import (
    Arguments,
    ToolContext,
    ToolResult,
    file_not_found,
    parse_tool_path,
)
from tavernlab.workspace.tools.common import require_visible, storage_error

#: Upstream's refusal of a foreground finish without an explicit commit.
FINISH_REQUIRES_COMMIT = ("Foreground Agent runs must call workspace.commit successfully "
                          "before workspace.finish.")


def commit(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.commit``: ask the host to save a visible file as this run's message.

    A ``mode`` string other than ``replace``/``append`` is ``workspace.commit_mode_invalid``
    (``got `<x>` `` quotes the string); a non-string ``mode`` is ``tool.invalid_arguments``;
    a blank message body (the required artifact) is ``workspace.required_artifact_empty``.
    """
    raw_path = args.string("path")
    mode = args.string("mode", default="replace")
    reason = args.string("reason")
    if mode not in ("replace", "append"):
        raise ToolError("workspace.commit_mode_invalid",
                        f"mode must be `replace` or `append`, got `{mode}`")
    path = parse_tool_path(raw_path if raw_path is not None
                           else ctx.profile.workspace.message_body_path)
    require_visible(ctx, path)
    try:
        file = ctx.scope.read_text(path)
    except NotFound:
        raise file_not_found(path.text) from None
    except WorkspaceError as exc:
        raise storage_error(exc, path.text) from None
    if path.text == ctx.profile.workspace.message_body_path and not file.text.strip():
        raise ToolError("workspace.required_artifact_empty", f"{path.text} is empty")
    ctx.commit_to_chat(path=path.text, text=file.text, sha256=file.sha256, mode=str(mode),
                       reason=reason)
    return ToolResult(
        content=f"Requested chat commit of {path.text} with mode {str(mode).capitalize()}.",
        structured={"path": path.text, "mode": mode, "reason": reason},
        resource_refs=[path.text],
    )


def finish(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.finish``: end the run (a Chat run publishes ``persist/``).

    A foreground Chat run needs a successful explicit commit first (an automatic commit does
    not count): upstream's ``agent.foreground_commit_required``.
    """
    reason = args.string("reason")
    if ctx.commit_required:
        raise ToolError("agent.foreground_commit_required", FINISH_REQUIRES_COMMIT)
    refs = ctx.finish_run(reason)
    return ToolResult(content="Finished the Agent run.", structured={"reason": reason,
                      **refs}, resource_refs=[])


#: ``task.return``'s arguments: upstream's, and ``result`` (tavernlab's name before upstream's
#: was known, still accepted as the summary).
TASK_RETURN_ARGUMENTS = ("summary", "status", "confidence", "artifacts", "findings",
                         "warnings", "suggestedNextActions", "questionsForCaller", "result")


def task_return(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``task.return``: a return-mode sub-agent hands its result back; the summary is written
    to ``summaries/<agent>-result.md`` (``-002``, ``-003``... for repeated results).

    ``summary`` is required (``result`` is accepted for it); ``status`` is ``completed``
    (default) or ``failed``; the other upstream fields are kept in the structured result.
    """
    text = args.string("summary") if args.has("summary") else args.string("result")
    if text is None:
        raise ToolError("tool.invalid_arguments", "summary is required")
    status = args.string("status", default="completed")
    if status not in ("completed", "failed"):
        raise ToolError("tool.invalid_arguments", "status must be `completed` or `failed`")
    path = ctx.return_result(text)
    extra = {key: args.value(key) for key in TASK_RETURN_ARGUMENTS[2:-1] if args.has(key)}
    structured: dict[str, Any] = {"path": path}
    if args.has("summary") or args.has("status") or extra:
        structured.update(status=status, **extra)
    return ToolResult(content=f"Returned the result to the parent agent ({path}).",
                      structured=structured, resource_refs=[path])


def return_only(ctx: ToolContext) -> tuple[str, str] | None:
    """Availability of ``task.return``: return-mode sub-agents only."""
    if ctx.agent_mode != "return":
        return ("tool.not_available", "task_return is not available for this task.")
    return None


def only_main_chat(tool: str) -> Any:
    """Availability of ``workspace.commit`` (main agent of a Chat run) and
    ``workspace.finish`` (main agent)."""
    def available(ctx: ToolContext) -> tuple[str, str] | None:
        if ctx.agent_mode != "main" or (tool == "commit" and not ctx.is_chat):
            return ("tool.not_available", f"workspace_{tool} is not available for this task.")
        return None

    return available
