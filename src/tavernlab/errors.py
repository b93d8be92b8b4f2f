"""One error tree for tavernlab: every error carries an upstream ``code`` and exact ``message``.

A notebook user, a test and the model-facing tool result all see the same text, and callers
branch on the class or on ``code``, never on the message. The whole tree (leaves marked with
their module when they live beside their engine)::

    TavernlabError                      tavernlab.error
    ├── WorkspaceError                  workspace.*      storage (docs/workspace.md)
    │   ├── NotFound                    workspace.not_found
    │   │   └── SkillUnavailable        workspace.not_found (``Skill is not available: …``)
    │   ├── InvalidData                 workspace.invalid_data
    │   │   └── InvalidWorkspacePath    workspace.invalid_path
    │   ├── PathIsDirectory             workspace.path_is_directory
    │   ├── AccessDenied                workspace.path_not_visible / workspace.path_not_writable
    │   ├── FileNotText                 workspace.file_not_text
    │   ├── WriteConflict               workspace.write_conflict
    │   ├── FileIo                      workspace.file_io
    │   ├── Cancelled                   workspace.cancelled
    │   ├── LockTimeout                 workspace.lock_timeout (a lock held too long elsewhere)
    │   └── InputBudgetExceeded         shell.input_budget_exceeded   (js/_budget.py)
    ├── ToolError                       <tool code>      a recoverable model tool result
    ├── AgentError                      agent.*          the host: runs, macros, persist states
    │   ├── RunStateError               agent.run_state_invalid
    │   ├── MacroError                  agent.invalid_macro_context
    │   ├── MacroLimitExceeded          agent.macro_limit_exceeded
    │   ├── PersistStateError           agent.persistent_state_*
    │   └── LoopError                   <code>           the agent loop's own (agent/_failure.py)
    ├── SandboxError                    js.error         the JavaScript sandbox (js/_errors.py)
    │   ├── WorkerStartError            js.sandbox_failed
    │   ├── PoolClosedError             js.pool_closed
    │   ├── CapabilityError             js.capability_failed   (seen by the guest only)
    │   ├── JsArgumentError             js.invalid_arguments
    │   ├── JsLoadError                 js.load_failed
    │   ├── ModuleLoadError             js.module_load_failed
    │   ├── SkillScriptError            skill.run_script_*
    │   ├── SkillScriptValidationError  skill.run_script_invalid_request
    │   ├── SkillScriptContextError     agent.invalid_skill_script_context
    │   └── KitError                    js.kit_error     the script kit
    │       ├── KitDownloadFailed       js.kit_download_failed
    │       ├── KitIntegrityMismatch    js.kit_integrity_mismatch
    │       ├── KitBuildFailed          js.kit_build_failed
    │       ├── KitUnavailable          js.kit_unavailable
    │       └── UnknownKitModule        js.kit_unknown_module
    ├── SkillError                      skill.*          skill packages (skills/_errors.py)
    │   ├── InvalidSkillPackage         skill.invalid_package
    │   ├── InvalidSkillScope           skill.invalid_scope
    │   ├── SkillNotFound               skill.not_found
    │   ├── SkillConflict               skill.conflict
    │   ├── InvalidSkillIndex           skill.invalid_index
    │   ├── SkillStorageError           skill.storage_failed
    │   └── SkillOutputExists           skill.output_exists
    ├── WorktreeError                   worktree.*       agentproto worktrees (worktree/_errors.py)
    │   ├── GitError                    worktree.git_failed
    │   │   └── BaseRefNotFoundError    worktree.base_not_found
    │   ├── SpawnError                  worktree.spawn_failed
    │   ├── ConfigError                 worktree.config_invalid
    │   ├── HookError                   worktree.hook_failed
    │   ├── GlobTraversalError          worktree.glob_traversal
    │   ├── GlobPatternError            worktree.glob_unsupported
    │   ├── CloneError                  worktree.clone_failed
    │   ├── ProvisionCancelledError     worktree.provision_cancelled
    │   ├── WorktreeNotRemovableError   worktree.not_removable
    │   ├── ForgeUnavailableError       worktree.forge_unavailable
    │   ├── PortAllocationError         worktree.port_unavailable
    │   ├── ServiceError                worktree.service_not_declared
    │   ├── DaemonUnreachableError      worktree.daemon_unreachable
    │   └── DaemonToolError             worktree.daemon_tool_failed
    ├── NotebookError                   notebook.*       notebook cells (notebook/_errors.py)
    │   ├── JSError                     notebook.js_exit  a ``%%js`` cell exited non-zero
    │   └── ShellError                  workspace.shell_* a ``%ws_shell`` call's error result
    ├── ModelError                      model.*          a model call (models/_errors.py)
    │   ├── ModelCallError              <code>           classified for the retry policy
    │   ├── ModelCancelled              agent.cancelled  the run was cancelled mid-call
    │   └── ModelSpecError              model.*          a model name that names no provider
    ├── ReplayError                     replay.*         record and replay (replay/_errors.py)
    │   ├── RunNotExportable            replay.run_not_exportable
    │   ├── BundleTooLarge              replay.bundle_too_large
    │   ├── BundleInvalid               replay.bundle_invalid
    │   ├── BundleVersionUnsupported    replay.bundle_version_unsupported
    │   └── ReplaySetupError            replay.setup_failed
    └── UsageError                      usage            a malformed command line or magic line

Families whose leaves live beside their engine (or surface) define them in that package's
``errors`` module, always below the family base defined here. In IPython every error of the
tree renders as one line ``code: message`` (:meth:`TavernlabError._render_traceback_`).
"""

from __future__ import annotations

from collections.abc import Iterable
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

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback: the one line ``code: message`` (these
        are answers about the user's input, not faults to debug; a line break in the
        message is escaped, see :func:`one_line`)."""
        return [f"{self.code}: {one_line(self.message)}"]


# --- workspace storage (docs/workspace.md, "The storage port") -----------------------------


class WorkspaceError(TavernlabError):
    """A storage error of ``WorkspaceFs``: recoverable, mapped to tool codes or POSIX errors."""

    code = "workspace.error"


class NotFound(WorkspaceError):
    """Upstream ``NotFound(message)``: the path (or a parent it needs) does not exist."""

    code = "workspace.not_found"

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class SkillUnavailable(NotFound):
    """Upstream ``NotFound("Skill is not available: skills/<name>")``: a path under ``skills/``
    names a skill the Invocation has not bound (the tools keep this message as it is)."""

    def __init__(self, name: str, *, path: str = "") -> None:
        super().__init__(f"Skill is not available: skills/{name}", path=path or name)
        self.name = name


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


class LockTimeout(WorkspaceError):
    """A lock another process or thread kept for longer than the lock wait limit
    (:mod:`tavernlab.locks`): nothing was done."""

    code = "workspace.lock_timeout"

    def __init__(self, path: object, waited_s: float) -> None:
        super().__init__(f"gave up waiting for the lock `{path}` after {waited_s:g} s: another "
                         "process holds it (a stopped or hung tavernlab process, or a very "
                         "long call)")
        self.path = str(path)


class InvalidWorkspacePath(InvalidData):
    """A string that is not a valid workspace path (upstream ``InvalidData``)."""

    code = "workspace.invalid_path"


class Cancelled(WorkspaceError):
    """Upstream ``Cancelled``: the operation was not started because the caller cancelled."""

    code = "workspace.cancelled"

    def __init__(self, message: str = "operation cancelled") -> None:
        super().__init__(message)


# --- tools (docs/tool-calls.md) -----------------------------------------------------------------


class ToolError(TavernlabError):
    """A recoverable tool failure: becomes ``{isError: true, errorCode, content}``.

    ``content`` and ``structured`` override the defaults of the result (the message, and
    ``{error: {code, message}}``); ``resource_refs`` are the paths the failed call touched.
    """

    def __init__(self, code: str, message: str, *, resource_refs: Iterable[str] = (),
                 content: str | None = None, structured: Any = None, **details: Any) -> None:
        super().__init__(message, code=code, **details)
        self.resource_refs = list(resource_refs)
        self.content = content
        self.structured = structured


# --- the host: runs, macros, persist states -----------------------------------------------------


class AgentError(TavernlabError):
    """Root of the host's own failures (upstream's ``agent.*`` codes)."""

    code = "agent.error"


class RunStateError(AgentError):
    """An operation that the run's current state does not allow (for example a tool call on a
    finished run)."""

    code = "agent.run_state_invalid"


class MacroError(AgentError):
    """A frozen prompt snapshot that cannot become a macro table (construction failure)."""

    code = "agent.invalid_macro_context"


class MacroLimitExceeded(AgentError):
    """Render input or output over 16 MiB: ``macro input exceeds <N> bytes`` and friends."""

    code = "agent.macro_limit_exceeded"


class PersistStateError(AgentError):
    """A persist-state failure; ``code`` is one of the upstream ``agent.persistent_state_*``."""


# --- engine families (leaves beside their engine) ------------------------------------------------


class SandboxError(TavernlabError):
    """Root of the JavaScript sandbox's errors (leaves in :mod:`tavernlab.js._errors`)."""

    code = "js.error"


class SkillError(TavernlabError):
    """Root of the skill-package errors (leaves in :mod:`tavernlab.skills._errors`)."""

    code = "skill.error"


class WorktreeError(TavernlabError):
    """Root of the worktree errors (leaves in :mod:`tavernlab.worktree._errors`)."""

    code = "worktree.error"


class NotebookError(TavernlabError):
    """Root of the notebook surface's errors (leaves in :mod:`tavernlab.notebook._errors`)."""

    code = "notebook.error"


class ModelError(TavernlabError):
    """A model call failed (the provider answered an error, the network failed, or the answer
    broke the tool-call contract)."""

    code = "model.error"


class ReplayError(TavernlabError):
    """Root of the record-and-replay errors (leaves in :mod:`tavernlab.replay._errors`)."""

    code = "replay.error"


class UsageError(TavernlabError):
    """A malformed command line or magic line (unknown flag, missing value, bad JSON)."""

    code = "usage"


def one_line(text: str) -> str:
    """``text`` as one printable line: line breaks, tabs and every other control or
    separator character (``\\n``, ``\\r``, ``\\x85``, ``\\u2028``, NUL, ...) and lone
    surrogates are written as Python escapes, so a message carrying recorded or hostile
    values never spans several lines of a terminal, a log or a table."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
