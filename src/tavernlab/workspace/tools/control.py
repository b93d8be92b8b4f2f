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


def task_return(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``task.return``: a return-mode sub-agent hands its result back; the text is written to
    ``summaries/<agent>-result.md`` (``-002``, ``-003``... for repeated results).

    Upstream's argument name is unknown; tavernlab chooses ``{"result": string}``.
    """
    text = args.string("result", required=True)
    assert text is not None
    path = ctx.return_result(text)
    return ToolResult(content=f"Returned the result to the parent agent ({path}).",
                      structured={"path": path}, resource_refs=[path])


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
