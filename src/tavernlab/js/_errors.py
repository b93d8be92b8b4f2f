"""The JavaScript sandbox's error leaves, all below :class:`tavernlab.errors.SandboxError`.

::

    SandboxError                        js.error
    ├── WorkerStartError                js.sandbox_failed         a worker process did not start
    ├── PoolClosedError                 js.pool_closed            a job on a closed pool
    ├── CapabilityError                 js.capability_failed      a guest-visible call failure
    ├── JsArgumentError                 js.invalid_arguments      bad ``js`` command line (exit 2)
    ├── JsLoadError                     js.load_failed            the entry cannot load (exit 1)
    ├── ModuleLoadError                 js.module_load_failed     an import cannot load
    ├── SkillScriptError                skill.run_script_*        a recoverable legacy failure
    ├── SkillScriptValidationError      skill.run_script_invalid_request   aborts the call
    ├── SkillScriptContextError         agent.invalid_skill_script_context
    └── KitError                        js.kit_error              a kit module cannot be provided
        ├── KitDownloadFailed           js.kit_download_failed    registry unreachable or refusing
        ├── KitIntegrityMismatch        js.kit_integrity_mismatch a tarball with another sha512
        ├── KitBuildFailed              js.kit_build_failed       a tarball the kit cannot build
        ├── KitUnavailable              js.kit_unavailable        not cached and not fetchable
        └── UnknownKitModule            js.kit_unknown_module     not one of the six kit names

:class:`CapabilityError` never reaches a caller: a capability server raises it and the guest
sees ``new <kind>(message)``. The others are what the sandbox's entry points raise or turn
into exit statuses and tool results.
"""

from __future__ import annotations

from typing import Literal

from tavernlab.errors import SandboxError

GuestErrorKind = Literal["Error", "TypeError", "RangeError"]


class WorkerStartError(SandboxError):
    """A worker process could not be started (or died while starting, twice in a row)."""

    code = "js.sandbox_failed"


class PoolClosedError(SandboxError):
    """A job was submitted to a :class:`~tavernlab.js.WorkerPool` after ``close()``."""

    code = "js.pool_closed"

    def __init__(self) -> None:
        super().__init__("The JavaScript worker pool is closed.")


class CapabilityError(SandboxError):
    """A capability call failed; the guest receives ``new <kind>(message)``."""

    code = "js.capability_failed"

    def __init__(self, message: str, kind: GuestErrorKind = "Error") -> None:
        super().__init__(message)
        self.kind: GuestErrorKind = kind


class JsArgumentError(SandboxError):
    """A bad ``js`` command line, stdin problems included (exit status 2)."""

    code = "js.invalid_arguments"


class JsLoadError(SandboxError):
    """The entry could not be loaded (exit status 1)."""

    code = "js.load_failed"


class ModuleLoadError(SandboxError):
    """A module of the graph cannot be resolved or loaded; the job does not start.

    ``importer``, ``line`` and ``column`` locate the import that failed (empty for the entry).
    """

    code = "js.module_load_failed"

    def __init__(self, message: str, *, importer: str = "", line: int = 0,
                 column: int = 0) -> None:
        super().__init__(message)
        self.importer = importer
        self.line = line
        self.column = column

    def located(self, importer: str, line: int, column: int) -> ModuleLoadError:
        """The same error, pointing at the import site."""
        return ModuleLoadError(self.message, importer=importer, line=line, column=column)

    @property
    def stack(self) -> str:
        """A one-frame stack naming the import site (``    at /scratch/task.js:3:8``)."""
        if not self.importer:
            return ""
        return f"    at {self.importer}:{self.line}:{self.column}"


class SkillScriptError(SandboxError):
    """A recoverable legacy script failure with its tool code (execution failed, result too
    large, not found); the tool turns it into an error result."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


class SkillScriptValidationError(SandboxError):
    """A legacy request that must not run at all (module snapshot or workspace snapshot over
    its limit); not a recoverable tool result - it aborts the call."""

    code = "skill.run_script_invalid_request"


class SkillScriptContextError(SandboxError):
    """A malformed frozen context: ``agent.invalid_skill_script_context: <detail>``."""

    code = "agent.invalid_skill_script_context"

    def __init__(self, detail: str) -> None:
        super().__init__(f"agent.invalid_skill_script_context: {detail}")


# --- the script kit (tavernlab's own wording: upstream ships the kit in its binary)


class KitError(SandboxError):
    """Base of the kit failures (a kit module could not be provided)."""

    code = "js.kit_error"


class KitDownloadFailed(KitError):
    """The registry could not be reached, answered with an error or sent too many bytes."""

    code = "js.kit_download_failed"


class KitIntegrityMismatch(KitError):
    """A tarball whose ``sha512`` differs from the pinned integrity; nothing was extracted."""

    code = "js.kit_integrity_mismatch"


class KitBuildFailed(KitError):
    """A verified tarball that cannot become a kit module (a missing or unsafe member, an
    import form the kit bundler refuses, exports that differ from the pins)."""

    code = "js.kit_build_failed"


class KitUnavailable(KitError):
    """A kit module that is neither cached nor obtainable now; the message names the module,
    ``tavernlab kit fetch`` and the cache directory."""

    code = "js.kit_unavailable"


class UnknownKitModule(KitError):
    """A name that is not one of the six kit modules (``tavernlab kit fetch NAME``)."""

    code = "js.kit_unknown_module"
