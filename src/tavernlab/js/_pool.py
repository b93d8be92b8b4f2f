"""The worker pool: where JavaScript jobs wait for a worker, and who owns the workers.

JavaScript never runs in the notebook kernel. A :class:`WorkerPool` keeps ``size`` warm
worker processes (:mod:`tavernlab.js._worker`) and runs one job per worker at a time.

Ownership: a pool is an ordinary object. Whoever creates one owns it and ends it with
:meth:`WorkerPool.close` (or ``with WorkerPool() as pool:``), which stops its workers; a
``Lab`` can own a pool or share one. :func:`default_pool` is the process-wide instance, used
by the ``js`` command and the legacy ``skill.run_script`` whenever no pool is passed, and
closed at interpreter exit. It is shared on purpose: upstream caps concurrent QuickJS
executions at **2 per process** (docs/js-and-skills.md), not per workspace or per run,
so every lab of one kernel should use the default pool unless it deliberately wants its own
workers (tests, benchmarks, an isolated lab).

A job runs in the calling thread (:meth:`WorkerPool.run`):

1. **Queue.** It takes an idle worker, or waits FIFO for one. A released worker is handed
   directly to the oldest waiting job, which alone is woken (through its wake pipe), so more
   submitting threads than workers cost no extra wake-ups. Waiting counts against the job's
   deadline; a cancel or a passed deadline while waiting ends it without running anything.
2. **Serve, stop, crash**: :mod:`tavernlab.js._serving`.
3. **Memory.** After each job the worker frees the job's Runtime and returns freed heap to
   the system; a worker whose resident memory still exceeds ``rss_limit`` (64 MiB) retires
   while idle, and the next job that takes it starts a fresh process in its place.

KeyboardInterrupt: when the waiting thread is the main thread, SIGINT is routed to the job for
its duration (cancel, let the worker stop or kill it), and ``KeyboardInterrupt`` is raised
after the job has been cleaned up; a second SIGINT kills the worker at once. In any other
thread a ``KeyboardInterrupt`` delivered to the waiting code does the same.

The pool starts all workers together on first use (again in a forked child) and keeps them
warm; see :mod:`tavernlab.js._process` for how a worker is spawned.
"""

from __future__ import annotations

import atexit
import math
import os
import threading
import time
from collections import deque

from tavernlab.cancel import CancelToken
from tavernlab.js._errors import PoolClosedError, WorkerStartError
from tavernlab.js._job import CapabilityServer, Job, JobOutcome
from tavernlab.js._limits import MAX_CONCURRENT_JOBS, WORKER_RSS_LIMIT
from tavernlab.js._process import WorkerProcess
from tavernlab.js._serving import serve_job
from tavernlab.js._stopping import NotStarted, StopRequest, route_sigint

#: How long a stopping worker may take before it is killed.
DEFAULT_GRACE = 0.25
#: How long a new worker may take to announce itself.
START_TIMEOUT = 20.0


class _Ticket:
    """A job waiting for a worker; the pool fills ``worker`` and wakes ``stop``."""

    __slots__ = ("stop", "worker")

    def __init__(self, stop: StopRequest) -> None:
        self.stop = stop
        self.worker: WorkerProcess | None = None


class WorkerPool:
    """``size`` warm worker processes; jobs queue FIFO for them (see the module docstring)."""

    def __init__(self, size: int = MAX_CONCURRENT_JOBS, *, grace: float = DEFAULT_GRACE,
                 rss_limit: int = WORKER_RSS_LIMIT) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.size = size
        self.grace = grace
        self.rss_limit = rss_limit
        self._lock = threading.Lock()
        self._waiting: deque[_Ticket] = deque()
        self._idle: deque[WorkerProcess] = deque()
        self._busy: set[WorkerProcess] = set()
        self._running: dict[int, int] = {}
        self._pid = os.getpid()
        self._started = False
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------------

    def _ensure_started(self) -> None:
        """Start the workers on first use (and again in a forked child). Holds ``_lock``."""
        if self._closed:
            raise PoolClosedError()
        if self._pid != os.getpid():
            self._idle.clear()
            self._busy.clear()
            self._waiting.clear()
            self._pid = os.getpid()
            self._started = False
        if not self._started:
            for _ in range(self.size):
                worker = WorkerProcess(self.rss_limit)
                worker.start()
                self._idle.append(worker)
            self._started = True

    def warm(self, timeout: float = START_TIMEOUT) -> None:
        """Start every worker and wait until all are ready (used by benchmarks and tests)."""
        with self._lock:
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
        :class:`~tavernlab.js._errors.PoolClosedError`."""
        with self._lock:
            self._closed = True
            idle, busy = list(self._idle), list(self._busy)
            self._idle.clear()
            for ticket in self._waiting:
                ticket.stop.wake()
        if self._pid != os.getpid():
            return
        for worker in busy:
            worker.kill()
        for worker in idle:
            worker.stop()

    def running_jobs(self) -> dict[int, int]:
        """``{thread id: worker pid}`` of the jobs being served right now (diagnostics: which
        worker process runs the job a thread is waiting for)."""
        with self._lock:
            return dict(self._running)

    def worker_pids(self) -> list[int]:
        """Process ids of every worker."""
        with self._lock:
            return sorted(w.pid for w in (*self._idle, *self._busy) if w.pid is not None)

    def worker_memory(self) -> dict[int, int | None]:
        """``{pid: resident bytes}``: what each worker held, idle, when it took its last job
        (see :attr:`WorkerProcess.rss`; ``None`` before its first job)."""
        with self._lock:
            return {w.pid: w.rss for w in (*self._idle, *self._busy) if w.pid is not None}

    # -- running --------------------------------------------------------------------------------

    def run(self, job: Job, server: CapabilityServer, *, deadline: float | None = None,
            time_limit: float | None = None, token: CancelToken | None = None) -> JobOutcome:
        """Run one job (see the module docstring).

        ``deadline`` is a ``time.monotonic()`` instant covering queueing and execution (the
        shell's whole-call deadline); ``time_limit`` is an execution limit in seconds that
        starts when a worker takes the job (the legacy 30 s). At least one is required.
        Raises ``KeyboardInterrupt`` after cleaning up when one arrived, and re-raises an
        exception the server raised.
        """
        if deadline is None and time_limit is None:
            raise ValueError("a job needs a deadline or a time limit")
        queue_deadline = deadline if deadline is not None else math.inf
        stop = StopRequest(token)
        try:
            with route_sigint(stop):
                try:
                    outcome, fault = self._execute(job, server, queue_deadline, time_limit,
                                                   stop)
                except KeyboardInterrupt:
                    stop.interrupt()
                    raise
        finally:
            stop.close()
        if fault is not None:
            raise fault
        if stop.keyboard_interrupt:
            raise KeyboardInterrupt
        return outcome

    def _execute(self, job: Job, server: CapabilityServer, queue_deadline: float,
                 time_limit: float | None, stop: StopRequest
                 ) -> tuple[JobOutcome, BaseException | None]:
        try:
            worker = self._acquire(queue_deadline, stop)
        except NotStarted as exc:
            return JobOutcome("interrupted", reason=exc.reason), None
        limit = (queue_deadline if time_limit is None
                 else min(queue_deadline, time.monotonic() + time_limit))
        thread = threading.get_ident()
        with self._lock:
            self._running[thread] = worker.pid or 0
        try:
            return serve_job(worker, job, server, limit, stop, self.grace)
        finally:
            with self._lock:
                self._running.pop(thread, None)
            self._release(worker)

    # -- queueing -------------------------------------------------------------------------------

    def _acquire(self, deadline: float, stop: StopRequest) -> WorkerProcess:
        """A ready worker for this job, or :class:`NotStarted`."""
        with self._lock:
            self._ensure_started()
            reason = stop.poll(deadline)
            if reason is not None:
                raise NotStarted(reason)
            ticket = _Ticket(stop)
            if self._idle and not self._waiting:
                ticket.worker = self._idle.popleft()
                self._busy.add(ticket.worker)
            else:
                self._waiting.append(ticket)
        worker = ticket.worker or self._wait_turn(ticket, deadline)
        try:
            ready = self._ready(worker, deadline, stop)
        except BaseException:
            self._release(worker)
            raise
        if not ready:
            self._release(worker)
            raise NotStarted(stop.poll(deadline) or "deadline")
        return worker

    def _wait_turn(self, ticket: _Ticket, deadline: float) -> WorkerProcess:
        """Sleep on the ticket's wake pipe until the pool hands it a worker or it must stop."""
        stop = ticket.stop
        while True:
            try:
                stop.wait_until(deadline)
            except BaseException:
                self._abandon(ticket)
                raise
            with self._lock:
                worker = ticket.worker
                if worker is not None:
                    return worker
                reason = stop.poll(deadline)
                if reason is not None or self._closed:
                    self._waiting.remove(ticket)
                    if self._closed:
                        raise PoolClosedError()
                    raise NotStarted(reason or "deadline")

    def _abandon(self, ticket: _Ticket) -> None:
        """A waiting job gives up: leave the queue, or pass on a worker it was just given."""
        with self._lock:
            worker = ticket.worker
            if worker is None:
                self._waiting.remove(ticket)
        if worker is not None:
            self._release(worker)

    def _ready(self, worker: WorkerProcess, deadline: float, stop: StopRequest) -> bool:
        """Make sure the worker can take a job: replace one that retired or died while idle,
        wait for a (re)started one, and restart once if it fails to start."""
        if worker.ready and not worker.readable():
            return True
        for attempt in range(2):
            try:
                if worker.ready:  # a message while idle: a retirement notice, or its death
                    worker.restart()
                start_limit = time.monotonic() + START_TIMEOUT
                while not worker.wait_ready(min(deadline, start_limit), stop.wake_fd):
                    stop.drain()
                    if stop.poll(deadline) is not None:
                        return False
                    if time.monotonic() >= start_limit:
                        raise WorkerStartError("The JavaScript worker process did not start "
                                               f"within {START_TIMEOUT:.0f} s.")
                return True
            except WorkerStartError:
                if attempt:
                    raise
                worker.restart()
        return False

    def _release(self, worker: WorkerProcess) -> None:
        """Hand the worker to the oldest waiting job, or put it back among the idle."""
        with self._lock:
            self._busy.discard(worker)
            if self._closed:
                worker.kill()
            elif self._waiting:
                ticket = self._waiting.popleft()
                ticket.worker = worker
                self._busy.add(worker)
                ticket.stop.wake()
            else:
                self._idle.append(worker)


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
