"""Sub-agents and handoff: ``agent.delegate``, ``agent.await``, ``agent.handoff`` and the end
of a delegated task through ``task.return``.

The agents a run can call are the Profiles given to the loop (``agents={id: Profile}``);
the agent catalog lists them, sorted by id, with the operations each passes (``delegate``:
callable and allowing sub-agent use; ``handoff``: callable and allowing handoff; both only
when the caller's ``delegation.allowedAgents`` lets it call them).

tavernlab's choice where upstream runs delegated tasks concurrently with their parent: a
delegated task runs on the loop's thread, to its end, when its parent waits for it
(``agent.await``) or, if the parent never does, at the end of the parent's round; each task
still has its own invocation, tool snapshot, rounds, budgets and model session, and its
parent sees its result through ``agent.await`` or the ``Delegated task results are now
available.`` message before its next model request. This keeps a run deterministic (a
scripted model serves its answers in the order the run asks for them).
"""

from __future__ import annotations

from typing import Any, Literal

from tavernlab.agent._frames import AgentTask, Frame, LoopCancelled, LoopPort
from tavernlab.errors import ToolError
from tavernlab.events import (
    AgentAwaitCompleted,
    AgentAwaitStarted,
    AgentDelegateStarted,
    AgentHandoffAccepted,
    AgentHandoffRequested,
    AgentTaskCancelled,
    AgentTaskCompleted,
    AgentTaskFailed,
    AgentTaskQueued,
    AgentTaskRegistered,
    AgentTaskStarted,
    EventScope,
    TaskFacts,
)
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.tools import Arguments, ToolContext, ToolResult, compact_json

Operation = Literal["delegate", "handoff"]
#: How the results of finished delegated tasks are announced to their parent.
RESULTS_NOTICE = ("Delegated task results are now available. Review them before deciding "
                  "your next action.")


def eligible(caller: Profile, target_id: str, target: Profile, op: Operation) -> bool:
    """Whether ``caller`` may use ``target`` for ``op``."""
    allowed = caller.delegation.allowed_agents
    if allowed != "*" and target_id not in allowed:
        return False
    settings = target.delegation
    if not settings.callable:
        return False
    return settings.allow_sub_agent if op == "delegate" else settings.allow_handoff


def catalog_entries(caller: Profile, agents: dict[str, Profile],
                    ops: tuple[Operation, ...]) -> list[tuple[str, list[str], str]]:
    """``(id, operations, description)`` of each target the caller may use."""
    entries = []
    for agent_id in sorted(agents):
        if agent_id == caller.id:
            continue
        target = agents[agent_id]
        passed = [op for op in ops if eligible(caller, agent_id, target, op)]
        if passed:
            description = target.delegation.description_for_agents or target.description
            entries.append((agent_id, [str(op) for op in passed], description))
    return entries


def delegated_task_message(task_id: str, parent_id: str, brief: dict[str, Any]) -> str:
    """The first user message of a delegated task (tavernlab's layout of upstream's
    ``# Delegated Task`` brief)."""
    lines = ["# Delegated Task", "", f"Task ID: {task_id}", f"Requested by: {parent_id}"]
    for key, label in (("title", "Title"), ("objective", "Objective"),
                       ("context", "Context"), ("expectedOutput", "Expected output")):
        if brief.get(key):
            lines.append(f"{label}: {_text(brief[key])}")
    lines += ["", "Return your result with task_return when the task is done."]
    return "\n".join(lines)


def handoff_brief_message(task_id: str, source_id: str, brief: dict[str, Any]) -> str:
    """The user message a handoff target starts from (tavernlab's layout of upstream's
    ``# Handoff Brief``)."""
    lines = ["# Handoff Brief", "", f"Task ID: {task_id}", f"Handed over by: {source_id}"]
    for key, label in (("title", "Title"), ("objective", "Objective"), ("reason", "Reason"),
                       ("contextSummary", "Context summary"),
                       ("workspaceRefs", "Workspace references"),
                       ("mustPreserve", "Must preserve"),
                       ("completionCriteria", "Completion criteria")):
        if brief.get(key):
            lines.append(f"{label}: {_text(brief[key])}")
    return "\n".join(lines)


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return value if isinstance(value, str) else compact_json(value)





class Delegation:
    """The loop's delegation service: what the Agent control tools call."""

    def __init__(self, loop: LoopPort, agents: dict[str, Profile]) -> None:
        self.loop = loop
        self.agents = agents
        self.tasks: list[AgentTask] = []

    # -- catalog -------------------------------------------------------------------------------

    def catalog(self, caller: Profile, ops: tuple[Operation, ...]) -> str:
        """The agent catalog for ``caller`` and ``ops``."""
        from tavernlab.agent._prompt import agent_catalog

        return agent_catalog(catalog_entries(caller, self.agents, ops))

    def _target(self, frame: Frame, agent_id: Any, op: Operation) -> Profile:
        if not isinstance(agent_id, str) or not agent_id.strip():
            raise ToolError("tool.invalid_arguments", "agentId is required")
        agent_id = agent_id.strip()
        target = self.agents.get(agent_id)
        fresh = self.catalog(frame.profile, (op,))
        if target is None or agent_id == frame.profile.id:
            raise ToolError("agent.target_profile_not_found",
                            f"agent `{agent_id}` was not found.\n\n{fresh}")
        if not eligible(frame.profile, agent_id, target, op):
            code = ("agent.delegation_policy_denied" if op == "delegate"
                    else "agent.handoff_policy_denied")
            raise ToolError(code, f"agent `{agent_id}` cannot be used for {op}.\n\n{fresh}")
        return target

    def _frame_of(self, ctx: ToolContext) -> Frame:
        for frame in self.loop.frames:
            if frame.invocation.id == ctx.invocation.id:  # type: ignore[attr-defined]
                return frame
        raise RuntimeError("the calling invocation has no frame")

    def _emit(self, kind: Any, task: AgentTask, scope_id: str, **facts: Any) -> None:
        related = [value for key, value in facts.items() if key.endswith("invocation_id")
                   and isinstance(value, str) and value != scope_id]
        self.loop.core.emit(kind, TaskFacts(
            task_id=task.task_id, agent_id=task.agent_id, **facts),
            scope=EventScope(invocation_id=scope_id, related_invocation_ids=related))

    # -- agent.delegate ------------------------------------------------------------------------

    def delegate(self, ctx: ToolContext, args: Arguments) -> ToolResult:
        """Register a delegated task for another agent; it runs when awaited (or at the end
        of the round)."""
        frame = self._frame_of(ctx)
        target = self._target(frame, args.value("agentId"), "delegate")
        brief = args.value("task")
        if not isinstance(brief, dict) or not isinstance(brief.get("objective"), str) \
                or not brief["objective"].strip():
            raise ToolError("tool.invalid_arguments", "task.objective is required")
        if len(self.loop.frames) >= frame.profile.delegation.max_invocations_per_run:
            raise ToolError("agent.delegation_budget_exhausted", "This run has reached its "
                            f"limit of {frame.profile.delegation.max_invocations_per_run} "
                            "agent invocations.")
        task_id = self.loop.core.ids.new("task")
        child = self.loop.new_frame(target, kind="subagent", parent=frame,
                                    first_message=delegated_task_message(
                                        task_id, frame.invocation.id, brief))
        task = AgentTask(task_id, "delegate", target.id, frame, child, dict(brief))
        self.tasks.append(task)
        parent_id, child_id = frame.invocation.id, child.invocation.id
        self._emit(AgentTaskRegistered, task, parent_id, parent_invocation_id=parent_id,
                   child_invocation_id=child_id, status="queued", continuation="return_to_parent",
                   brief=task.brief)
        self._emit(AgentDelegateStarted, task, parent_id, parent_invocation_id=parent_id,
                   child_invocation_id=child_id, status="queued")
        self._emit(AgentTaskQueued, task, parent_id, parent_invocation_id=parent_id,
                   child_invocation_id=child_id, status="queued")
        return ToolResult(
            content=f"Delegated task {task_id} to {target.id}. Use agent_await to get its "
                    "result.",
            structured={"taskId": task_id, "agentId": target.id, "invocationId": child_id,
                        "status": "queued"})

    # -- agent.await ---------------------------------------------------------------------------

    def await_tasks(self, ctx: ToolContext, args: Arguments) -> ToolResult:
        """Run and report the caller's tasks (``nextCompleted``: the next one;
        ``allCompleted``: all; ``statusOnly``: none, just their status)."""
        frame = self._frame_of(ctx)
        mode = args.string("mode", default="nextCompleted") or "nextCompleted"
        if mode not in ("nextCompleted", "allCompleted", "statusOnly"):
            raise ToolError("tool.invalid_arguments",
                            "mode must be `nextCompleted`, `allCompleted` or `statusOnly`")
        ids = args.value("taskIds")
        mine = [t for t in self.tasks if t.parent is frame and t.kind == "delegate"]
        if ids is not None:
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise ToolError("tool.invalid_arguments", "taskIds must be a list of strings")
            unknown = [i for i in ids if i not in {t.task_id for t in mine}]
            if unknown:
                raise ToolError("agent.task_not_found", f"task `{unknown[0]}` was not found.")
            mine = [t for t in mine if t.task_id in ids]
        parent_id = frame.invocation.id
        self.loop.core.emit(AgentAwaitStarted, TaskFacts(
            invocation_id=parent_id, status=mode), scope=EventScope(invocation_id=parent_id))
        if mode != "statusOnly":
            pending = [t for t in mine if not t.finished]
            for task in pending[:1] if mode == "nextCompleted" else pending:
                self.run_task(task)
        reported = [t for t in mine if t.finished] if mode != "statusOnly" else mine
        for task in reported:
            if task.finished:
                task.reported = True
        self.loop.core.emit(AgentAwaitCompleted, TaskFacts(
            invocation_id=parent_id, status=mode),
            scope=EventScope(invocation_id=parent_id))
        tasks = [t.report() for t in reported]
        lines = [f"- {t['taskId']} ({t['agentId']}): {t['status']}"
                 + (f"\n  {t['summary']}" if t.get("summary") else "") for t in tasks]
        return ToolResult(content="\n".join(lines) if lines else "No delegated tasks.",
                          structured={"tasks": tasks})

    def run_task(self, task: AgentTask) -> None:
        """Run a delegated task's invocation to its end (its failure is the task's, not the
        run's; cancellation stops the run)."""
        loop, parent_id = self.loop, task.parent.invocation.id
        child = task.child
        task.status = "running"
        self._emit(AgentTaskStarted, task, parent_id, parent_invocation_id=parent_id,
                   child_invocation_id=child.invocation.id, status="running")
        loop.start_frame(child)
        try:
            loop.run_frame(child)
        except LoopCancelled:
            task.status = "cancelled"
            loop.end_frame(child, "cancelled")
            self._emit(AgentTaskCancelled, task, parent_id, parent_invocation_id=parent_id,
                       child_invocation_id=child.invocation.id, status="cancelled")
            raise
        except Exception as exc:
            task.status, task.error = "failed", str(exc)
            loop.end_frame(child, "failed")
            self._emit(AgentTaskFailed, task, parent_id, parent_invocation_id=parent_id,
                       child_invocation_id=child.invocation.id, status="failed",
                       error=task.error)
            return
        task.status = "completed" if child.returned_status != "failed" else "failed"
        task.result_ref, task.summary = child.result_ref, child.summary
        loop.end_frame(child, "completed")
        kind = AgentTaskCompleted if task.status == "completed" else AgentTaskFailed
        self._emit(kind, task, parent_id, parent_invocation_id=parent_id,
                   child_invocation_id=child.invocation.id, status=task.status,
                   continuation="return_to_parent", resultRef=task.result_ref)

    def after_round(self, frame: Frame) -> str | None:
        """At the end of a parent's round: run its tasks nobody waited for, and return the
        notice of results it has not seen yet (``None`` when there are none)."""
        for task in [t for t in self.tasks if t.parent is frame and t.kind == "delegate"
                     and not t.finished]:
            self.run_task(task)
        fresh = [t for t in self.tasks if t.parent is frame and t.kind == "delegate"
                 and t.finished and not t.reported]
        if not fresh:
            return None
        for task in fresh:
            task.reported = True
        return RESULTS_NOTICE + "\n\n" + compact_json([t.report() for t in fresh])

    def cancel_unfinished(self, frame: Frame) -> None:
        """Accepting ``workspace.finish`` cancels the invocation's unfinished tasks."""
        for task in self.tasks:
            if task.parent is frame and task.kind == "delegate" and not task.finished:
                task.status = "cancelled"
                self.loop.end_frame(task.child, "cancelled")
                self._emit(AgentTaskCancelled, task, frame.invocation.id,
                           parent_invocation_id=frame.invocation.id,
                           child_invocation_id=task.child.invocation.id, status="cancelled")

    # -- agent.handoff -------------------------------------------------------------------------

    def handoff(self, ctx: ToolContext, args: Arguments) -> ToolResult:
        """Hand the run to another agent: the target invocation and its task are created
        now; it starts once this invocation's turn ends."""
        frame = self._frame_of(ctx)
        target = self._target(frame, args.value("agentId"), "handoff")
        brief = args.value("handoff")
        if not isinstance(brief, dict) or not isinstance(brief.get("objective"), str) \
                or not brief["objective"].strip():
            raise ToolError("tool.invalid_arguments", "handoff.objective is required")
        policy = args.string("pendingTaskPolicy")
        if policy is not None and policy != "denyIfPending":
            raise ToolError("tool.invalid_arguments", "pendingTaskPolicy must be "
                            "`denyIfPending`")
        if policy == "denyIfPending" and any(t.parent is frame and not t.finished
                                             for t in self.tasks):
            raise ToolError("agent.handoff_pending_tasks", "This agent still has unfinished "
                            "delegated tasks.")
        depth = sum(1 for t in self.tasks if t.kind == "handoff") + 1
        if depth > frame.profile.delegation.max_handoff_depth:
            raise ToolError("agent.handoff_depth_exhausted", "This run has reached its "
                            f"handoff depth of {frame.profile.delegation.max_handoff_depth}.")
        source_id = frame.invocation.id
        self.loop.core.emit(AgentHandoffRequested, TaskFacts(
            source_invocation_id=source_id, agent_id=target.id, status="requested"),
            scope=EventScope(invocation_id=source_id))
        task_id = self.loop.core.ids.new("task")
        child = self.loop.new_frame(target, kind="handoff", parent=frame,
                                    first_message=handoff_brief_message(
                                        task_id, source_id, brief))
        task = AgentTask(task_id, "handoff", target.id, frame, child, dict(brief))
        self.tasks.append(task)
        child.incoming = task
        new_id = child.invocation.id
        self._emit(AgentTaskRegistered, task, source_id, parent_invocation_id=source_id,
                   child_invocation_id=new_id, status="queued",
                   continuation="transfer_control", brief=task.brief)
        self._emit(AgentHandoffAccepted, task, source_id, source_invocation_id=source_id,
                   new_invocation_id=new_id, status="accepted")
        frame.exit, frame.transfer = "transferred", task
        return ToolResult(
            content=f"Handed the run to {target.id} (task {task_id}). Your part is done; do "
                    "not call more tools.",
            structured={"taskId": task_id, "agentId": target.id, "invocationId": new_id,
                        "status": "accepted"})

    def handoff_finished(self, frame: Frame, status: str, error: str | None = None) -> None:
        """Mark the handoff task that started ``frame`` ``completed``, ``failed`` or
        ``cancelled``."""
        task = frame.incoming
        if task is None or task.finished:
            return
        task.status, task.error = status, error
        kind = {"completed": AgentTaskCompleted, "failed": AgentTaskFailed,
                "cancelled": AgentTaskCancelled}[status]
        facts: dict[str, Any] = {"parent_invocation_id": task.parent.invocation.id,
                                 "child_invocation_id": frame.invocation.id, "status": status,
                                 "continuation": "transfer_control"}
        if error is not None:
            facts["error"] = error
        self._emit(kind, task, task.parent.invocation.id, **facts)
