"""The discriminated unions over every family: :data:`RunEvent`, each event type tavernlab
writes to ``events.jsonl``, and :data:`JournalEntry`, each journal record type. They name the
classes of every family, so importing this module defines them all; the face hands them on
when first asked for."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tavernlab.events._agent import (
    AgentInvocationCancelled,
    AgentInvocationFailed,
    AgentInvocationStarted,
    AgentInvocationTransferred,
    AgentLoopFinished,
    AgentModelBindingResolved,
    ChatCommitCompleted,
    ChatCommitFailed,
    ChatCommitRecorded,
    DirectOutputCaptured,
    DriftRecoveryAttempted,
    ModelCallAttemptFailed,
    ModelCallAttemptStarted,
    ModelCallRetryScheduled,
    ModelCompleted,
    ModelRequestCreated,
    ModelResponseStored,
    ProviderStateUpdated,
    RunPartialSuccess,
)
from tavernlab.events._calls import (
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallRequested,
    ToolCallStarted,
    ToolResultReadableViewStored,
    ToolResultStored,
    WorkspaceFileWritten,
    WorkspacePatchApplied,
)
from tavernlab.events._commits import (
    ChatCommitRequested,
    PersistentChangesCommitFailed,
    PersistentChangesCommitted,
    PersistentStateMetadataUpdated,
    PersistentStateMetadataUpdateFailed,
    PersistentStateMetadataUpdateRequested,
    RunCommitted,
)
from tavernlab.events._ending import (
    AgentInvocationCompleted,
    RunCancelled,
    RunCancelRequested,
    RunCompleted,
    RunFailed,
    TaskReturnCompleted,
)
from tavernlab.events._journal import FileChanged, LogRepaired
from tavernlab.events._lifecycle import (
    AgentInvocationCreated,
    ContextAssembled,
    PersistentProjectionInitialized,
    RunCreated,
    SkillScopesResolved,
    StatusChanged,
    WorkspaceInitialized,
)
from tavernlab.events._steps import JsJobFinished, JsJobStarted, RoundEnded, SubagentStarted

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
    | PersistentStateMetadataUpdated | PersistentStateMetadataUpdateFailed
    | AgentModelBindingResolved | AgentInvocationStarted
    | AgentInvocationFailed | AgentInvocationCancelled | AgentInvocationTransferred
    | ModelRequestCreated | ModelCallAttemptStarted | ModelCallAttemptFailed
    | ModelCallRetryScheduled | ModelResponseStored | ProviderStateUpdated | ModelCompleted
    | DirectOutputCaptured | DriftRecoveryAttempted | AgentLoopFinished | ChatCommitCompleted
    | ChatCommitFailed | ChatCommitRecorded | RunPartialSuccess,
    Field(discriminator="type"),
]

