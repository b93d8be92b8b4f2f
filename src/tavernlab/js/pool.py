"""The worker pool: where JavaScript jobs wait, run, get cancelled and fail safely.

JavaScript never runs in the notebook kernel. A :class:`WorkerPool` keeps ``size`` warm
worker processes (:mod:`tavernlab.js.worker`; default 2, upstream's process-wide cap on
concurrent QuickJS executions) and runs one job per worker at a time. :func:`default_pool` is
the kernel-wide instance shared by the ``js`` command and the legacy ``skill.run_script``.

A job runs in the calling thread (:meth:`WorkerPool.run`):

1. **Queue.** It waits FIFO for an idle worker. Waiting counts against its deadline; a cancel
   or a passed deadline while waiting ends it without running anything.
2. **Serve.** It sends the job and then answers the worker: console output goes to the
   server's ``output``; every capability call (``workspace.*``, ``macros.render``, ``log``) is
   served by the server in this thread - so the Invocation's ``ScopedWorkspaceFs``, its lock
   and its mutation tracker are used exactly as by the other tools.
3. **Stop.** Once cancellation is requested (the :class:`~tavernlab.cancel.CancelToken`, a
   KeyboardInterrupt, or the deadline) a call already being served finishes, every later call
   is refused (the guest sees the call fail, then jsbox interrupts it: see
   :mod:`tavernlab.js.worker`), and a cancel notice is sent. A worker that has not reported
   within ``grace`` seconds (a pure CPU loop: jsbox cannot be interrupted from outside) is
   killed and replaced by a fresh one started in the background. The worker's own jsbox
   timeout fires at the deadline; the parent's kill at ``deadline + grace`` is the hard
   backstop.
4. **Crash.** A worker that dies (SIGKILL, engine crash) fails only the job it was running,
   with ``The JavaScript worker process exited unexpectedly (...)``; it is replaced and the
   next job runs normally.

KeyboardInterrupt: when the waiting thread is the main thread, SIGINT is routed to the job for
its duration (cancel, let the worker stop or kill it), and ``KeyboardInterrupt`` is raised
after the job has been cleaned up; a second SIGINT kills the worker at once. In any other
thread a ``KeyboardInterrupt`` delivered to the waiting code does the same.

Workers are clean ``subprocess`` children (``sys.executable -m tavernlab.js.worker``), not
``fork`` copies: they inherit no threads, locks or kernel state, only one end of a Unix socket
pair. Startup costs about 0.1 s (measured in ``bench/js_sandbox.py``); the pool starts all
workers together on first use and keeps them warm.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from types import FrameType
from typing import IO, Any, Literal, Protocol

from tavernlab.cancel import CancelToken
from tavernlab.errors import Cancelled, TavernlabError
from tavernlab.js.limits import INTERRUPT_REASONS, MAX_CONCURRENT_JOBS

#: How long a stopping worker may take before it is killed.
DEFAULT_GRACE = 0.25
#: How long a new worker may take to announce itself.
START_TIMEOUT = 20.0
#: Wake-up interval of the waiting thread (cancel and deadline checks).
POLL_SLICE = 0.02
_INTERNAL_FRAME = re.compile(r"^\s*at .*<tavernlab:[^>]*>")


class SandboxError(TavernlabError):
    """The sandbox itself failed (a worker could not be started)."""

    code = "js.sandbox_failed"


class CapabilityError(Exception):
    """A capability call failed; the guest receives ``new <kind>(message)``."""

    def __init__(self, message: str, kind: Literal["Error", "TypeError", "RangeError"] = "Error"
                 ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind


class CapabilityServer(Protocol):
    """What a job needs from the parent: a place for output and answers to its calls."""

    def output(self, stream: int, text: str) -> None:
        """Console output of the job (1 = stdout, 2 = stderr), already counted by the worker."""

    def serve(self, op: str, a: Any, b: Any) -> Any:
        """Answer one capability call; raise :class:`CapabilityError` for a guest error."""


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """How a job ended.

    ``status`` is ``ok`` (``exit_code`` for the command; ``result_json``/``result_bytes`` for
    the legacy mode, ``result_json`` is ``None`` when the result was over its limit),
    ``error`` (``text`` and ``stack`` of the uncaught exception), ``interrupted`` (``reason``:
    ``deadline``, ``cancel``, ``memory`` or ``stack``) or ``crashed`` (``text`` says why).
    ``started``/``finished`` are the worker's ``time.monotonic()`` readings (comparable across
    processes); ``pid`` is the worker that ran it.
    """

    status: Literal["ok", "error", "interrupted", "crashed"]
    exit_code: int = 0
    result_json: str | None = None
    result_bytes: int = 0
    text: str = ""
    stack: str = ""
    reason: str | None = None
    started: float | None = None
    finished: float | None = None
    pid: int | None = None

    @classmethod
    def from_worker(cls, data: dict[str, Any], pid: int | None) -> JobOutcome:
        """Build from the worker's ``done`` message."""
        return cls(status=data["status"], exit_code=data.get("exit_code", 0),
                   result_json=data.get("result_json"), result_bytes=data.get("result_bytes", 0),
                   text=data.get("text", ""), stack=public_stack(data.get("stack", "")),
                   reason=data.get("reason"), started=data.get("started"),
                   finished=data.get("finished"), pid=pid)

    @property
    def message(self) -> str:
        """The failure text: the exception, or the interruption reason that replaces it."""
        if self.status == "interrupted" and self.reason is not None:
            return INTERRUPT_REASONS.get(self.reason, self.reason)
        return self.text

    @property
    def timed_out(self) -> bool:
        """Stopped by the deadline."""
        return self.status == "interrupted" and self.reason == "deadline"

    @property
    def cancelled(self) -> bool:
        """Stopped by cancellation."""
        return self.status == "interrupted" and self.reason == "cancel"


def public_stack(stack: str) -> str:
    """The stack without the sandbox's own frames and without the trailing newline."""
    lines = [line for line in stack.splitlines() if not _INTERNAL_FRAME.match(line)]
    return "\n".join(lines)


# --- one worker ------------------------------------------------------------------------------


class _Worker:
    """One worker process and the parent's end of its socket pair."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: Connection | None = None
        self.log: IO[bytes] | None = None
        self.pid: int | None = None
        self.ready = False

    def start(self) -> None:
        """Spawn the process (does not wait for it to be ready)."""
        mine, theirs = socket.socketpair()
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tavernlab.js.worker", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=self.log, env=env, start_new_session=True)
        finally:
            theirs.close()
        self.conn = Connection(mine.detach())
        self.pid = self.proc.pid
        self.ready = False

    def wait_ready(self, deadline: float) -> bool:
        """Wait for ``("ready", pid)``; ``False`` when the deadline passed first."""
        assert self.conn is not None and self.proc is not None
        while not self.ready:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                if self.conn.poll(min(remaining, POLL_SLICE)):
                    message = self.conn.recv()
                    self.ready = message[0] == "ready"
                elif self.proc.poll() is not None:
                    raise EOFError
            except (EOFError, OSError):
                raise SandboxError(
                    f"The JavaScript worker process could not start: {self.death()}") from None
        return True

    def send(self, message: tuple[Any, ...]) -> None:
        """Send one message (a dead worker is noticed by the reader)."""
        assert self.conn is not None
        with contextlib.suppress(OSError):
            self.conn.send(message)

    def death(self) -> str:
        """Why the process ended, plus the tail of its stderr if it wrote any."""
        assert self.proc is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=1.0)
        code = self.proc.returncode
        if code is None:
            why = "still running"
        elif code < 0:
            try:
                why = f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                why = f"killed by signal {-code}"
        else:
            why = f"exit status {code}"
        tail = ""
        if self.log is not None:
            with contextlib.suppress(OSError):
                self.log.seek(0)
                tail = self.log.read()[-2000:].decode("utf-8", "replace").strip()
        return f"{why}; {tail}" if tail else why

    def kill(self) -> None:
        """Kill the process and close the channel."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5.0)
        self.close()

    def close(self) -> None:
        """Close the channel and the stderr log."""
        if self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.close()
        if self.log is not None:
            with contextlib.suppress(OSError):
                self.log.close()

    def stop(self) -> None:
        """Ask an idle worker to exit, then make sure it is gone."""
        if self.proc is None:
            return
        self.send(("exit",))
        try:
            self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.close()


# --- stop requests ---------------------------------------------------------------------------


class _StopRequest:
    """Why a job must stop (``cancel`` / ``deadline``), set from any thread or a handler."""

    def __init__(self, token: CancelToken | None) -> None:
        self.token = token
        self.reason: str | None = None
        self.keyboard_interrupt = False
        self.urgent = False

    def poll(self, deadline: float) -> str | None:
        """The stop reason, noticing the token and the deadline."""
        if self.reason is None:
            if self.token is not None and self.token.cancelled:
                self.reason = "cancel"
            elif time.monotonic() >= deadline:
                self.reason = "deadline"
        return self.reason

    def interrupt(self) -> None:
        """A KeyboardInterrupt arrived: cancel; a second one kills the worker at once."""
        if self.keyboard_interrupt:
            self.urgent = True
        self.keyboard_interrupt = True
        if self.reason is None:
            self.reason = "cancel"


@contextlib.contextmanager
def _route_sigint(stop: _StopRequest) -> Iterator[None]:
    """In the main thread, turn SIGINT into a stop request for the job's duration."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.interrupt()

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main interpreter
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class _NotStarted(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --- the pool --------------------------------------------------------------------------------


class WorkerPool:
    """``size`` warm worker processes; jobs queue FIFO for them (see the module docstring)."""

    def __init__(self, size: int = MAX_CONCURRENT_JOBS, *, grace: float = DEFAULT_GRACE) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.size = size
        self.grace = grace
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()
        self._idle: deque[_Worker] = deque()
        self._busy: set[_Worker] = set()
        self._running: dict[int, int] = {}
        self._pid = os.getpid()
        self._started = False
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------------

    def _ensure_started(self) -> None:
        """Start the workers on first use (and again in a forked child). Holds ``_cond``."""
        if self._closed:
            raise SandboxError("The JavaScript worker pool is closed.")
        if self._pid != os.getpid():
            self._idle.clear()
            self._busy.clear()
            self._queue.clear()
            self._pid = os.getpid()
            self._started = False
        if not self._started:
            for _ in range(self.size):
                worker = _Worker()
                worker.start()
                self._idle.append(worker)
            self._started = True

    def warm(self, timeout: float = START_TIMEOUT) -> None:
        """Start every worker and wait until all are ready (used by benchmarks and tests)."""
        with self._cond:
            self._ensure_started()
            workers = list(self._idle)
        deadline = time.monotonic() + timeout
        for worker in workers:
            worker.wait_ready(deadline)

    def close(self) -> None:
        """Stop every worker; later jobs fail."""
        with self._cond:
            self._closed = True
            workers = list(self._idle) + list(self._busy)
            self._idle.clear()
        if self._pid != os.getpid():
            return
        for worker in workers:
            if worker in self._busy:
                worker.kill()
            else:
                worker.stop()

    def busy_pids(self) -> list[int]:
        """Process ids of the workers running a job right now."""
        with self._cond:
            return sorted(w.pid for w in self._busy if w.pid is not None)

    def running_jobs(self) -> dict[int, int]:
        """``{thread id: worker pid}`` of the jobs being served right now (diagnostics: which
        worker process runs the job a thread is waiting for)."""
        with self._cond:
            return dict(self._running)

    def worker_pids(self) -> list[int]:
        """Process ids of every worker."""
        with self._cond:
            return sorted(w.pid for w in (*self._idle, *self._busy) if w.pid is not None)

    # -- queueing -------------------------------------------------------------------------------

    def _acquire(self, deadline: float, stop: _StopRequest) -> _Worker:
        with self._cond:
            self._ensure_started()
            reason = stop.poll(deadline)
            if reason is not None:
                raise _NotStarted(reason)
            ticket = object()
            self._queue.append(ticket)
            try:
                while not (self._queue[0] is ticket and self._idle):
                    reason = stop.poll(deadline)
                    if reason is not None:
                        raise _NotStarted(reason)
                    self._cond.wait(POLL_SLICE)
                self._queue.popleft()
                worker = self._idle.popleft()
                self._busy.add(worker)
            except BaseException:
                with contextlib.suppress(ValueError):
                    self._queue.remove(ticket)
                self._cond.notify_all()
                raise
            self._cond.notify_all()
        try:
            if not self._ready(worker, deadline, stop):
                self._release(worker)
                raise _NotStarted(stop.poll(deadline) or "deadline")
        except SandboxError:
            self._release(worker)
            raise
        return worker

    def _ready(self, worker: _Worker, deadline: float, stop: _StopRequest) -> bool:
        """Wait for a (re)started worker, restarting it once if it died or hung starting."""
        for attempt in range(2):
            give_up = time.monotonic() + START_TIMEOUT
            try:
                while not worker.wait_ready(min(deadline, give_up,
                                                time.monotonic() + POLL_SLICE)):
                    if stop.poll(deadline) is not None:
                        return False
                    if time.monotonic() >= give_up:
                        raise SandboxError("The JavaScript worker process did not start "
                                           f"within {START_TIMEOUT:.0f} s.")
                if worker.proc is not None and worker.proc.poll() is not None:
                    raise SandboxError(
                        f"The JavaScript worker process exited while idle: {worker.death()}")
                return True
            except SandboxError:
                if attempt:
                    raise
                worker.kill()
                worker.start()
        return False

    def _release(self, worker: _Worker) -> None:
        with self._cond:
            self._busy.discard(worker)
            if self._closed:
                worker.kill()
            else:
                self._idle.append(worker)
            self._cond.notify_all()

    # -- running --------------------------------------------------------------------------------

    def run(self, spec: dict[str, Any], server: CapabilityServer, *,
            deadline: float | None = None, time_limit: float | None = None,
            token: CancelToken | None = None) -> JobOutcome:
        """Run one job (see the module docstring).

        ``deadline`` is a ``time.monotonic()`` instant covering queueing and execution (the
        shell's whole-call deadline); ``time_limit`` is an execution limit in seconds that
        starts when a worker takes the job (the legacy 30 s). At least one is required.
        Raises ``KeyboardInterrupt`` after cleaning up when one arrived.
        """
        if deadline is None and time_limit is None:
            raise ValueError("a job needs a deadline or a time limit")
        queue_deadline = deadline if deadline is not None else float("inf")
        stop = _StopRequest(token)
        fault: BaseException | None = None
        with _route_sigint(stop):
            try:
                try:
                    worker = self._acquire(queue_deadline, stop)
                except _NotStarted as exc:
                    outcome = JobOutcome("interrupted", reason=exc.reason)
                else:
                    limit = (queue_deadline if time_limit is None
                             else min(queue_deadline, time.monotonic() + time_limit))
                    try:
                        outcome, fault = self._drive(worker, spec, server, limit, stop)
                    finally:
                        self._release(worker)
            except KeyboardInterrupt:
                stop.interrupt()
                raise
        if fault is not None:
            raise fault
        if stop.keyboard_interrupt:
            raise KeyboardInterrupt
        return outcome

    def _drive(self, worker: _Worker, spec: dict[str, Any], server: CapabilityServer,
               deadline: float, stop: _StopRequest) -> tuple[JobOutcome, BaseException | None]:
        """Feed the job to ``worker`` and serve it until it reports, dies or is killed."""
        assert worker.conn is not None and worker.proc is not None
        conn = worker.conn
        with self._cond:
            self._running[threading.get_ident()] = worker.pid or 0
        try:
            return self._serve(worker, conn, spec, server, deadline, stop)
        finally:
            with self._cond:
                self._running.pop(threading.get_ident(), None)

    def _serve(self, worker: _Worker, conn: Connection, spec: dict[str, Any],
               server: CapabilityServer, deadline: float, stop: _StopRequest
               ) -> tuple[JobOutcome, BaseException | None]:
        assert worker.proc is not None
        worker.send(("job", dict(spec, deadline=deadline)))
        fault: BaseException | None = None
        stopping_since: float | None = None
        while True:
            try:
                try:
                    message = conn.recv() if conn.poll(POLL_SLICE) else None
                except (EOFError, OSError):
                    return self._crashed(worker), fault
                if message is None:
                    if worker.proc.poll() is not None:
                        return self._crashed(worker), fault
                elif message[0] == "done":
                    return JobOutcome.from_worker(message[1], worker.pid), fault
                elif message[0] == "out":
                    server.output(message[1], message[2])
                elif message[0] == "call":
                    reply: tuple[Any, ...]
                    reason = stop.poll(deadline)
                    if reason is not None:
                        reply = ("interrupt", reason)
                    else:
                        try:
                            reply = ("ok", server.serve(message[1], message[2], message[3]))
                        except CapabilityError as exc:
                            reply = ("error", exc.kind, exc.message)
                        except Cancelled:  # the scope's own cancel check (the shell's flag)
                            stop.reason = "cancel"
                            reply = ("interrupt", "cancel")
                        except Exception as exc:  # an internal fault: stop the job, re-raise
                            fault = exc
                            stop.reason = "cancel"
                            reply = ("interrupt", "cancel")
                    worker.send(("reply", reply))
            except KeyboardInterrupt:
                stop.interrupt()
                worker.kill()
                worker.start()
                return JobOutcome("interrupted", reason="cancel", pid=worker.pid), fault
            reason = stop.poll(deadline)
            if reason is None:
                continue
            now = time.monotonic()
            if stopping_since is None:
                stopping_since = now
                worker.send(("cancel", reason))
            if stop.urgent or now - stopping_since >= self.grace:
                pid = worker.pid
                worker.kill()
                worker.start()
                return JobOutcome("interrupted", reason=reason, pid=pid), fault

    @staticmethod
    def _crashed(worker: _Worker) -> JobOutcome:
        pid = worker.pid
        why = worker.death()
        worker.kill()
        worker.start()
        return JobOutcome("crashed", pid=pid,
                          text=f"The JavaScript worker process exited unexpectedly ({why}).")


_DEFAULT: WorkerPool | None = None
_DEFAULT_LOCK = threading.Lock()


def default_pool() -> WorkerPool:
    """The kernel-wide pool (2 workers), created on first use and closed at exit."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None or _DEFAULT._closed:
            _DEFAULT = WorkerPool()
            atexit.register(_DEFAULT.close)
        return _DEFAULT
