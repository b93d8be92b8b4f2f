"""The interpreter behind ``workspace.shell``: a small interface and its bashkit implementation.

:class:`ShellEngine` is the seam (docs/shell.md): ``run(command, workdir, deadline,
cancel)`` returns an :class:`EngineRun` (outcome, exit status, captured streams, truncation).
:class:`BashkitEngine` is the real one. Per call it builds a **fresh** ``bashkit.Bash``:

* the whole virtual filesystem is one :class:`~tavernlab.shell.bridge.WorkspaceBridge` mounted
  at ``/`` (bashkit's own ``/dev``, ``/home``, ``/tmp``... are shadowed; ``/dev/null`` keeps
  working because the interpreter handles it itself), so the visible roots are the only
  top-level entries and, in a session workspace, ``/tmp`` is the session's ``tmp/`` root;
* environment ``HOME=/``, ``PWD=<workdir>``, nothing from the host. The embedded Python subset
  needs ``BASHKIT_ALLOW_INPROCESS_PYTHON=1`` at construction; a one-line prelude unsets it
  again (and bashkit's default ``OLDPWD``) before the command runs;
* ``ExecutionProfile.Interactive``: no command-count or loop-iteration caps, so the deadline
  (bashkit's ``timeout_seconds`` = the time left) is what stops endless loops and fork bombs;
* the caps of 128 KiB per stream are enforced here from the streamed output, so what was
  printed before a timeout, a cancellation or a failure is kept;
* custom builtins: ``js``/``node``/``deno`` (the QuickJS sandbox), and two replacements of
  bashkit builtins that do not fit the bridge - ``sleep`` (bashkit's sleep ignores
  cancellation; ours waits on the cancel token and the deadline) and ``touch`` (bashkit's
  touch needs settable file times, which the workspace does not have);
* cancellation: the call's :class:`~tavernlab.cancel.CancelToken` triggers ``Bash.cancel()``
  (the interpreter stops at its next scheduling point) and the bridge's check refuses new file
  operations, while an operation already started runs to completion. On the main thread a
  keyboard interrupt cancels the call the same way (:func:`execute_interruptibly`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import bashkit

from tavernlab.cancel import CancelToken
from tavernlab.js.budget import InputBudget
from tavernlab.shell.bridge import WorkspaceBridge
from tavernlab.shell.commands import ShellCommands
from tavernlab.shell.limits import MAX_STREAM_BYTES
from tavernlab.shell.resources import (
    DEFAULT_HELPER,
    MainThreadHelper,
    ShellOptions,
    ShellResources,
)
from tavernlab.shell.result import ShellOutcome
from tavernlab.shell.vfs_abi import ExportedFilesystem
from tavernlab.workspace.context import FrozenContext
from tavernlab.workspace.macros import FrozenMacros
from tavernlab.workspace.scope import ScopedWorkspaceFs

_PYTHON_PERMISSION = "BASHKIT_ALLOW_INPROCESS_PYTHON"
_PRELUDE = f"unset {_PYTHON_PERMISSION} OLDPWD"


@dataclass(frozen=True, slots=True)
class EngineRun:
    """What the interpreter did: outcome, exit status (``None`` unless completed), the
    captured streams and whether a cap dropped output."""

    outcome: ShellOutcome
    exit_code: int | None
    stdout: str
    stderr: str
    truncated: bool


class ShellEngine(Protocol):
    """The interpreter seam: run ``command`` in ``workdir`` until done, ``deadline`` (a
    ``time.monotonic()`` instant) or ``cancel``."""

    def run(self, command: str, workdir: str, deadline: float, cancel: CancelToken,
            options: ShellOptions) -> EngineRun:
        """Run one command text in a fresh shell."""


class StreamCapture:
    """stdout and stderr as they are produced, each capped at ``limit`` UTF-8 bytes.

    Output past a cap is dropped and :attr:`truncated` is set; a multi-byte character cut by
    the cap is dropped whole.
    """

    def __init__(self, limit: int = MAX_STREAM_BYTES) -> None:
        self.limit = limit
        self.truncated = False
        self._parts: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._sizes = {"stdout": 0, "stderr": 0}

    def feed(self, stdout: str, stderr: str) -> None:
        """``on_output`` callback: append one chunk of each stream."""
        if stdout:
            self._append("stdout", stdout)
        if stderr:
            self._append("stderr", stderr)

    def _append(self, stream: str, text: str) -> None:
        room = self.limit - self._sizes[stream]
        if room <= 0:
            self.truncated = True
            return
        data = text.encode("utf-8")
        if len(data) > room:
            text = data[:room].decode("utf-8", errors="ignore")
            data = text.encode("utf-8")
            self.truncated = True
        self._parts[stream].append(text)
        self._sizes[stream] += len(data)

    @property
    def stdout(self) -> str:
        """Captured stdout."""
        return "".join(self._parts["stdout"])

    @property
    def stderr(self) -> str:
        """Captured stderr."""
        return "".join(self._parts["stderr"])


def _is_timeout(error: str) -> bool:
    """bashkit's execution and parser timeouts (``resource limit exceeded: execution
    timeout (…)``)."""
    return "timeout" in error.lower()


def execute_interruptibly(bash: bashkit.Bash, command: str,
                          on_output: Callable[[str, str], None], cancel: CancelToken,
                          helper: MainThreadHelper = DEFAULT_HELPER) -> bashkit.ExecResult:
    """``bash.execute_sync(command)``, interruptible from the keyboard in the main thread.

    On the main thread (a notebook cell, the CLI) the interpreter runs on a helper thread
    while the main thread waits, so a Jupyter interrupt or Ctrl-C reaches Python at once: it
    cancels the call (``cancel``), the main thread keeps waiting until the interpreter and
    every file operation it started have finished, then the ``KeyboardInterrupt`` is
    re-raised. On any other thread the interpreter simply runs in place.
    """
    if threading.current_thread() is not threading.main_thread():
        return bash.execute_sync(command, on_output=on_output)
    call = helper.submit(bash.execute_sync, command, on_output=on_output)
    interrupted: KeyboardInterrupt | None = None
    while True:
        try:
            result: bashkit.ExecResult = call.wait()
            break
        except KeyboardInterrupt as exc:
            interrupted = interrupted or exc
            cancel.cancel("interrupted")
    if interrupted is not None:
        raise interrupted
    return result


class BashkitEngine:
    """A fresh bashkit interpreter per call over one call's scoped view."""

    def __init__(self, scope: ScopedWorkspaceFs, context: FrozenContext | None,
                 resources: ShellResources) -> None:
        self.scope = scope
        self.resources = resources
        self.context = context if context is not None else FrozenContext(
            None, FrozenMacros.from_snapshot(None))

    def run(self, command: str, workdir: str, deadline: float, cancel: CancelToken,
            options: ShellOptions) -> EngineRun:
        """Run ``command``; raise the internal storage fault, if any, after the interpreter
        stopped (the tool call aborts instead of reporting a shell error)."""
        capture = StreamCapture()
        listener = options.on_output

        def feed(stdout: str, stderr: str) -> None:
            capture.feed(stdout, stderr)
            if listener is not None:
                listener(stdout, stderr)

        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return EngineRun(ShellOutcome.TIMED_OUT, None, "", "", False)
        holder: list[bashkit.Bash] = []

        def stop() -> None:
            for bash in holder:
                bash.cancel()

        budget = InputBudget()
        clock = options.clock
        bridge = WorkspaceBridge(self.scope, budget, on_fault=stop,
                                 file_time=None if clock is None else clock.now().timestamp())
        commands = ShellCommands(bridge, self.context, deadline, cancel, stop,
                                 pool=self.resources.pool, clock=clock, seed=options.seed)
        exported = ExportedFilesystem(bridge)
        # One hold of the workspace lock for the whole call (taken at its first file
        # operation, see WorkspaceFs.lease), so a pipeline over many files takes it once.
        with self.scope.fs.lease():
            try:
                bash = bashkit.Bash(
                    cwd=workdir,
                    env={"HOME": "/", _PYTHON_PERMISSION: "1"},
                    python=True,
                    profile=bashkit.ExecutionProfile.Interactive,
                    timeout_seconds=remaining,
                    custom_builtins=commands.builtins(),
                )
                bash.mount("/", exported.bashkit_fs)
                bash.execute_sync(_PRELUDE if clock is None
                                  else f"{_PRELUDE}; RANDOM={options.seed % 32768}")
                holder.append(bash)
                unregister = cancel.on_cancel(stop)
                try:
                    result = execute_interruptibly(bash, command, feed, cancel,
                                                   self.resources.helper)
                finally:
                    unregister()
                    holder.clear()
                    del bash
            finally:
                exported.close()
        fault = bridge.internal_fault or commands.internal_fault
        if fault is not None:
            raise fault
        return classify(result, capture, cancelled=cancel.cancelled,
                        timed_out=commands.timed_out or time.monotonic() >= deadline)


def classify(result: bashkit.ExecResult, capture: StreamCapture, *, cancelled: bool,
             timed_out: bool) -> EngineRun:
    """Map what the interpreter reported to the outcome table of docs/shell.md.

    Cancellation wins (the caller asked for it, whatever the interpreter was doing); then a
    deadline - ours, a ``js`` job's or bashkit's own execution/parser timeout; then any other
    interpreter error, whose text is reported as stderr; else the exit status.
    """
    error = result.error
    if cancelled:
        outcome = ShellOutcome.CANCELLED
    elif timed_out or (error and _is_timeout(error)):
        outcome = ShellOutcome.TIMED_OUT
    elif error:
        stderr = capture.stderr
        if not stderr.endswith((error, error + "\n")):
            capture.feed("", ("\n" if stderr and not stderr.endswith("\n") else "")
                         + error + "\n")
        outcome = ShellOutcome.FAILED
    else:
        return EngineRun(ShellOutcome.COMPLETED, result.exit_code, capture.stdout,
                         capture.stderr, capture.truncated)
    return EngineRun(outcome, None, capture.stdout, capture.stderr, capture.truncated)
