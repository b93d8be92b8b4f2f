"""Run events: one pydantic model per event type, tagged by ``type`` (spec/workspace.md 8.3).

:mod:`~tavernlab.events.base` holds the envelope (:class:`Event`) and the shared
:class:`Model`; the families are :mod:`~tavernlab.events.lifecycle` (creation, status,
invocations, the end), :mod:`~tavernlab.events.calls` (tool calls and file events) and
:mod:`~tavernlab.events.commits` (chat commits, persist states). :data:`RunEvent` is the
discriminated union of every typed event; :func:`parse_event` reads any line of
``events.jsonl``, typed or not. These are data only; rendering is :mod:`tavernlab.views`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tavernlab.events.base import EVENT_TYPES, Event, EventScope, Level, Model, parse_event
from tavernlab.events.calls import (
    FileWritten,
    StoredResult,
    StoredResultView,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallOutcome,
    ToolCallRef,
    ToolCallRequested,
    ToolCallStarted,
    ToolResultReadableViewStored,
    ToolResultStored,
    WorkspaceFileWritten,
    WorkspacePatchApplied,
)
from tavernlab.events.commits import (
    ChatCommitRequest,
    ChatCommitRequested,
    CommitOutcome,
    PersistCommitted,
    PersistentChangesCommitFailed,
    PersistentChangesCommitted,
    PersistentStateMetadataUpdateRequested,
    PersistentStateMetadataUpdateUpdated,
    PersistStateRef,
    RunCommitted,
)
from tavernlab.events.lifecycle import (
    AgentInvocationCompleted,
    AgentInvocationCreated,
    ContextAssembled,
    ContextSummary,
    InvocationRef,
    PersistentProjectionInitialized,
    ProjectionSummary,
    Reason,
    RootList,
    RunCancelled,
    RunCancelRequested,
    RunCompleted,
    RunCreated,
    RunCreation,
    RunFailed,
    SkillScopesResolved,
    SkillSet,
    StatusChange,
    StatusChanged,
    TaskReturn,
    TaskReturnCompleted,
    WorkspaceInitialized,
)

#: Every typed event tavernlab writes, discriminated on ``type``.
RunEvent = Annotated[
    RunCreated | StatusChanged | WorkspaceInitialized | PersistentProjectionInitialized
    | SkillScopesResolved | ContextAssembled | AgentInvocationCreated | AgentInvocationCompleted
    | TaskReturnCompleted | RunCompleted | RunCancelRequested | RunCancelled | RunFailed
    | ToolCallRequested | ToolCallStarted | ToolResultStored | ToolResultReadableViewStored
    | ToolCallCompleted | ToolCallFailed | WorkspaceFileWritten | WorkspacePatchApplied
    | ChatCommitRequested | RunCommitted | PersistentChangesCommitted
    | PersistentChangesCommitFailed | PersistentStateMetadataUpdateRequested
    | PersistentStateMetadataUpdateUpdated,
    Field(discriminator="type"),
]

__all__ = [
    "EVENT_TYPES", "AgentInvocationCompleted", "AgentInvocationCreated", "ChatCommitRequest",
    "ChatCommitRequested", "CommitOutcome", "ContextAssembled", "ContextSummary", "Event",
    "EventScope", "FileWritten", "InvocationRef", "Level", "Model", "PersistCommitted",
    "PersistStateRef", "PersistentChangesCommitFailed", "PersistentChangesCommitted",
    "PersistentProjectionInitialized", "PersistentStateMetadataUpdateRequested",
    "PersistentStateMetadataUpdateUpdated", "ProjectionSummary", "Reason", "RootList",
    "RunCancelRequested", "RunCancelled", "RunCommitted", "RunCompleted", "RunCreated",
    "RunCreation", "RunEvent", "RunFailed", "SkillScopesResolved", "SkillSet", "StatusChange",
    "StatusChanged", "StoredResult", "StoredResultView", "TaskReturn", "TaskReturnCompleted",
    "ToolCallCompleted", "ToolCallFailed", "ToolCallOutcome", "ToolCallRef",
    "ToolCallRequested", "ToolCallStarted", "ToolResultReadableViewStored", "ToolResultStored",
    "WorkspaceFileWritten", "WorkspaceInitialized", "WorkspacePatchApplied", "parse_event",
]
