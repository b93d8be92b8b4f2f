"""One error hierarchy for tavernlab.

Every error carries the upstream ``code`` and the exact upstream ``message`` so that a
notebook user, a test and the model-facing tool result all see the same text. Families
(workspace storage, tools, sandbox, skills, worktree) subclass :class:`TavernlabError`;
subsystems may define their own subclasses next to their code, but always below this root.
"""

from __future__ import annotations

from typing import Any


class TavernlabError(Exception):
    """Root of every tavernlab error: an upstream ``code`` plus its exact ``message``."""

    code: str = "tavernlab.error"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, Any]:
        """The ``{code, message}`` object upstream puts under ``structured.error``."""
        return {"code": self.code, "message": self.message}


# --- workspace storage (spec/workspace.md section 5.7) -------------------------------------


class WorkspaceError(TavernlabError):
    """A storage error of ``WorkspaceFs``: recoverable, mapped to tool codes or POSIX errors."""

    code = "workspace.error"


class NotFound(WorkspaceError):
    """Upstream ``NotFound(message)``: the path (or a parent it needs) does not exist."""

    code = "workspace.not_found"

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class InvalidData(WorkspaceError):
    """Upstream ``InvalidData(message)``: a bad path, an exceeded limit, a bad name on disk."""

    code = "workspace.invalid_data"


class PathIsDirectory(WorkspaceError):
    """Upstream ``WorkspacePathIsDirectory{path}``: a directory where a file is needed."""

    code = "workspace.path_is_directory"

    def __init__(self, path: str) -> None:
        super().__init__(f"workspace path `{path}` is a directory")
        self.path = path


class AccessDenied(WorkspaceError):
    """Upstream ``WorkspaceAccessDenied{path, operation}``: the policy forbids the operation."""

    def __init__(self, path: str, operation: str) -> None:
        word = "readable" if operation == "read" else "writable"
        super().__init__(f"`{path}` is not {word} for this task.")
        self.path = path
        self.operation = operation
        self.code = "workspace.path_not_visible" if operation == "read" else (
            "workspace.path_not_writable")


class FileNotText(WorkspaceError):
    """Upstream ``WorkspaceFileNotText{path}``: the file is not valid UTF-8."""

    code = "workspace.file_not_text"

    def __init__(self, path: str) -> None:
        super().__init__(f"workspace file `{path}` is not UTF-8 text")
        self.path = path


class WriteConflict(WorkspaceError):
    """Upstream ``WorkspaceWriteConflict{path, kind}``: a compare-and-swap guard failed.

    ``kind`` is ``"already_exists"`` (``AlreadyExists{actualSha256}``) or ``"stale"``
    (``Stale{expectedSha256, actualSha256}``; ``actual_sha256`` is ``None`` when the file is gone).
    """

    code = "workspace.write_conflict"

    def __init__(self, path: str, kind: str, *, expected_sha256: str | None = None,
                 actual_sha256: str | None = None) -> None:
        if kind == "already_exists":
            message = f"workspace file `{path}` already exists"
        elif actual_sha256 is None:
            message = f"workspace file `{path}` changed: it no longer exists"
        else:
            message = f"workspace file `{path}` changed: expected sha256 {expected_sha256}, " \
                      f"found {actual_sha256}"
        super().__init__(message)
        self.path = path
        self.kind = kind
        self.expected_sha256 = expected_sha256
        self.actual_sha256 = actual_sha256


class FileIo(WorkspaceError):
    """Upstream ``FileIo{operation, path, source}``: an OS error, with its ``errno`` kept."""

    code = "workspace.file_io"

    def __init__(self, operation: str, path: str, source: OSError | str) -> None:
        reason = source.strerror if isinstance(source, OSError) and source.strerror else str(source)
        super().__init__(f"failed to {operation} workspace path `{path}`: {reason}")
        self.operation = operation
        self.path = path
        self.errno = source.errno if isinstance(source, OSError) else None


class Cancelled(WorkspaceError):
    """Upstream ``Cancelled``: the operation was not started because the caller cancelled."""

    code = "workspace.cancelled"

    def __init__(self, message: str = "operation cancelled") -> None:
        super().__init__(message)
