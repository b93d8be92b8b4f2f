"""Run events: one pydantic model per event type, tagged by ``type`` (docs/events.md).

:mod:`~tavernlab.events.base` holds the envelope (:class:`Event`) and the shared
:class:`Model`; the families are :mod:`~tavernlab.events.lifecycle` (creation, status,
invocations, the end), :mod:`~tavernlab.events.calls` (tool calls and file events) and
:mod:`~tavernlab.events.commits` (chat commits, persist states);
:mod:`~tavernlab.events.journal` holds the records of ``journal.jsonl`` (what upstream does
not log). :data:`RunEvent` and :data:`JournalEntry` are
the discriminated unions; :func:`parse_event` reads any line of
``events.jsonl``, typed or not. These are data only; rendering is :mod:`tavernlab.views`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tavernlab.events.base import (
    EVENT_TYPES,
    TERMINAL_EVENT_TYPES,
    Event,
    EventScope,
    Level,
    Model,
    parse_event,
)
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
from tavernlab.events.journal import (
    JOB_LABEL_CHARS,
    JOURNAL_TYPES,
    ChangeKind,
    FileChange,
    FileChanged,
    JournalRecord,
    JsJobEnd,
    JsJobFinished,
    JsJobStart,
    JsJobStarted,
    LogRepaired,
    RoundEnd,
    RoundEnded,
    SubagentStart,
    SubagentStarted,
    TornTail,
    Writer,
    job_label,
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

#: Every journal record type, discriminated on ``type``.
JournalEntry = Annotated[
    JsJobStarted | JsJobFinished | RoundEnded | SubagentStarted | FileChanged
    | LogRepaired,
    Field(discriminator="type"),
]

#: Every typed event tavernlab writes to ``events.jsonl``, discriminated on ``type``.
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
    "EVENT_TYPES",
    "JOB_LABEL_CHARS",
    "JOURNAL_TYPES",
    "TERMINAL_EVENT_TYPES",
    "AgentInvocationCompleted",
    "AgentInvocationCreated",
    "ChangeKind",
    "ChatCommitRequest",
    "ChatCommitRequested",
    "CommitOutcome",
    "ContextAssembled",
    "ContextSummary",
    "Event",
    "EventScope",
    "FileChange",
    "FileChanged",
    "FileWritten",
    "InvocationRef",
    "JournalEntry",
    "JournalRecord",
    "JsJobEnd",
    "JsJobFinished",
    "JsJobStart",
    "JsJobStarted",
    "Level",
    "LogRepaired",
    "Model",
    "PersistCommitted",
    "PersistStateRef",
    "PersistentChangesCommitFailed",
    "PersistentChangesCommitted",
    "PersistentProjectionInitialized",
    "PersistentStateMetadataUpdateRequested",
    "PersistentStateMetadataUpdateUpdated",
    "ProjectionSummary",
    "Reason",
    "RootList",
    "RoundEnd",
    "RoundEnded",
    "RunCancelRequested",
    "RunCancelled",
    "RunCommitted",
    "RunCompleted",
    "RunCreated",
    "RunCreation",
    "RunEvent",
    "RunFailed",
    "SkillScopesResolved",
    "SkillSet",
    "StatusChange",
    "StatusChanged",
    "StoredResult",
    "StoredResultView",
    "SubagentStart",
    "SubagentStarted",
    "TaskReturn",
    "TaskReturnCompleted",
    "ToolCallCompleted",
    "ToolCallFailed",
    "ToolCallOutcome",
    "ToolCallRef",
    "ToolCallRequested",
    "ToolCallStarted",
    "ToolResultReadableViewStored",
    "ToolResultStored",
    "TornTail",
    "WorkspaceFileWritten",
    "WorkspaceInitialized",
    "WorkspacePatchApplied",
    "Writer",
    "job_label",
    "parse_event",
]
