"""Events of committing to the chat and publishing persist states (docs/events.md,
docs/persist.md)."""

from __future__ import annotations

from typing import Any, Literal

from tavernlab.events._base import Event, Level
from tavernlab.events._ending import MessageText
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
    """``persistent_changes_committed``: upstream's ``{stateId, baseStateId, changeCount,
    changes}`` (the state's change list as its manifest has it) and tavernlab's ``reused``
    (the run republished a state it had published before, unchanged: same id)."""

    state_id: str
    base_state_id: str | None = None
    change_count: int
    changes: list[dict[str, Any]]
    reused: bool


class MetadataUpdateRequest(Model):
    """``persistent_state_metadata_update_requested``: the host is asked to link a published
    state to the run's latest committed message: ``{updateId, runId, workspaceId,
    stableChatId, chatRef, generationType, profileId, messageId, stateId, baseStateId,
    changeCount, changes}`` (``messageId`` is the committed message's index as text;
    ``null`` only for a hand-played run that published with no committed message, which
    gets no ``..._updated``)."""

    update_id: str
    run_id: str
    workspace_id: str
    stable_chat_id: str
    chat_ref: dict[str, Any]
    generation_type: str
    profile_id: str
    message_id: str | None
    state_id: str
    base_state_id: str | None
    change_count: int
    changes: list[dict[str, Any]]


class MetadataUpdated(Model):
    """``persistent_state_metadata_updated``: the host linked the state to the message
    (``{updateId, messageId, stateId}``)."""

    update_id: str
    message_id: str
    state_id: str


class MetadataUpdateFailure(MetadataUpdated):
    """``persistent_state_metadata_update_failed``: the host could not link the state
    (``{updateId, messageId, stateId, message}``)."""

    message: str


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
    payload: MessageText


class PersistentStateMetadataUpdateRequested(Event):
    """The host is asked to link the state to the committed message."""

    type: Literal["persistent_state_metadata_update_requested"] = (
        "persistent_state_metadata_update_requested")
    payload: MetadataUpdateRequest


class PersistentStateMetadataUpdated(Event):
    """The host linked the state to the committed message."""

    type: Literal["persistent_state_metadata_updated"] = "persistent_state_metadata_updated"
    payload: MetadataUpdated


class PersistentStateMetadataUpdateFailed(Event):
    """The host could not link the state to the committed message."""

    type: Literal["persistent_state_metadata_update_failed"] = (
        "persistent_state_metadata_update_failed")
    level: Level = "error"
    payload: MetadataUpdateFailure
