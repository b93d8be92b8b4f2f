"""The worktree error family (spec/worktree.md section 1.2).

Tool bodies raise :class:`ToolError` with an upstream code (``execution_failed``,
``not_found``, or ``input_invalid`` from input validation). The typed errors below pass
through the tool host unchanged; their ``code`` is the envelope code the host reports for
them (``internal``, except ``cancelled`` for :class:`ProvisionCancelledError`).
"""

from __future__ import annotations

from typing import Any

from tavernlab.errors import TavernlabError
from tavernlab.errors import UsageError as UsageError  # the one UsageError, re-exported


class ToolError(TavernlabError):
    """A tool body's failure with an upstream code: ``execution_failed``, ``not_found`` or
    ``input_invalid``."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message, code=code, **details)


class GitError(TavernlabError):
    """``git <args> failed (exit <N>): <stderr or stdout>`` — a git command exited non-zero."""

    code = "internal"

    def __init__(self, message: str, *, args: list[str], exit_code: int, stderr: str,
                 stdout: str) -> None:
        super().__init__(message)
        self.git_args = args
        self.exit_code = exit_code
        self.stderr = stderr
        self.stdout = stdout


class SpawnError(TavernlabError):
    """A child process could not be started at all (missing program or working directory)."""

    code = "internal"


class ConfigError(TavernlabError):
    """``agentproto.json`` or ``.agentproto/worktree.json`` could not be read or is invalid."""

    code = "internal"


class HookError(TavernlabError):
    """A setup or teardown hook exited non-zero; carries the last attempt's ``result``.

    The message is built by :func:`tavernlab.worktree.hooks.hook_error_message`: the failing
    command, the filtered 60-line output tail and, with a log, where the full output is.
    """

    code = "internal"

    def __init__(self, message: str, *, phase: str, command: str, result: Any,
                 log_path: str | None = None) -> None:
        super().__init__(message)
        self.phase = phase
        self.command = command
        self.result = result
        if log_path is not None:
            self.log_path = log_path

    log_path: str | None = None


class GlobTraversalError(TavernlabError):
    """A ``cloneGlobs`` pattern would leave the repository root (absolute or ``..``)."""

    code = "internal"

    def __init__(self, pattern: str) -> None:
        super().__init__(f"glob pattern '{pattern}' escapes the repo root (path traversal)")
        self.pattern = pattern


class GlobPatternError(TavernlabError):
    """A ``cloneGlobs`` pattern uses ``**``, which whole-entry cloning does not support."""

    code = "internal"


class ProvisionCancelledError(TavernlabError):
    """Provisioning was cancelled (while queued, before start, or while a phase ran)."""

    code = "cancelled"

    def __init__(self, message: str = "worktree provisioning cancelled") -> None:
        super().__init__(message)


class WorktreeNotRemovableError(TavernlabError):
    """Cleanup refused to remove a worktree with changes that no discard flag authorizes.

    ``blocked`` lists ``"untracked"`` and/or ``"modified"``; it is empty when git itself
    refused the non-forced removal, in which case ``detail`` holds git's reason.
    """

    code = "internal"

    def __init__(self, cwd: str, blocked: list[str], detail: str | None = None) -> None:
        if not blocked:
            message = (
                f"worktree at {cwd} is not clean; git refused to remove it: {detail}. "
                "Pass discardUntracked/discardModified to authorize discarding, or use "
                "'worktree archive' to salvage first."
            )
        else:
            flags = [
                "discardUntracked" if kind == "untracked" else "discardModified"
                for kind in blocked
            ]
            pronoun = "it" if len(flags) == 1 else "them"
            message = (
                f"worktree at {cwd} has {' and '.join(blocked)} changes; refusing to remove. "
                f"Pass {' and '.join(flags)} to authorize discarding {pronoun}, or use "
                "'worktree archive' to salvage first."
            )
        super().__init__(message)
        self.cwd = cwd
        self.blocked = blocked
        self.detail = detail


class ForgeUnavailableError(TavernlabError):
    """The code forge (GitHub) could not be asked; status falls back to the offline path."""

    code = "internal"


class PortAllocationError(TavernlabError):
    """No free TCP port could be found for a service."""

    code = "internal"


class ServiceError(TavernlabError):
    """A service request named a script that the worktree does not declare."""

    code = "internal"


