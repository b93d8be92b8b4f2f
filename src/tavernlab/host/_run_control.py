"""The run-control tools: ``workspace.commit``, ``workspace.finish`` and ``task.return``.

They are the host's own tools: they end rounds, save a run's message, publish a Chat run's
``persist/`` state and complete invocations, so they are declared and handled on the host
floor, not with the workspace's storage tools. The registry offers them as the provider
:func:`~tavernlab.host._registry.run_control_tools` (part of the default set), under the same
ids, model names, descriptions and schemas as upstream's (docs/workspace.md, docs/tool-calls.md).

A handler receives the storage floor's
:class:`~tavernlab.workspace.tools.ToolContext`; the capabilities only run control needs (the
calling agent's mode, whether the run works for a Chat, the commit, finish and return
handshakes) are :class:`RunControlContext`, which the host's call context implements.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

from tavernlab.errors import (
    NotFound,
    ToolError,
    WorkspaceError,
)
from tavernlab.workspace.text import text_metrics
from tavernlab.workspace.tools import (
    Arguments,
    ToolContext,
    ToolResult,
    ToolSpec,
    file_not_found,
    object_schema,
    parse_tool_path,
    require_visible,
    storage_error,
    string_property,
)


@runtime_checkable
class RunControlContext(ToolContext, Protocol):
    """What the run-control tools see of a call beyond the storage floor's context: the
    calling agent's mode, the run's target, and the host's commit, finish and return
    handshakes. The host's call context implements it."""

    @property
    def agent_mode(self) -> Literal["main", "return"]:
        """``main`` for the run's main agent, ``return`` for a sub-agent."""

    @property
    def is_chat(self) -> bool:
        """Whether the run works for a Chat target."""

    @property
    def commit_required(self) -> bool:
        """Whether finishing needs an explicit commit first (a foreground Chat run with none)."""

    def commit_to_chat(self, *, path: str, text: str, sha256: str, mode: str,
                       reason: str | None) -> tuple[int, int]:
        """Ask the host to save ``text`` as the run's message; returns ``(index, swipe)``."""

    def finish_run(self, reason: str | None) -> dict[str, Any]:
        """End the run (publishing ``persist/`` for a Chat run); returns the refs to report."""

    def return_result(self, text: str) -> str:
        """Hand a sub-agent's result to its parent; returns the path it was written to."""


def run_context(ctx: ToolContext, alias: str) -> RunControlContext:
    """``ctx`` as the host's call context; a context without the host's run-control
    capabilities (a tool called outside a host run) is ``tool.not_available``."""
    if not isinstance(ctx, RunControlContext):
        raise ToolError("tool.not_available", f"{alias} is not available for this task.")
    return ctx


#: Upstream's refusal of a foreground finish without an explicit commit.
FINISH_REQUIRES_COMMIT = ("Foreground Agent runs must call workspace.commit successfully "
                          "before workspace.finish.")


#: The result of a commit the host confirmed (upstream's text; ``mode`` is ``Replace`` or
#: ``Append``).
COMMITTED = ("Committed {path} to the current chat message with mode {mode}. You may continue "
             "editing and commit again if needed. When all intended commits are complete, call "
             "workspace_finish to end the run. Do not use plain text as the final answer; the "
             "run must finish through workspace_finish.")


def commit(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.commit``: ask the host to save a visible file as this run's message; once
    the host confirms, the result says so (``{path, mode, messageId, messageIndex, chars,
    words}``; the message id is the chat's message index).

    A ``mode`` string other than ``replace``/``append`` is ``workspace.commit_mode_invalid``
    (``got `<x>` `` quotes the string); a non-string ``mode`` is ``tool.invalid_arguments``;
    a blank message body (the required artifact) is ``workspace.required_artifact_empty``.
    """
    host = run_context(ctx, "workspace_commit")
    raw_path = args.string("path")
    mode = args.string("mode", default="replace")
    reason = args.string("reason")
    if mode not in ("replace", "append"):
        raise ToolError("workspace.commit_mode_invalid",
                        f"mode must be `replace` or `append`, got `{mode}`")
    path = parse_tool_path(raw_path if raw_path is not None
                           else host.profile.workspace.message_body_path)
    require_visible(host, path)
    try:
        file = host.scope.read_text(path)
    except NotFound:
        raise file_not_found(path.text) from None
    except WorkspaceError as exc:
        raise storage_error(exc, path.text) from None
    if path.text == host.profile.workspace.message_body_path and not file.text.strip():
        raise ToolError("workspace.required_artifact_empty", f"{path.text} is empty")
    index, _swipe = host.commit_to_chat(path=path.text, text=file.text, sha256=file.sha256,
                                        mode=str(mode), reason=reason)
    chars, words = text_metrics(file.text)
    return ToolResult(
        content=COMMITTED.format(path=path.text, mode=str(mode).capitalize()),
        structured={"path": path.text, "mode": mode, "messageId": str(index),
                    "messageIndex": index, "chars": chars, "words": words},
        resource_refs=[path.text],
    )


def finish(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.finish``: end the run (a Chat run publishes ``persist/``).

    A foreground Chat run needs a successful explicit commit first (an automatic commit does
    not count): upstream's ``agent.foreground_commit_required``.
    """
    host = run_context(ctx, "workspace_finish")
    reason = args.string("reason")
    if host.commit_required:
        raise ToolError("agent.foreground_commit_required", FINISH_REQUIRES_COMMIT)
    refs = host.finish_run(reason)
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
    host = run_context(ctx, "task_return")
    text = args.string("summary") if args.has("summary") else args.string("result")
    if text is None:
        raise ToolError("tool.invalid_arguments", "summary is required")
    status = args.string("status", default="completed")
    if status not in ("completed", "failed"):
        raise ToolError("tool.invalid_arguments", "status must be `completed` or `failed`")
    path = host.return_result(text)
    extra = {key: args.value(key) for key in TASK_RETURN_ARGUMENTS[2:-1] if args.has(key)}
    structured: dict[str, Any] = {"path": path}
    if args.has("summary") or args.has("status") or extra:
        structured.update(status=status, **extra)
    return ToolResult(content=f"Returned the result to the parent agent ({path}).",
                      structured=structured, resource_refs=[path])


def return_only(ctx: ToolContext) -> tuple[str, str] | None:
    """Availability of ``task.return``: return-mode sub-agents only."""
    refused = ("tool.not_available", "task_return is not available for this task.")
    if not isinstance(ctx, RunControlContext) or ctx.agent_mode != "return":
        return refused
    return None


def only_main_chat(tool: str) -> Callable[[ToolContext], tuple[str, str] | None]:
    """Availability of ``workspace.commit`` (main agent of a Chat run) and
    ``workspace.finish`` (main agent)."""
    def available(ctx: ToolContext) -> tuple[str, str] | None:
        if (not isinstance(ctx, RunControlContext) or ctx.agent_mode != "main"
                or (tool == "commit" and not ctx.is_chat)):
            return ("tool.not_available", f"workspace_{tool} is not available for this task.")
        return None

    return available


_S = string_property

#: The run-control tools, in the order the model is offered them, each with upstream's title,
#: base description, argument schema and annotations.
RUN_CONTROL_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("workspace.commit", commit, True,
             "Commit a workspace text file to the current chat message. With no arguments, "
             "replace the current run message with output/main.md. append adds the file text "
             "to the same message, creating it when this run has not committed yet. You may "
             "keep editing and commit again as needed; after the final commit, call "
             "workspace_finish to close the run. Do not reply in plain text as the final "
             "answer.", ("path", "mode", "reason"), available=only_main_chat("commit"),
             title="Workspace Commit", input_schema=object_schema({
                 "path": _S("Relative visible workspace file path to publish. Defaults to "
                            "output/main.md."),
                 "mode": _S("replace overwrites this run's chat message; append appends to "
                            "the same message. Defaults to replace.",
                            enum=["replace", "append"]),
                 "reason": _S("Short commit reason."),
             }, []), annotations={"control": True, "mutating": True}),
    ToolSpec("workspace.finish", finish, True,
             "Finish the Agent run after required foreground chat commits and workspace "
             "changes are complete.", ("reason",), available=only_main_chat("finish"),
             title="Workspace Finish", input_schema=object_schema({
                 "reason": _S("Short completion reason."),
             }, []), annotations={"control": True}),
    ToolSpec("task.return", task_return, True,
             "Return the result of this delegated task to the Agent that asked for it. This "
             "ends the task; call it last.", TASK_RETURN_ARGUMENTS, available=return_only,
             title="Task Return", input_schema=object_schema({
                 "summary": _S("Concise result for the requesting Agent."),
                 "status": _S("Whether the task was completed. Defaults to completed.",
                              enum=["completed", "failed"]),
                 "confidence": {"type": "number", "description": "Confidence from 0 to 1."},
                 "artifacts": {"type": "array", "description": "Workspace files produced for "
                               "the requesting Agent.", "items": {
                                   "type": "object", "properties": {
                                       "path": {"type": "string"}, "kind": {"type": "string"},
                                       "role": {"type": "string"}}, "required": ["path"]}},
                 "findings": {"type": "array", "items": {"type": "string"},
                              "description": "Findings worth reporting."},
                 "warnings": {"type": "array", "items": {"type": "string"},
                              "description": "Warnings for the requesting Agent."},
                 "suggestedNextActions": {"type": "array", "items": {"type": "string"},
                                          "description": "What the requesting Agent could "
                                          "do next."},
                 "questionsForCaller": {"type": "array", "items": {"type": "string"},
                                        "description": "Open questions for the requesting "
                                        "Agent."},
             }, ["summary"]), annotations={"control": True}),
)

