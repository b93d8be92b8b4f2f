"""One ``workspace.shell`` call over an Invocation's scoped view (docs/shell.md).

:func:`execute_shell` is the whole call minus the tool plumbing: argument limits, the
``workdir`` check, the deadline, the interpreter run, and the bookkeeping that feeds
auto-commit and ``resourceRefs``.

Bookkeeping: the Invocation's :class:`~tavernlab.workspace.scope.MutationTracker` is shared by
the whole round. The call works on a *fresh* tracker seeded with the round's current
candidate (so a ``mv`` of the candidate carries it along); afterwards

* every path the call created, changed or removed (sorted) becomes its ``resourceRefs``
  (upstream detail unknown; tavernlab chooses this and documents it) and is added to the
  round's ``touched`` set;
* a successful call hands its candidate change to the round's tracker (last modified text
  file wins; removing the candidate clears it);
* every error result - non-zero exit, cancellation, timeout, interpreter failure, invalid
  ``workdir`` - clears the round's candidate (``clear_candidate``); the file changes stay.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tavernlab.cancel import CancelToken
from tavernlab.errors import Cancelled, InvalidData, ToolError, WorkspaceError
from tavernlab.js import DEFAULT_DEADLINE_S
from tavernlab.shell._bridge import parse_shell_path, shell_path
from tavernlab.shell._engine import BashkitEngine, ShellEngine
from tavernlab.shell._limits import MAX_COMMAND_BYTES
from tavernlab.shell._resources import ShellOptions, ShellResources
from tavernlab.shell._result import ShellResult
from tavernlab.workspace.macros import FrozenContext
from tavernlab.workspace.scope import MutationTracker, ScopedWorkspaceFs
from tavernlab.workspace.tools import invalid_arguments

EngineFactory = Callable[[ScopedWorkspaceFs, "FrozenContext | None", ShellResources], ShellEngine]

#: What a call without resources or options of its own uses (both are frozen, so one of
#: each serves every call).
DEFAULT_RESOURCES = ShellResources()
DEFAULT_OPTIONS = ShellOptions()


def command_too_long() -> ToolError:
    """``tool.invalid_arguments``: ``command exceeds the 131072-byte limit`` (upstream
    wording unknown; tavernlab chooses this and documents it). Nothing runs."""
    return invalid_arguments(f"command exceeds the {MAX_COMMAND_BYTES}-byte limit")


def bad_workdir(workdir: str) -> ToolError:
    """``workspace.shell_failed``: ``workdir `<workdir>` is not a workspace directory``
    (upstream only says the call fails; tavernlab chooses this code and message)."""
    return ToolError("workspace.shell_failed",
                     f"workdir `{workdir}` is not a workspace directory")


def resolve_workdir(scope: ScopedWorkspaceFs, workdir: str) -> str:
    """Normalize ``workdir`` like any shell path (relative to ``/``) and require an existing,
    visible directory; returns its shell form."""
    try:
        path = parse_shell_path(workdir)
        if not scope.metadata(path).is_dir:
            raise bad_workdir(workdir)
    except (InvalidData, WorkspaceError):
        raise bad_workdir(workdir) from None
    return shell_path(path)


def execute_shell(scope: ScopedWorkspaceFs, context: FrozenContext | None, command: str,
                  workdir: str = "/", *, deadline_s: float = DEFAULT_DEADLINE_S,
                  token: CancelToken | None = None,
                  resources: ShellResources | None = None,
                  options: ShellOptions | None = None,
                  engine: EngineFactory = BashkitEngine) -> ShellResult:
    """Run ``command`` in a fresh shell over ``scope``; see the module docstring.
    ``options`` may fix time and randomness or listen to the output as it is produced
    (:class:`~tavernlab.shell._resources.ShellOptions`).

    Raises :class:`~tavernlab.workspace.tools._tooling.ToolError` for an over-long command or one
    with a lone surrogate (``tool.invalid_arguments``, ``command must be valid Unicode text``
    is tavernlab's wording) or a bad ``workdir`` (``workspace.shell_failed``); any other
    exception is an internal fault that aborts the tool call.
    """
    try:
        size = len(command.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate from JSON; tavernlab's wording
        raise invalid_arguments("command must be valid Unicode text") from None
    if size > MAX_COMMAND_BYTES:
        raise command_too_long()
    round_tracker = scope.tracker
    try:
        start_dir = resolve_workdir(scope, workdir)
    except ToolError:
        round_tracker.clear_candidate()
        raise
    token = token if token is not None else CancelToken()
    deadline = time.monotonic() + deadline_s
    base_check = scope.check

    def check() -> None:
        if base_check is not None:
            base_check()
        if token.cancelled or time.monotonic() >= deadline:
            raise Cancelled()

    call_tracker = MutationTracker(candidate=round_tracker.candidate)
    call_scope = scope.derive(tracker=call_tracker, check=check)
    result = None
    try:
        run = engine(call_scope, context, resources or DEFAULT_RESOURCES).run(
            command, start_dir, deadline, token, options or DEFAULT_OPTIONS)
        result = ShellResult(run.outcome, run.exit_code, run.stdout, run.stderr, run.truncated,
                             sorted(call_tracker.touched))
    finally:
        round_tracker.touched |= call_tracker.touched
        if result is None or result.is_error:
            round_tracker.clear_candidate()
        elif call_tracker.changed:
            round_tracker.take_candidate(call_tracker)
    return result
