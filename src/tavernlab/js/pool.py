"""The worker pool: where JavaScript jobs wait, run, get cancelled and fail safely.

JavaScript never runs in the notebook kernel. A :class:`WorkerPool` keeps ``size`` warm
worker processes (:mod:`tavernlab.js.worker`) and runs one job per worker at a time.

Ownership: a pool is an ordinary object. Whoever creates one owns it and ends it with
:meth:`WorkerPool.close` (or ``with WorkerPool() as pool:``), which stops its workers; a
``Lab`` can own a pool or share one. :func:`default_pool` is the process-wide instance, used
by the ``js`` command and the legacy ``skill.run_script`` whenever no pool is passed, and
closed at interpreter exit. It is shared on purpose: upstream caps concurrent QuickJS
executions at **2 per process** (spec/js-and-skills.md 2, 7.7), not per workspace or per run,
so every lab of one kernel should use the default pool unless it deliberately wants its own
workers (tests, benchmarks, an isolated lab).

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
import threading
import time
from collections import deque
from multiprocessing.connection import Connection
from typing import Any

from tavernlab.cancel import CancelToken
from tavernlab.errors import Cancelled
from tavernlab.js.errors import CapabilityError, PoolClosedError, WorkerStartError
from tavernlab.js.job import CapabilityServer, Job, JobOutcome
from tavernlab.js.limits import MAX_CONCURRENT_JOBS
from tavernlab.js.process import POLL_SLICE, WorkerProcess
from tavernlab.js.stopping import NotStarted, StopRequest, route_sigint

#: How long a stopping worker may take before it is killed.
DEFAULT_GRACE = 0.25
#: How long a new worker may take to announce itself.
START_TIMEOUT = 20.0


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
        self._idle: deque[WorkerProcess] = deque()
        self._busy: set[WorkerProcess] = set()
        self._running: dict[int, int] = {}
        self._pid = os.getpid()
        self._started = False
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------------

    def _ensure_started(self) -> None:
        """Start the workers on first use (and again in a forked child). Holds ``_cond``."""
        if self._closed:
            raise PoolClosedError()
        if self._pid != os.getpid():
            self._idle.clear()
            self._busy.clear()
            self._queue.clear()
            self._pid = os.getpid()
            self._started = False
        if not self._started:
            for _ in range(self.size):
                worker = WorkerProcess()
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

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker (killing those running a job); later jobs fail with
        :class:`~tavernlab.js.errors.PoolClosedError`."""
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

    def _acquire(self, deadline: float, stop: StopRequest) -> WorkerProcess:
        with self._cond:
            self._ensure_started()
            reason = stop.poll(deadline)
            if reason is not None:
                raise NotStarted(reason)
            ticket = object()
            self._queue.append(ticket)
            try:
                while not (self._queue[0] is ticket and self._idle):
                    reason = stop.poll(deadline)
                    if reason is not None:
                        raise NotStarted(reason)
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
                raise NotStarted(stop.poll(deadline) or "deadline")
        except WorkerStartError:
            self._release(worker)
            raise
        return worker

    def _ready(self, worker: WorkerProcess, deadline: float, stop: StopRequest) -> bool:
        """Wait for a (re)started worker, restarting it once if it died or hung starting."""
        for attempt in range(2):
            give_up = time.monotonic() + START_TIMEOUT
            try:
                while not worker.wait_ready(min(deadline, give_up,
                                                time.monotonic() + POLL_SLICE)):
                    if stop.poll(deadline) is not None:
                        return False
                    if time.monotonic() >= give_up:
                        raise WorkerStartError("The JavaScript worker process did not start "
                                           f"within {START_TIMEOUT:.0f} s.")
                if worker.proc is not None and worker.proc.poll() is not None:
                    raise WorkerStartError(
                        f"The JavaScript worker process exited while idle: {worker.death()}")
                return True
            except WorkerStartError:
                if attempt:
                    raise
                worker.kill()
                worker.start()
        return False

    def _release(self, worker: WorkerProcess) -> None:
        with self._cond:
            self._busy.discard(worker)
            if self._closed:
                worker.kill()
            else:
                self._idle.append(worker)
            self._cond.notify_all()

    # -- running --------------------------------------------------------------------------------

    def run(self, job: Job, server: CapabilityServer, *,
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
        stop = StopRequest(token)
        fault: BaseException | None = None
        with route_sigint(stop):
            try:
                try:
                    worker = self._acquire(queue_deadline, stop)
                except NotStarted as exc:
                    outcome = JobOutcome("interrupted", reason=exc.reason)
                else:
                    limit = (queue_deadline if time_limit is None
                             else min(queue_deadline, time.monotonic() + time_limit))
                    try:
                        outcome, fault = self._drive(worker, job, server, limit, stop)
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

    def _drive(self, worker: WorkerProcess, job: Job, server: CapabilityServer,
               deadline: float, stop: StopRequest) -> tuple[JobOutcome, BaseException | None]:
        """Feed the job to ``worker`` and serve it until it reports, dies or is killed."""
        assert worker.conn is not None and worker.proc is not None
        conn = worker.conn
        with self._cond:
            self._running[threading.get_ident()] = worker.pid or 0
        try:
            return self._serve(worker, conn, job, server, deadline, stop)
        finally:
            with self._cond:
                self._running.pop(threading.get_ident(), None)

    def _serve(self, worker: WorkerProcess, conn: Connection, job: Job,
               server: CapabilityServer, deadline: float, stop: StopRequest
               ) -> tuple[JobOutcome, BaseException | None]:
        assert worker.proc is not None
        worker.send(("job", job, deadline))
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
                    try:
                        server.output(message[1], message[2])
                    except Exception as exc:  # a failing output callback: stop, re-raise
                        fault = exc
                        stop.reason = "cancel"
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
    def _crashed(worker: WorkerProcess) -> JobOutcome:
        pid = worker.pid
        why = worker.death()
        worker.kill()
        worker.start()
        return JobOutcome("crashed", pid=pid,
                          text=f"The JavaScript worker process exited unexpectedly ({why}).")


_DEFAULT: WorkerPool | None = None
_DEFAULT_LOCK = threading.Lock()


def default_pool() -> WorkerPool:
    """The process-wide pool (2 workers: upstream's per-process cap), created on first use,
    created again after someone closed it, and closed at interpreter exit."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None or _DEFAULT.closed:
            _DEFAULT = WorkerPool()
            atexit.register(_DEFAULT.close)
        return _DEFAULT
