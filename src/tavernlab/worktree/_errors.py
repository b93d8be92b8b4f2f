"""The worktree error family (docs/worktrees.md), below ``tavernlab.errors``.

Tool bodies raise the one :class:`tavernlab.errors.ToolError` with an upstream envelope code
(``execution_failed``, ``not_found``, or ``input_invalid`` from input validation). The typed
errors below subclass :class:`tavernlab.errors.WorktreeError` and carry their own
``worktree.*`` code, which the command line prints. The tool host's envelope keeps upstream's
codes: :func:`envelope_code` is the one mapping from a raised error to the envelope code
(``cancelled`` for a cancelled provision, ``not_found`` for a missing base ref, ``internal``
for every other typed error, as upstream's host reports unmapped typed errors).
"""

from __future__ import annotations

from typing import Any

from tavernlab.errors import ToolError, WorktreeError

__all__ = [
    "BaseRefNotFoundError",
    "CloneError",
    "ConfigError",
    "DaemonToolError",
    "DaemonUnreachableError",
    "ForgeUnavailableError",
    "GitError",
    "GlobPatternError",
    "GlobTraversalError",
    "HookError",
    "PortAllocationError",
    "ProvisionCancelledError",
    "ServiceError",
    "SpawnError",
    "ToolError",
    "WorktreeError",
    "WorktreeNotRemovableError",
    "envelope_code",
]


class GitError(WorktreeError):
    """``git <args> failed (exit <N>): <stderr or stdout>`` — a git command exited non-zero."""

    code = "worktree.git_failed"

    def __init__(self, message: str, *, args: list[str], exit_code: int, stderr: str,
                 stdout: str) -> None:
        super().__init__(message)
        self.git_args = args
        self.exit_code = exit_code
        self.stderr = stderr
        self.stdout = stdout


class BaseRefNotFoundError(GitError):
    """``base ref `<base>` not found; pass base (for example "main")`` — ``git worktree add``
    failed because the base does not resolve to a commit (a repository without ``origin``
    and the default ``origin/main``). Upstream keeps the default and shows git's raw error;
    tavernlab says it in one line (tavernlab choice)."""

    code = "worktree.base_not_found"

    def __init__(self, base: str, *, args: list[str], exit_code: int, stderr: str,
                 stdout: str) -> None:
        super().__init__(f'base ref `{base}` not found; pass base (for example "main")',
                         args=args, exit_code=exit_code, stderr=stderr, stdout=stdout)
        self.base = base


class SpawnError(WorktreeError):
    """A child process could not be started at all (missing program or working directory)."""

    code = "worktree.spawn_failed"


class ConfigError(WorktreeError):
    """``agentproto.json`` or ``.agentproto/worktree.json`` could not be read or is invalid."""

    code = "worktree.config_invalid"


class HookError(WorktreeError):
    """A setup hook exited non-zero; carries the last attempt's ``result``.

    The message is built by :func:`tavernlab.worktree._hooks.hook_error_message`: the failing
    command, the filtered 60-line output tail and, with a log, where the full output is.
    """

    code = "worktree.hook_failed"
    log_path: str | None = None

    def __init__(self, message: str, *, phase: str, command: str, result: Any,
                 log_path: str | None = None) -> None:
        super().__init__(message)
        self.phase = phase
        self.command = command
        self.result = result
        if log_path is not None:
            self.log_path = log_path


class GlobTraversalError(WorktreeError):
    """A ``cloneGlobs`` pattern would leave the repository root (absolute or ``..``)."""

    code = "worktree.glob_traversal"

    def __init__(self, pattern: str) -> None:
        super().__init__(f"glob pattern '{pattern}' escapes the repo root (path traversal)")
        self.pattern = pattern


class GlobPatternError(WorktreeError):
    """A ``cloneGlobs`` pattern uses ``**``, which whole-entry cloning does not support."""

    code = "worktree.glob_unsupported"


class CloneError(WorktreeError):
    """``clone of '<src>' into '<dest>' failed: …`` — both copy attempts failed."""

    code = "worktree.clone_failed"


class ProvisionCancelledError(WorktreeError):
    """Provisioning was cancelled (while queued, before start, or while a phase ran).

    ``interrupted`` is true when the cancellation came from a ``KeyboardInterrupt`` (a
    Jupyter interrupt or Ctrl-C), so a command line can exit 130 for it.
    """

    code = "worktree.provision_cancelled"

    def __init__(self, message: str = "worktree provisioning cancelled", *,
                 interrupted: bool = False) -> None:
        super().__init__(message)
        self.interrupted = interrupted


class WorktreeNotRemovableError(WorktreeError):
    """Cleanup refused to remove a worktree with changes that no discard flag authorizes.

    ``blocked`` lists ``"untracked"`` and/or ``"modified"``; it is empty when git itself
    refused the non-forced removal, in which case ``detail`` holds git's reason.
    """

    code = "worktree.not_removable"

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


class ForgeUnavailableError(WorktreeError):
    """The code forge (GitHub) could not be asked; status falls back to the offline path."""

    code = "worktree.forge_unavailable"


class PortAllocationError(WorktreeError):
    """No free TCP port could be found for a service."""

    code = "worktree.port_unavailable"


class ServiceError(WorktreeError):
    """A service request named a script that the worktree does not declare."""

    code = "worktree.service_not_declared"


#: Envelope codes of the typed errors the host maps; every other typed error is ``internal``.
_ENVELOPE_CODES: dict[type[BaseException], str] = {
    ProvisionCancelledError: "cancelled",
    BaseRefNotFoundError: "not_found",
}


def envelope_code(error: BaseException) -> str:
    """The upstream envelope code the tool host reports for ``error``.

    A :class:`ToolError` keeps its own code; the typed errors map through one table
    (most specific class first); anything else is ``internal``.
    """
    if isinstance(error, ToolError):
        return error.code
    for kind in type(error).__mro__:
        if kind in _ENVELOPE_CODES:
            return _ENVELOPE_CODES[kind]
    return "internal"


class DaemonUnreachableError(WorktreeError):
    """The agentproto daemon's MCP endpoint could not be reached (``worktree-agent``)."""

    code = "worktree.daemon_unreachable"


class DaemonToolError(WorktreeError):
    """A tool of the agentproto daemon answered an error, nothing, or text that is not JSON."""

    code = "worktree.daemon_tool_failed"
