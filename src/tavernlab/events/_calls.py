"""Events of a tool call: requested, started, result stored, completed or failed, and the
file events the text tools add (docs/events.md). A call of the agent loop carries subclasses
of the call and file payloads that add upstream's fields (:class:`LoopToolCallRef`,
:class:`LoopFileWritten`); they live here, with the payloads they extend, because the host
writes them (the rest of the loop's events: :mod:`tavernlab.events._agent`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tavernlab.events._base import Event, Level
from tavernlab.ondisk import Model


class ToolCallRef(Model):
    """``tool_call_requested`` / ``tool_call_started``."""

    round: int
    invocation_id: str
    call_id: str
    tool_id: str
    name: str
    arguments_path: str | None = None


class StoredResult(Model):
    """``tool_result_stored``: ``{invocationId, round, callId, toolId, path}``."""

    invocation_id: str
    round: int
    call_id: str
    tool_id: str
    path: str


class StoredResultView(StoredResult):
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


class LoopToolCallRef(ToolCallRef):
    """``tool_call_requested`` / ``tool_call_started`` of a loop call: adds the tool snapshot,
    ``argumentsRef`` (the stored arguments) and, for ``workspace.shell``, the raw
    ``command``."""

    snapshot_id: str
    arguments_ref: str | None = None
    command: str | None = None


class LoopFileWritten(FileWritten):
    """``workspace_file_written`` / ``workspace_patch_applied`` of a loop call: adds
    ``invocationId``, the file's ``chars`` and ``words`` and, for a patch, ``oldSha256``."""

    invocation_id: str
    chars: int
    words: int
    old_sha256: str | None = None


class ToolCallRequested(Event):
    """The model asked for a tool call."""

    type: Literal["tool_call_requested"] = "tool_call_requested"
    payload: ToolCallRef


class ToolCallStarted(Event):
    """A tool call started executing."""

    type: Literal["tool_call_started"] = "tool_call_started"
    payload: ToolCallRef


class ToolResultStored(Event):
    """A tool result file was written under ``tool-results/``."""

    type: Literal["tool_result_stored"] = "tool_result_stored"
    payload: StoredResult


class ToolResultReadableViewStored(Event):
    """A long external result also got a readable ``.txt`` view."""

    type: Literal["tool_result_readable_view_stored"] = "tool_result_readable_view_stored"
    payload: StoredResultView


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
