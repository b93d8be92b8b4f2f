"""The interpreter behind ``workspace.shell``: a small interface and its bashkit implementation.

:class:`ShellEngine` is the seam (docs/shell.md): ``run(command, workdir, deadline,
cancel)`` returns an :class:`EngineRun` (outcome, exit status, captured streams, truncation).
:class:`BashkitEngine` is the real one. Each call gets an interpreter in the state of a
**fresh** ``bashkit.Bash``: a kept one (:class:`KeptInterpreters`; never two threads at once)
that ``reset()`` returned to exactly a new one's state as the call took it, or a new one:

* the whole virtual filesystem is one :class:`~tavernlab.shell._bridge.WorkspaceBridge` mounted
  at ``/`` (bashkit's own ``/dev``, ``/home``, ``/tmp``... are shadowed; ``/dev/null`` keeps
  working because the interpreter handles it itself), so the visible roots are the only
  top-level entries and, in a session workspace, ``/tmp`` is the session's ``tmp/`` root;
* environment ``HOME=/``, ``PWD=<workdir>``, nothing from the host. The embedded Python subset
  needs ``BASHKIT_ALLOW_INPROCESS_PYTHON=1`` at construction; a one-line prelude unsets it
  again (and bashkit's default ``OLDPWD``), seeds ``$RANDOM`` under a fixed clock and enters
  the workdir before the command runs;
* ``ExecutionProfile.Interactive``: no command-count or loop-iteration caps, so the deadline
  is what stops endless loops and fork bombs: at the deadline the :class:`Watchdog` calls
  ``Bash.cancel()`` (the interpreter's own ``timeout_seconds`` is fixed when it is built, so a
  kept one has none) and the call reports a timeout;
* the caps of 128 KiB per stream are enforced here from the streamed output, so what was
  printed before a timeout, a cancellation or a failure is kept;
* custom builtins (forwarding to the call's own :class:`~tavernlab.shell._commands.ShellCommands`,
  so they see its bridge, deadline and cancel token): ``js``/``node``/``deno`` (the QuickJS
  sandbox), under a fixed clock ``date``, and two replacements of
  bashkit builtins that do not fit the bridge - ``sleep`` (bashkit's sleep ignores
  cancellation; ours waits on the cancel token and the deadline) and ``touch`` (bashkit's
  touch needs settable file times, which the workspace does not have);
* cancellation: the call's :class:`~tavernlab.cancel.CancelToken` triggers ``Bash.cancel()``
  (the interpreter stops at its next scheduling point) and the bridge's check refuses new file
  operations, while an operation already started runs to completion. On the main thread a
  keyboard interrupt cancels the call the same way (:func:`execute_interruptibly`).
"""

from __future__ import annotations

import heapq
import itertools
import shlex
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import bashkit

from tavernlab.cancel import CancelToken
from tavernlab.js import InputBudget
from tavernlab.shell._bridge import WorkspaceBridge
from tavernlab.shell._commands import ShellCommands
from tavernlab.shell._interpreters import _PYTHON_PERMISSION, KEPT, KeptInterpreter, forks
from tavernlab.shell._limits import MAX_STREAM_BYTES
from tavernlab.shell._resources import (
    DEFAULT_HELPER,
    INTERRUPTS,
    InterruptWatch,
    MainThreadHelper,
    ShellOptions,
    ShellResources,
)
from tavernlab.shell._result import ShellOutcome
from tavernlab.workspace.macros import FrozenContext, FrozenMacros
from tavernlab.workspace.scope import ScopedWorkspaceFs

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

    __slots__ = ("_err", "_err_size", "_out", "_out_size", "limit", "truncated")

    def __init__(self, limit: int = MAX_STREAM_BYTES) -> None:
        self.limit = limit
        self.truncated = False
        self._out: list[str] = []
        self._err: list[str] = []
        self._out_size = 0
        self._err_size = 0

    def feed(self, stdout: str, stderr: str) -> None:
        """``on_output`` callback: append one chunk of each stream."""
        if stdout:
            self._out_size = self._append(self._out, self._out_size, stdout)
        if stderr:
            self._err_size = self._append(self._err, self._err_size, stderr)

    def _append(self, parts: list[str], size: int, text: str) -> int:
        """Keep what fits of ``text`` in a stream of ``size`` bytes; its new size."""
        room = self.limit - size
        if room <= 0:
            self.truncated = True
            return size
        data = text.encode("utf-8")
        if len(data) > room:
            text = data[:room].decode("utf-8", errors="ignore")
            data = text.encode("utf-8")
            self.truncated = True
        parts.append(text)
        return size + len(data)

    @property
    def stdout(self) -> str:
        """Captured stdout."""
        return "".join(self._out)

    @property
    def stderr(self) -> str:
        """Captured stderr."""
        return "".join(self._err)


def _tee(first: Callable[[str, str], None], second: Callable[[str, str], None]
         ) -> Callable[[str, str], None]:
    """One ``on_output`` callback that hands each chunk to ``first``, then ``second``."""

    def both(stdout: str, stderr: str) -> None:
        first(stdout, stderr)
        second(stdout, stderr)
    return both


def _is_timeout(error: str) -> bool:
    """bashkit's execution and parser timeouts (``resource limit exceeded: execution
    timeout (…)``)."""
    return "timeout" in error.lower()


def execute_interruptibly(bash: bashkit.Bash, command: str,
                          on_output: Callable[[str, str], None], cancel: CancelToken,
                          helper: MainThreadHelper = DEFAULT_HELPER,
                          interrupts: InterruptWatch = INTERRUPTS) -> bashkit.ExecResult:
    """``bash.execute_sync(command)``, interruptible from the keyboard in the main thread.

    On the main thread (a notebook cell, the CLI) a Jupyter interrupt or Ctrl-C cancels the
    call (``cancel``) at once; the main thread keeps waiting until the interpreter and every
    file operation it started have finished, then the ``KeyboardInterrupt`` is re-raised.
    The interpreter runs in place, under :class:`~tavernlab.shell._resources.InterruptWatch`
    (an interrupt is noted, never raised inside one of its callbacks); where that watch does
    not apply (another ``SIGINT`` handler, a signal wake-up descriptor already set) it runs on
    the helper thread while the main thread waits, interruptibly. On any other thread the
    interpreter simply runs in place.
    """
    if threading.current_thread() is not threading.main_thread():
        return bash.execute_sync(command, on_output=on_output)
    seen = interrupts.begin(cancel)
    if seen is not None:
        try:
            result: bashkit.ExecResult = bash.execute_sync(command, on_output=on_output)
        finally:
            interrupts.end()
        if seen.arrived:
            cancel.cancel("interrupted")  # already, unless it came as the call returned
            raise KeyboardInterrupt
        return result
    call = helper.submit(bash.execute_sync, command, on_output=on_output)
    interrupted: KeyboardInterrupt | None = None
    while True:
        try:
            result = call.wait()
            break
        except KeyboardInterrupt as exc:
            interrupted = interrupted or exc
            cancel.cancel("interrupted")
    if interrupted is not None:
        raise interrupted
    return result


class Watchdog:
    """One thread that rings an alarm at a ``time.monotonic()`` instant unless it was
    disarmed first: the deadline of a call on a kept interpreter (whose own timeout is fixed
    when it is built). Created on first use and again in a forked child.

    Arming costs a heap push; the thread is woken only when the new alarm is the earliest,
    and disarmed alarms are dropped when the thread next looks at the heap, so a stream of
    calls that finish in time wakes it about once per deadline span."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, _Stop]] = []
        self._order = itertools.count()
        #: The :func:`~tavernlab.shell._interpreters.forks` count of the process whose
        #: thread serves the heap (-1: none yet).
        self._forks = -1

    def arm(self, alarm: _Stop) -> None:
        """Ring ``alarm`` (on the watchdog's thread) at its instant unless disarmed first."""
        when = alarm.when
        with self._cond:
            if self._forks != forks():
                self._heap = []
                self._forks = forks()
                threading.Thread(target=self._serve, name="tavernlab-shell-deadline",
                                 daemon=True).start()
            if len(self._heap) > 256:
                self._heap = [item for item in self._heap if item[2].armed]
                heapq.heapify(self._heap)
            earliest = not self._heap or when < self._heap[0][0]
            heapq.heappush(self._heap, (when, next(self._order), alarm))
            if earliest:
                self._cond.notify()

    def _serve(self) -> None:
        mine = forks()
        while True:
            with self._cond:
                if self._forks != mine:
                    return
                heap = self._heap
                while heap and not heap[0][2].armed:
                    heapq.heappop(heap)
                if not heap:
                    self._cond.wait()
                    continue
                wait = heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                alarm = heapq.heappop(heap)[2]
            alarm.fire()


_WATCHDOG = Watchdog()


class _Stop:
    """Stops one call's interpreter (``Bash.cancel()``) while the call is attached; a no-op
    before and after, so a late cancel callback or deadline never reaches the interpreter's
    next call. It is also the call's deadline alarm for the :class:`Watchdog`: :meth:`fire`
    runs once, at :attr:`when`, unless the stop was detached first, and notes that the
    deadline hit, then stops."""

    __slots__ = ("_bash", "armed", "deadline_hit", "lock", "when")

    def __init__(self, when: float) -> None:
        #: The call's deadline (a ``time.monotonic()`` instant).
        self.when = when
        #: The watchdog may still fire it.
        self.armed = True
        self.lock = threading.Lock()
        self._bash: bashkit.Bash | None = None
        #: The watchdog fired (the call's deadline passed while it ran).
        self.deadline_hit = False

    def attach(self, bash: bashkit.Bash) -> None:
        """From now on, stop ``bash``."""
        with self.lock:
            self._bash = bash

    def detach(self) -> None:
        """Disarm, and from now on do nothing (waits for a stop in progress): once this
        returns, :meth:`fire` is not running and never will."""
        with self.lock:
            self.armed = False
            self._bash = None

    def fire(self) -> None:
        """The deadline (the watchdog's thread): unless disarmed, note it and stop."""
        with self.lock:
            if self.armed:
                self.armed = False
                self.deadline_hit = True
                if self._bash is not None:
                    self._bash.cancel()

    def __call__(self) -> None:
        with self.lock:
            if self._bash is not None:
                self._bash.cancel()


def prelude(workdir: str, seed: int | None) -> str:
    """What runs before the command in its own ``execute``: drop the embedded Python's
    permission variable and bashkit's default ``OLDPWD``, seed ``$RANDOM`` (under a fixed
    clock), enter ``workdir``. Its exit status is the ``cd``'s."""
    text = _PRELUDE if seed is None else f"{_PRELUDE}; RANDOM={seed % 32768}"
    if workdir != "/":
        text += f"; cd -- {shlex.quote(workdir)} && unset OLDPWD"
    return text


class BashkitEngine:
    """A bashkit interpreter reset to a new one's state for each call, over one call's
    scoped view."""

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
        feed = capture.feed if listener is None else _tee(capture.feed, listener)
        if deadline - time.monotonic() <= 0:
            return EngineRun(ShellOutcome.TIMED_OUT, None, "", "", False)
        stop = _Stop(deadline)
        budget = InputBudget()
        clock = options.clock
        bridge = WorkspaceBridge(self.scope, budget, on_fault=stop,
                                 file_time=None if clock is None else clock.now().timestamp())
        commands = ShellCommands(bridge, self.context, deadline, cancel, stop,
                                 pool=self.resources.pool, clock=clock, seed=options.seed)
        kept_ones = self.resources.interpreters
        if kept_ones is None:
            kept_ones = KEPT
        interpreter = kept_ones.take(clock is not None)
        kept = False
        # One hold of the workspace lock for the whole call (taken at its first file
        # operation, see WorkspaceFs.lease), so a pipeline over many files takes it once.
        with self.scope.fs.lease():
            try:
                interpreter.attach(bridge, commands)
                start = prelude(workdir, None if clock is None else options.seed)
                if interpreter.bash.execute_sync(start).exit_code != 0:
                    # the workdir went away since it was checked: a new interpreter started
                    # there, as if it were still a directory (never the root instead)
                    interpreter.close()
                    interpreter = KeptInterpreter(clock is not None, cwd=workdir)
                    interpreter.attach(bridge, commands)
                    interpreter.bash.execute_sync(prelude("/", None if clock is None
                                                          else options.seed))
                bash = interpreter.bash
                stop.attach(bash)
                _WATCHDOG.arm(stop)
                unregister = cancel.on_cancel(stop)
                try:
                    result = execute_interruptibly(bash, command, feed, cancel,
                                                   self.resources.helper)
                    kept = True
                finally:
                    unregister()
                    stop.detach()  # disarms the deadline too
                    del bash
            finally:
                interpreter.detach()
                kept = kept and interpreter.cwd == "/"
                if not kept:  # also when the call raised (an interrupt, a failure)
                    interpreter.close()
        if kept:
            kept_ones.give(interpreter)
        fault = bridge.internal_fault or commands.internal_fault
        if fault is not None:
            raise fault
        return classify(result, capture, cancelled=cancel.cancelled,
                        timed_out=(commands.timed_out or stop.deadline_hit
                                   or time.monotonic() >= deadline))


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
