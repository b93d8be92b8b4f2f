"""Run events: one pydantic model per event type, tagged by ``type`` (spec/workspace.md 8.3).

Every line of a run's ``events.jsonl`` is an envelope ``{seq, id, runId, timestamp, level,
type, payload, eventScope?}``. The event types tavernlab emits have their own model with a
``Literal`` tag and a typed payload; any other upstream type read from disk parses as the
generic :class:`Event` with a plain ``payload`` dict. Rendering lives elsewhere
(:mod:`tavernlab.views`); these are data only.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

Level = Literal["debug", "info", "warn", "error"]

#: Every event type upstream V5 defines (section 8.3).
EVENT_TYPES: frozenset[str] = frozenset({
    "run_created", "generation_intent_recorded", "status_changed", "workspace_initialized",
    "persistent_projection_initialized", "context_assembled", "skill_scopes_resolved",
    "agent_invocation_created", "agent_invocation_started", "agent_invocation_completed",
    "agent_invocation_failed", "agent_invocation_cancelled", "agent_invocation_transferred",
    "agent_task_registered", "agent_task_queued", "agent_task_started", "agent_task_completed",
    "agent_task_failed", "agent_task_cancelled", "agent_delegate_started",
    "agent_handoff_requested", "agent_handoff_accepted", "agent_await_started",
    "agent_await_completed", "task_return_completed", "model_request_created",
    "model_call_attempt_started", "model_call_attempt_failed", "model_call_retry_scheduled",
    "model_response_stored", "provider_state_updated", "model_completed", "direct_output_captured",
    "tool_call_requested", "tool_call_started", "tool_result_stored",
    "tool_result_readable_view_stored", "tool_call_completed", "tool_call_failed",
    "workspace_file_written", "workspace_patch_applied", "checkpoint_created",
    "agent_loop_finished", "artifact_assembled", "commit_started", "commit_draft_created",
    "chat_commit_requested", "persistent_changes_committed", "persistent_changes_commit_failed",
    "persistent_state_metadata_update_requested", "persistent_state_metadata_update_updated",
    "persistent_state_metadata_update_failed", "run_committed", "run_completed",
    "run_partial_success", "run_cancel_requested", "run_cancelled", "drift_recovery_attempted",
    "run_failed",
})


class Model(BaseModel):
    """Base for on-disk JSON: camelCase aliases, populated by either name."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True,
                              extra="allow", ser_json_timedelta="float")


class EventScope(Model):
    """Which invocations an event concerns."""

    invocation_id: str
    related_invocation_ids: list[str] = Field(default_factory=list)


class Event(Model):
    """The envelope of one line of ``events.jsonl``; ``payload`` untyped for unknown types."""

    seq: int
    id: str
    run_id: str
    timestamp: datetime
    level: Level = "info"
    type: str
    payload: Any = Field(default_factory=dict)
    event_scope: EventScope | None = None

    registry: ClassVar[dict[str, builtins.type[Event]]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        default = cls.model_fields["type"].default
        if isinstance(default, str):
            Event.registry[default] = cls


def parse_event(data: dict[str, Any]) -> Event:
    """Parse one envelope into its typed model (or the generic :class:`Event`)."""
    cls: type[Event] = Event.registry.get(str(data.get("type")), Event)
    return cls.model_validate(data)


# --- payloads -------------------------------------------------------------------------------


class StatusChange(Model):
    """``status_changed``."""

    from_status: str | None = Field(default=None, alias="from")
    to_status: str = Field(alias="to")


class ToolCallRef(Model):
    """``tool_call_requested`` / ``tool_call_started``."""

    round: int
    invocation_id: str
    call_id: str
    tool_id: str
    name: str
    arguments_path: str | None = None


class ToolResultStored(Model):
    """``tool_result_stored``: ``{invocationId, round, callId, toolId, path}``."""

    invocation_id: str
    round: int
    call_id: str
    tool_id: str
    path: str


class ToolResultViewStored(ToolResultStored):
    """``tool_result_readable_view_stored``: adds the ``auditPath`` of the full JSON."""

    audit_path: str


class ToolCallOutcome(Model):
    """``tool_call_completed`` / ``tool_call_failed``."""

    round: int
    invocation_id: str
    call_id: str
    tool_id: str
    snapshot_id: str | None = None
    name: str
    is_error: bool
    error_code: str | None = None
    message: str | None = None
    elapsed_ms: int
    resource_refs: list[str] = Field(default_factory=list)


class FileWritten(Model):
    """``workspace_file_written`` / ``workspace_patch_applied``."""

    call_id: str
    path: str
    sha256: str
    mode: str | None = None
    replacements: int | None = None


class ChatCommitRequest(Model):
    """``chat_commit_requested``: ``{callId, path, isExplicit, sha256, ...}``."""

    call_id: str | None
    path: str
    is_explicit: bool
    sha256: str
    mode: Literal["replace", "append"] = "replace"
    round: int
    reason: str | None = None


class RunCommitted(Model):
    """``run_committed``: the host saved a commit as the run's output message."""

    message_index: int
    swipe_id: int
    is_explicit: bool
    mode: Literal["replace", "append"]


class PersistCommitted(Model):
    """``persistent_changes_committed``."""

    state_id: str
    base_state_id: str | None = None
    reused: bool
    changes: int


class PersistStateRef(Model):
    """``persistent_state_metadata_update_requested`` / ``..._updated``: ``{stateId, ...}``."""

    state_id: str
    message_index: int | None = None
    swipe_id: int | None = None


class InvocationRef(Model):
    """``agent_invocation_*``."""

    invocation_id: str
    agent_id: str
    mode: Literal["main", "return"] = "main"


class Reason(Model):
    """Events whose payload is an optional reason (run end, cancel, failure)."""

    reason: str | None = None
    error: str | None = None


class Empty(Model):
    """Events without payload fields."""


# --- typed events ------------------------------------------------------------------------------


class RunCreated(Event):
    """The run was created (payload: ``{target, presentation, generationType}``)."""

    type: Literal["run_created"] = "run_created"
    payload: dict[str, Any]


class StatusChanged(Event):
    """The run's status moved."""

    type: Literal["status_changed"] = "status_changed"
    payload: StatusChange


class WorkspaceInitialized(Event):
    """The run's roots were created (payload: ``{roots}``)."""

    type: Literal["workspace_initialized"] = "workspace_initialized"
    payload: dict[str, Any]


class PersistentProjectionInitialized(Event):
    """``persist/`` was filled from the base state."""

    type: Literal["persistent_projection_initialized"] = "persistent_projection_initialized"
    payload: dict[str, Any]


class SkillScopesResolved(Event):
    """The Invocation's effective skill set was bound (payload: ``{skills}``)."""

    type: Literal["skill_scopes_resolved"] = "skill_scopes_resolved"
    payload: dict[str, Any]


class AgentInvocationCreated(Event):
    """An Invocation (main agent or sub-agent) was created."""

    type: Literal["agent_invocation_created"] = "agent_invocation_created"
    payload: InvocationRef


class AgentInvocationCompleted(Event):
    """An Invocation ended."""

    type: Literal["agent_invocation_completed"] = "agent_invocation_completed"
    payload: InvocationRef


class TaskReturnCompleted(Event):
    """A return-mode sub-agent wrote its result file (payload: ``{invocationId, path}``)."""

    type: Literal["task_return_completed"] = "task_return_completed"
    payload: dict[str, Any]


class ToolCallRequested(Event):
    """The model asked for a tool call."""

    type: Literal["tool_call_requested"] = "tool_call_requested"
    payload: ToolCallRef


class ToolCallStarted(Event):
    """A tool call started executing."""

    type: Literal["tool_call_started"] = "tool_call_started"
    payload: ToolCallRef


class ToolResultStoredEvent(Event):
    """A tool result file was written under ``tool-results/``."""

    type: Literal["tool_result_stored"] = "tool_result_stored"
    payload: ToolResultStored


class ToolResultReadableViewStored(Event):
    """A long external result also got a readable ``.txt`` view."""

    type: Literal["tool_result_readable_view_stored"] = "tool_result_readable_view_stored"
    payload: ToolResultViewStored


class ToolCallCompleted(Event):
    """A tool call succeeded."""

    type: Literal["tool_call_completed"] = "tool_call_completed"
    payload: ToolCallOutcome


class ToolCallFailed(Event):
    """A tool call returned an error result (level ``warn``)."""

    type: Literal["tool_call_failed"] = "tool_call_failed"
    level: Level = "warn"
    payload: ToolCallOutcome


class WorkspaceFileWritten(Event):
    """``workspace.write_file`` wrote a file."""

    type: Literal["workspace_file_written"] = "workspace_file_written"
    payload: FileWritten


class WorkspacePatchApplied(Event):
    """``workspace.apply_patch`` changed a file."""

    type: Literal["workspace_patch_applied"] = "workspace_patch_applied"
    payload: FileWritten


class ChatCommitRequested(Event):
    """The run asked the host to save a file as its output message."""

    type: Literal["chat_commit_requested"] = "chat_commit_requested"
    payload: ChatCommitRequest


class RunCommittedEvent(Event):
    """The host saved the commit."""

    type: Literal["run_committed"] = "run_committed"
    payload: RunCommitted


class PersistentChangesCommitted(Event):
    """``persist/`` was published as a persist state."""

    type: Literal["persistent_changes_committed"] = "persistent_changes_committed"
    payload: PersistCommitted


class PersistentChangesCommitFailed(Event):
    """Publishing ``persist/`` failed."""

    type: Literal["persistent_changes_commit_failed"] = "persistent_changes_commit_failed"
    level: Level = "error"
    payload: Reason


class PersistentStateMetadataUpdateRequested(Event):
    """The host is asked to link the state to the committed message."""

    type: Literal["persistent_state_metadata_update_requested"] = (
        "persistent_state_metadata_update_requested")
    payload: PersistStateRef


class PersistentStateMetadataUpdateUpdated(Event):
    """The host linked the state to the committed message."""

    type: Literal["persistent_state_metadata_update_updated"] = (
        "persistent_state_metadata_update_updated")
    payload: PersistStateRef


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
