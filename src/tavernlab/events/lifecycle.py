"""Events of a run's life: creation, status, the workspace, invocations, the end.

The payload shapes are upstream's where known (docs/events.md); where upstream's V5
shape is unknown tavernlab chooses the one documented on the payload.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from tavernlab.events.base import Event, Level
from tavernlab.ondisk import Model


class StatusChange(Model):
    """``status_changed``: ``{from, to}``."""

    from_status: str | None = Field(default=None, alias="from")
    to_status: str = Field(alias="to")


class RunCreation(Model):
    """``run_created``: ``{target, presentation, generationType}`` (target as in ``run.json``)."""

    target: dict[str, Any]
    presentation: str
    generation_type: str


class RootList(Model):
    """``workspace_initialized``: the visible roots (``{roots}``)."""

    roots: list[str]


class ProjectionSummary(Model):
    """``persistent_projection_initialized``: ``{baseStateId, files, directories}``."""

    base_state_id: str | None
    files: int
    directories: int


class SkillSet(Model):
    """``skill_scopes_resolved``: the bound skills as stored in ``input/skill_bindings.json``."""

    skills: list[dict[str, Any]]


class ContextSummary(Model):
    """``context_assembled``: whether the run has frozen host facts (``{hasHostContext}``)."""

    has_host_context: bool


class InvocationRef(Model):
    """``agent_invocation_*``: ``{invocationId, agentId, mode}``."""

    invocation_id: str
    agent_id: str
    mode: Literal["main", "return"] = "main"


class TaskReturn(Model):
    """``task_return_completed``: a sub-agent's result file (``{invocationId, path}``)."""

    invocation_id: str
    path: str


class Reason(Model):
    """Events whose payload is an optional reason or error (run end, cancel, failure)."""

    reason: str | None = None
    error: str | None = None


class RunCreated(Event):
    """The run was created."""

    type: Literal["run_created"] = "run_created"
    payload: RunCreation


class StatusChanged(Event):
    """The run's status moved."""

    type: Literal["status_changed"] = "status_changed"
    payload: StatusChange


class WorkspaceInitialized(Event):
    """The run's roots were created."""

    type: Literal["workspace_initialized"] = "workspace_initialized"
    payload: RootList


class PersistentProjectionInitialized(Event):
    """``persist/`` was filled from the base state."""

    type: Literal["persistent_projection_initialized"] = "persistent_projection_initialized"
    payload: ProjectionSummary


class SkillScopesResolved(Event):
    """The main agent's effective skill set was bound."""

    type: Literal["skill_scopes_resolved"] = "skill_scopes_resolved"
    payload: SkillSet


class ContextAssembled(Event):
    """The run's context (system prompt additions, frozen host facts) was assembled."""

    type: Literal["context_assembled"] = "context_assembled"
    payload: ContextSummary


class AgentInvocationCreated(Event):
    """An Invocation (main agent or sub-agent) was created."""

    type: Literal["agent_invocation_created"] = "agent_invocation_created"
    payload: InvocationRef


class AgentInvocationCompleted(Event):
    """An Invocation ended."""

    type: Literal["agent_invocation_completed"] = "agent_invocation_completed"
    payload: InvocationRef


class TaskReturnCompleted(Event):
    """A return-mode sub-agent wrote its result file."""

    type: Literal["task_return_completed"] = "task_return_completed"
    payload: TaskReturn


class RunCompleted(Event):
    """The run finished."""

    type: Literal["run_completed"] = "run_completed"
    payload: Reason


class RunCancelRequested(Event):
    """Cancellation was requested for the run's in-flight work."""

    type: Literal["run_cancel_requested"] = "run_cancel_requested"
    payload: Reason


class RunCancelled(Event):
    """The run ended as cancelled."""

    type: Literal["run_cancelled"] = "run_cancelled"
    payload: Reason


class RunFailed(Event):
    """The run ended as failed (an internal fault)."""

    type: Literal["run_failed"] = "run_failed"
    level: Level = "error"
    payload: Reason
