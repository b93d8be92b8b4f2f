"""Events of a run's life: creation, status, the workspace, invocations (how it ends:
:mod:`tavernlab.events._ending`).

The payload shapes are upstream's where known (docs/events.md); where upstream's V5
shape is unknown tavernlab chooses the one documented on the payload.
"""

from __future__ import annotations

from typing import Any, Literal

from tavernlab.events._base import Event
from tavernlab.ondisk import Model


class StatusChange(Model):
    """``status_changed``: the status the run moved to (``{status}``); the status it left is
    the one the previous ``status_changed`` named (``created`` before the first)."""

    status: str


class RunCreation(Model):
    """``run_created``: upstream's ``{workspaceId, stableChatId, persistBaseStateId,
    presentation}`` (the chat facts ``null`` for a Session target), and tavernlab's
    ``target`` (as in ``run.json``) and ``generationType``."""

    workspace_id: str | None
    stable_chat_id: str | None
    persist_base_state_id: str | None
    presentation: str
    target: dict[str, Any]
    generation_type: str


class WorkspaceTarget(Model):
    """``workspace_initialized``: ``{workspaceId, target}`` (the target as in ``run.json``;
    the visible roots are the ``manifest.json`` roots)."""

    workspace_id: str | None
    target: dict[str, Any]


class RootList(Model):
    """``persistent_projection_initialized``: the roots projected from the persist state
    (``{roots: ["persist"]}``; the base state is ``run_created``'s ``persistBaseStateId``,
    the projected files and directories are ``input/persist_snapshot.json``'s)."""

    roots: list[str]


class SkillSet(Model):
    """``skill_scopes_resolved``: the bound skills as stored in ``input/skill_bindings.json``."""

    skills: list[dict[str, Any]]


class ContextSummary(Model):
    """``context_assembled``: whether the run has frozen host facts (``{hasHostContext}``)."""

    has_host_context: bool


class InvocationRef(Model):
    """``agent_invocation_*``: ``{invocationId, parentInvocationId, profileId, kind,
    status}``; ``kind`` is ``root`` (the main agent), ``subagent`` (a return-mode
    sub-agent) or ``handoff``."""

    invocation_id: str
    parent_invocation_id: str | None
    profile_id: str
    kind: str
    status: str


class InvocationStart(InvocationRef):
    """``agent_invocation_created`` / ``agent_invocation_started``: adds ``exitPolicy``
    (``run_finish_allowed`` for the main agent, ``task_return_required`` for a
    return-mode sub-agent)."""

    exit_policy: str


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
    payload: WorkspaceTarget


class PersistentProjectionInitialized(Event):
    """``persist/`` was filled from the base state."""

    type: Literal["persistent_projection_initialized"] = "persistent_projection_initialized"
    payload: RootList


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
    payload: InvocationStart
