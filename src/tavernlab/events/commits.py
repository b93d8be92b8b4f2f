"""Events of committing to the chat and publishing persist states (docs/events.md,
docs/persist.md)."""

from __future__ import annotations

from typing import Any, Literal

from tavernlab.events.base import Event, Level
from tavernlab.events.lifecycle import Reason
from tavernlab.ondisk import Model


class ChatCommitRequest(Model):
    """``chat_commit_requested``: ``{callId, path, isExplicit, sha256, mode, round, reason}``."""

    call_id: str | None
    path: str
    is_explicit: bool
    sha256: str
    mode: Literal["replace", "append"] = "replace"
    round: int
    reason: str | None = None


class CommitOutcome(Model):
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


class MetadataUpdate(PersistStateRef):
    """``persistent_state_metadata_update_requested`` / ``..._updated`` of a model-driven run:
    upstream's ``updateId`` and ``messageId`` (and, when requested, the run, chat and change
    facts)."""

    update_id: str
    message_id: str
    run_id: str | None = None
    workspace_id: str | None = None
    stable_chat_id: str | None = None
    chat_ref: dict[str, Any] | None = None
    generation_type: str | None = None
    profile_id: str | None = None
    base_state_id: str | None = None
    change_count: int | None = None
    changes: list[Any] | None = None


class ChatCommitRequested(Event):
    """The run asked the host to save a file as its output message."""

    type: Literal["chat_commit_requested"] = "chat_commit_requested"
    payload: ChatCommitRequest


class RunCommitted(Event):
    """The host saved the commit."""

    type: Literal["run_committed"] = "run_committed"
    payload: CommitOutcome


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
