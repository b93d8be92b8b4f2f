"""Events of the agent loop: model calls, drift recovery, the host commit handshake, the
invocations' lives and how a model-driven run ends.

The payloads are upstream's (the loop's event reference). Where a tool-call or context
payload model already existed, the loop's payload is a subclass that adds upstream's fields,
so readers of the older shape keep working (the tool-call ones, which the host writes, are in
:mod:`tavernlab.events._calls`); the run's lifecycle payloads
(:mod:`tavernlab.events._lifecycle`) are the same for a hand-played and a model-driven run.
``model_completed`` also carries what a timeline needs for the call as a bar: its
``attempts``, ``elapsedMs`` and the provider's token ``usage``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from tavernlab.events._base import Event, Level
from tavernlab.events._commits import ChatCommitRequest
from tavernlab.events._ending import RunFailure
from tavernlab.events._lifecycle import ContextSummary, InvocationRef, InvocationStart
from tavernlab.ondisk import Model

# --- payloads ----------------------------------------------------------------------------------


class ModelBindingResolved(Model):
    """``agent_model_binding_resolved``: the model the loop calls (the binding as records
    show it: provider, model, base URL, the name of the credential's variable)."""

    mode: str
    chat_completion_source: str
    custom_api_format: str | None = None
    model_id: str
    binding: dict[str, Any] = Field(default_factory=dict)


class LoopContext(ContextSummary):
    """``context_assembled`` of a loop invocation: the request summary, the tool snapshot,
    the tool turn, the round budget and the retry policy."""

    has_host_context: bool = False
    request: dict[str, Any]
    invocation_id: str
    tool_snapshot: dict[str, Any]
    tool_snapshot_path: str
    tool_turn: dict[str, Any]
    tool_diagnostics: list[dict[str, Any]] = Field(default_factory=list)
    max_rounds: int
    context_policy: dict[str, Any]
    model_retry: dict[str, Any]


class ModelRequestSummary(Model):
    """``model_request_created``: the round's request, summarised."""

    round: int
    invocation_id: str
    tool_turn: dict[str, Any]
    request: dict[str, Any]


class ModelAttempt(Model):
    """``model_call_attempt_started``."""

    round: int
    invocation_id: str
    attempt: int
    max_retries: int


class ModelAttemptFailure(ModelAttempt):
    """``model_call_attempt_failed``."""

    retryable: bool
    will_retry: bool
    message: str


class ModelRetryScheduled(Model):
    """``model_call_retry_scheduled``."""

    round: int
    invocation_id: str
    next_attempt: int
    interval_ms: int


class StoredModelResponse(Model):
    """``model_response_stored``."""

    round: int
    invocation_id: str
    path: str
    response_id: str | None = None
    model: str | None = None


class ProviderStateSummary(Model):
    """``provider_state_updated``."""

    round: int
    invocation_id: str
    provider_state: dict[str, Any]


class ModelTurn(Model):
    """``model_completed``: what the response held (text, reasoning, tool calls), where it is
    stored, and for the timeline the call's ``attempts``, ``elapsedMs`` (all attempts and the
    pauses between them) and the provider's token ``usage``."""

    has_assistant_text: bool
    assistant_text_chars: int
    assistant_text_words: int
    has_reasoning: bool
    reasoning_chars: int
    reasoning_words: int
    narration: dict[str, Any] | None = None
    round: int
    invocation_id: str
    model_response_path: str
    tool_call_count: int
    text_chars: int
    text_words: int
    attempts: int
    elapsed_ms: int
    usage: dict[str, Any] = Field(default_factory=dict)


class DirectOutput(Model):
    """``direct_output_captured``."""

    round: int
    path: str
    chars: int
    words: int
    sha256: str
    model_response_path: str


class DriftRecovery(Model):
    """``drift_recovery_attempted``."""

    attempt: int
    max_attempts: int
    max_rounds: int
    limit_reason: str = "max_rounds"
    round: int
    invocation_id: str
    committed_count: int
    reason_code: str = "model.tool_call_required"


class LoopFinish(Model):
    """``agent_loop_finished``."""

    commit_count: int
    round: int
    invocation_id: str


class HostCommitRequest(ChatCommitRequest):
    """``chat_commit_requested`` of the host handshake: upstream's fields around the commit."""

    commit_id: str
    invocation_id: str
    run_id: str
    workspace_id: str
    stable_chat_id: str
    chat_ref: dict[str, Any]
    generation_type: str
    profile_id: str | None = None
    persist_base_state_id: str | None = None
    chars: int
    words: int


class HostCommitCompleted(Model):
    """``chat_commit_completed``."""

    commit_id: str
    invocation_id: str
    call_id: str
    path: str
    mode: str
    is_explicit: bool
    message_id: str
    message_index: int | None = None


class HostCommitFailed(Model):
    """``chat_commit_failed``."""

    commit_id: str
    invocation_id: str
    call_id: str
    path: str
    mode: str
    message: str


class HostCommitRecorded(Model):
    """``chat_commit_recorded``."""

    invocation_id: str
    commit_count: int
    path: str
    mode: str
    message_id: str


# --- events ------------------------------------------------------------------------------------


class AgentModelBindingResolved(Event):
    """The loop resolved which model it calls."""

    type: Literal["agent_model_binding_resolved"] = "agent_model_binding_resolved"
    payload: ModelBindingResolved


class AgentInvocationStarted(Event):
    """An invocation started."""

    type: Literal["agent_invocation_started"] = "agent_invocation_started"
    payload: InvocationStart


class AgentInvocationFailed(Event):
    """An invocation ended with an error."""

    type: Literal["agent_invocation_failed"] = "agent_invocation_failed"
    payload: InvocationRef


class AgentInvocationCancelled(Event):
    """An invocation was cancelled."""

    type: Literal["agent_invocation_cancelled"] = "agent_invocation_cancelled"
    payload: InvocationRef


class AgentInvocationTransferred(Event):
    """An invocation handed the run to another agent."""

    type: Literal["agent_invocation_transferred"] = "agent_invocation_transferred"
    payload: InvocationRef


class ModelRequestCreated(Event):
    """The loop built a round's model request."""

    type: Literal["model_request_created"] = "model_request_created"
    payload: ModelRequestSummary


class ModelCallAttemptStarted(Event):
    """One attempt of a model call began."""

    type: Literal["model_call_attempt_started"] = "model_call_attempt_started"
    level: Level = "debug"
    payload: ModelAttempt


class ModelCallAttemptFailed(Event):
    """One attempt of a model call failed (warn when it is retried, else error)."""

    type: Literal["model_call_attempt_failed"] = "model_call_attempt_failed"
    level: Level = "warn"
    payload: ModelAttemptFailure


class ModelCallRetryScheduled(Event):
    """A failed model call is tried again after the policy's interval."""

    type: Literal["model_call_retry_scheduled"] = "model_call_retry_scheduled"
    level: Level = "warn"
    payload: ModelRetryScheduled


class ModelResponseStored(Event):
    """A model response was written under ``model-responses/``."""

    type: Literal["model_response_stored"] = "model_response_stored"
    level: Level = "debug"
    payload: StoredModelResponse


class ProviderStateUpdated(Event):
    """The provider state after a call."""

    type: Literal["provider_state_updated"] = "provider_state_updated"
    level: Level = "debug"
    payload: ProviderStateSummary


class ModelCompleted(Event):
    """A model call returned its complete response."""

    type: Literal["model_completed"] = "model_completed"
    payload: ModelTurn


class DirectOutputCaptured(Event):
    """A response without tool calls had text, saved as the direct output."""

    type: Literal["direct_output_captured"] = "direct_output_captured"
    payload: DirectOutput


class DriftRecoveryAttempted(Event):
    """The model answered in plain text; the loop nudged it back to the tools."""

    type: Literal["drift_recovery_attempted"] = "drift_recovery_attempted"
    level: Level = "warn"
    payload: DriftRecovery


class AgentLoopFinished(Event):
    """An invocation's loop ended with a completion tool."""

    type: Literal["agent_loop_finished"] = "agent_loop_finished"
    payload: LoopFinish


class ChatCommitCompleted(Event):
    """The host saved a commit."""

    type: Literal["chat_commit_completed"] = "chat_commit_completed"
    payload: HostCommitCompleted


class ChatCommitFailed(Event):
    """The host rejected a commit."""

    type: Literal["chat_commit_failed"] = "chat_commit_failed"
    level: Level = "warn"
    payload: HostCommitFailed


class ChatCommitRecorded(Event):
    """A confirmed commit joined the run's commit ledger."""

    type: Literal["chat_commit_recorded"] = "chat_commit_recorded"
    payload: HostCommitRecorded


class RunPartialSuccess(Event):
    """The run failed after at least one confirmed chat commit."""

    type: Literal["run_partial_success"] = "run_partial_success"
    level: Level = "warn"
    payload: RunFailure


# --- delegation ----------------------------------------------------------------------------------


class TaskFacts(Model):
    """The events of delegated tasks and handoffs: the task, who asked for it and who works
    on it, and what the event adds (its ``status``, ``continuation``, the brief …;
    upstream's payload fields beyond these are not known, tavernlab's choice)."""

    task_id: str | None = None
    parent_invocation_id: str | None = None
    child_invocation_id: str | None = None
    source_invocation_id: str | None = None
    new_invocation_id: str | None = None
    invocation_id: str | None = None
    agent_id: str | None = None
    status: str | None = None


class TaskReturnFacts(Model):
    """``task_return_recorded``."""

    invocation_id: str
    status: str
    result_ref: str
    summary_chars: int
    summary_words: int


class AgentTaskRegistered(Event):
    """A delegated task was registered."""

    type: Literal["agent_task_registered"] = "agent_task_registered"
    payload: TaskFacts


class AgentTaskQueued(Event):
    """A delegated task waits for its turn."""

    type: Literal["agent_task_queued"] = "agent_task_queued"
    payload: TaskFacts


class AgentTaskStarted(Event):
    """A delegated task started."""

    type: Literal["agent_task_started"] = "agent_task_started"
    payload: TaskFacts


class AgentTaskCompleted(Event):
    """A delegated task completed."""

    type: Literal["agent_task_completed"] = "agent_task_completed"
    payload: TaskFacts


class AgentTaskFailed(Event):
    """A delegated task failed."""

    type: Literal["agent_task_failed"] = "agent_task_failed"
    payload: TaskFacts


class AgentTaskCancelled(Event):
    """A delegated task was cancelled."""

    type: Literal["agent_task_cancelled"] = "agent_task_cancelled"
    payload: TaskFacts


class AgentDelegateStarted(Event):
    """An agent delegated a task."""

    type: Literal["agent_delegate_started"] = "agent_delegate_started"
    payload: TaskFacts


class AgentHandoffRequested(Event):
    """An agent asked for a handoff."""

    type: Literal["agent_handoff_requested"] = "agent_handoff_requested"
    payload: TaskFacts


class AgentHandoffAccepted(Event):
    """A handoff was accepted."""

    type: Literal["agent_handoff_accepted"] = "agent_handoff_accepted"
    payload: TaskFacts


class AgentAwaitStarted(Event):
    """An agent waits for its tasks."""

    type: Literal["agent_await_started"] = "agent_await_started"
    payload: TaskFacts


class AgentAwaitCompleted(Event):
    """An agent's wait ended."""

    type: Literal["agent_await_completed"] = "agent_await_completed"
    payload: TaskFacts


class TaskReturnRecorded(Event):
    """A delegated task's result was recorded for its parent."""

    type: Literal["task_return_recorded"] = "task_return_recorded"
    payload: TaskReturnFacts
