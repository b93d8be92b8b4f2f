"""The Agent control tools: ``agent.delegate``, ``agent.await`` and ``agent.handoff``.

They are declared here like every tool (id, description, schema, annotations, argument
allow-list), and they act only inside the agent loop: their handlers hand the call to the
loop's delegation service (the calling context's ``agent_control``). Called by hand, outside a
loop, they are ``tool.not_available`` (tavernlab's choice, as for ``workspace.commit`` in a
Session run). ``task.return`` is run control (:mod:`tavernlab.host._run_control`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from tavernlab.errors import ToolError
from tavernlab.host._services import LabServices
from tavernlab.workspace.tools import (
    Arguments,
    ToolContext,
    ToolResult,
    ToolSpec,
    integer_property,
    object_schema,
    string_property,
)


class AgentControl(Protocol):
    """What the agent loop offers the control tools."""

    def delegate(self, ctx: ToolContext, args: Arguments) -> ToolResult:
        """Register a delegated task for another agent."""
        ...

    def await_tasks(self, ctx: ToolContext, args: Arguments) -> ToolResult:
        """Wait for delegated tasks and report them."""
        ...

    def handoff(self, ctx: ToolContext, args: Arguments) -> ToolResult:
        """Hand the run to another agent."""
        ...


def _control(ctx: ToolContext, alias: str) -> AgentControl:
    control: AgentControl | None = getattr(ctx, "agent_control", None)
    if control is None:
        raise ToolError("tool.not_available", f"{alias} is not available for this task.")
    return control


def delegate(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``agent.delegate``."""
    return _control(ctx, "agent_delegate").delegate(ctx, args)


def await_tasks(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``agent.await``."""
    return _control(ctx, "agent_await").await_tasks(ctx, args)


def handoff(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``agent.handoff``."""
    return _control(ctx, "agent_handoff").handoff(ctx, args)


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


_S = string_property
AGENT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("agent.delegate", delegate, False,
             "Ask another Agent to handle a self-contained task. The task runs as a delegated "
             "sub-agent that returns its result through task_return; use agent_await to get "
             "its result or status.", ("agentId", "task"), title="Agent Delegate",
             input_schema=object_schema({
                 "agentId": _S("ID of an agent listed for delegate in Available agents."),
                 "task": {"type": "object", "description": "The task brief.", "properties": {
                     "objective": _S("What the delegated Agent must achieve."),
                     "title": _S("Short task title."),
                     "context": _S("Context the delegated Agent needs."),
                     "expectedOutput": _S("What the result should contain.")},
                     "required": ["objective"]},
             }, ["agentId", "task"]), annotations={"control": True}),
    ToolSpec("agent.await", await_tasks, False,
             "Wait for delegated tasks and report their status and results.",
             ("taskIds", "mode", "timeoutMs"), title="Agent Await",
             input_schema=object_schema({
                 "taskIds": _strings("Tasks to wait for. Omit to wait for all of yours."),
                 "mode": _S("nextCompleted waits for the next finished task, allCompleted for "
                            "all, statusOnly only reports. Defaults to nextCompleted.",
                            enum=["nextCompleted", "allCompleted", "statusOnly"]),
                 "timeoutMs": integer_property("How long to wait. Defaults to 120000; "
                                               "maximum is 300000."),
             }, []), annotations={"control": True}),
    ToolSpec("agent.handoff", handoff, False,
             "Hand the run to another Agent when your part is done. This must be the last "
             "tool call of the turn.", ("agentId", "handoff", "pendingTaskPolicy"),
             title="Agent Handoff", input_schema=object_schema({
                 "agentId": _S("ID of an agent listed for handoff in Available agents."),
                 "handoff": {"type": "object", "description": "The handoff brief.",
                             "properties": {
                                 "objective": _S("What the next Agent must achieve."),
                                 "title": _S("Short title."),
                                 "reason": _S("Why the run is handed over."),
                                 "contextSummary": _S("What the next Agent needs to know."),
                                 "workspaceRefs": _strings("Relevant workspace paths."),
                                 "mustPreserve": _strings("Decisions and text to keep."),
                                 "completionCriteria": _S("What done looks like.")},
                             "required": ["objective"]},
                 "pendingTaskPolicy": _S("denyIfPending refuses the handoff while delegated "
                                         "tasks are unfinished.", enum=["denyIfPending"]),
             }, ["agentId", "handoff"]), annotations={"control": True}),
)


def agent_tools(services: LabServices) -> Iterable[ToolSpec]:
    """``agent.delegate``, ``agent.await`` and ``agent.handoff``."""
    return AGENT_TOOLS
