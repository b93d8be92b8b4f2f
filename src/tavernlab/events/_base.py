"""The envelope every run event shares, and the rules for reading one back.

Every line of a run's ``events.jsonl`` is an envelope ``{seq, id, runId, timestamp, level,
type, payload, eventScope?}`` (docs/events.md). The event types tavernlab writes have
their own model (a subclass of :class:`Event` with a ``Literal`` ``type`` tag and a typed
payload); any other upstream type read from disk parses as the generic :class:`Event` with a
plain ``payload`` dict. Rendering lives elsewhere (:mod:`tavernlab.views`).
"""

from __future__ import annotations

import builtins
import importlib
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import Field

from tavernlab.ondisk import Model

Level = Literal["debug", "info", "warn", "error"]

#: Every event type upstream V5 defines (docs/events.md).
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
    "persistent_state_metadata_update_requested", "persistent_state_metadata_updated",
    "persistent_state_metadata_update_failed", "run_committed", "run_completed",
    "run_partial_success", "run_cancel_requested", "run_cancelled", "drift_recovery_attempted",
    "run_failed",
    # the agent loop's own events, beyond the workspace list
    "agent_model_binding_resolved", "chat_commit_completed", "chat_commit_failed",
    "chat_commit_recorded", "task_return_recorded", "user_guidance_applied",
})


#: The event types after which a run has ended (upstream's terminal statuses).
TERMINAL_EVENT_TYPES: frozenset[str] = frozenset({
    "run_completed", "run_partial_success", "run_cancelled", "run_failed"})


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
    #: Which file a record comes from: ``events.jsonl`` (upstream's log) or the journal.
    source: ClassVar[Literal["events", "journal"]] = "events"

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        default = cls.model_fields["type"].default
        if isinstance(default, str):
            Event.registry[default] = cls

    @classmethod
    def type_name(cls) -> str:
        """The ``type`` tag of a typed event class (``status_changed``...)."""
        name = _TYPE_NAMES.get(cls)
        if name is None:
            default = cls.model_fields["type"].default
            if not isinstance(default, str):
                raise TypeError(f"{cls.__name__} is not a typed event")
            name = _TYPE_NAMES[cls] = default
        return name

    @classmethod
    def default_level(cls) -> Level:
        """The level an event of this class is written with unless the emitter says otherwise."""
        level = _LEVELS.get(cls)
        if level is None:
            level = _LEVELS[cls] = cls.model_fields["level"].default
        return level


#: Each typed class's tag and default level, looked up once (``model_fields`` is a
#: descriptor that costs more than writing an event's line; every event asks for both).
_TYPE_NAMES: dict[type[Event], str] = {}
_LEVELS: dict[type[Event], Level] = {}


#: The modules of the event families defined on first use (how a run ends, the journal's
#: steps, the commits' and the agent loop's): a process that only calls tools never needs
#: their models, so the face imports them when one of their names is first asked for, and
#: :func:`typed_classes` before a record is parsed.
LATER_FAMILIES = ("tavernlab.events._ending", "tavernlab.events._steps",
                  "tavernlab.events._commits", "tavernlab.events._agent")
_every_family = False  # whether LATER_FAMILIES were imported


def typed_classes() -> dict[str, builtins.type[Event]]:
    """Every typed event and journal record class by its ``type`` tag
    (:attr:`Event.registry`), the families defined on first use imported first, so that a
    line of any type tavernlab has a class for parses into it."""
    global _every_family
    if not _every_family:
        for module in LATER_FAMILIES:
            importlib.import_module(module)
        _every_family = True
    return Event.registry


def parse_event(data: dict[str, Any]) -> Event:
    """Parse one envelope into its typed model (or the generic :class:`Event`)."""
    cls: type[Event] = typed_classes().get(str(data.get("type")), Event)
    return cls.model_validate(data)
