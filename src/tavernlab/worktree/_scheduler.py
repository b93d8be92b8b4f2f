"""The provisioning scheduler (docs/worktrees.md): a fair, capped FIFO for heavy phases.

``worktree.provision`` runs its heavy phases (clone, deps, copy, setup) under one slot of a
process-wide queue, so a burst of agents does not start twenty ``pnpm install`` at once. The
queue is fair across callers (the caller holding the fewest slots goes first), respects
per-repository caps and can hold new work while the host's load average is too high.

The core is non-blocking: :meth:`ProvisionScheduler.request` returns a
:class:`concurrent.futures.Future` that resolves to a :class:`Lease` when a slot is granted;
:meth:`ProvisionScheduler.acquire` waits for it. Grants happen synchronously inside
``request``/``release``/``configure``/cancel, so their order is deterministic.

The cap is process-wide, as upstream's: :func:`provision_scheduler` is the one default
instance every provision of the process shares (two labs in one kernel still start at most
``concurrency`` installs together). A separately constructed scheduler has its own queue and
:meth:`ProvisionScheduler.close` rejects what still waits in it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from tavernlab.cancel import CancelToken
from tavernlab.worktree._errors import ProvisionCancelledError
from tavernlab.worktree._limits import UNLIMITED, ProvisionLimits, load_provision_limits


class Lease:
    """A granted slot; :meth:`release` is idempotent."""

    def __init__(self, scheduler: ProvisionScheduler, repo_key: str, caller_key: str) -> None:
        self._scheduler = scheduler
        self.repo_key = repo_key
        self.caller_key = caller_key
        self._released = False

    def release(self) -> None:
        """Give the slot back (only the first call counts) and admit the next waiter."""
        self._scheduler._release(self)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass(eq=False)
class _Waiter:
    repo_key: str
    caller_key: str
    seq: int
    future: Future[Lease]
    on_queued: Callable[[int], None] | None
    reported: int = 0
    unsubscribe: Callable[[], None] | None = None
    lease: Lease | None = None


class ProvisionScheduler:
    """A fair FIFO with a global cap, per-repository caps and a load-average guard.

    ``load_average`` and ``cpu_count`` are injectable so the guard can be exercised on any
    host; the guard's re-check timer is a daemon thread and never keeps the process alive.
    """

    def __init__(self, limits: ProvisionLimits | None = None, *,
                 load_average: Callable[[], float] | None = None,
                 cpu_count: Callable[[], int] | None = None,
                 load_poll_ms: float = 5000) -> None:
        self._lock = threading.RLock()
        self._limits = limits or ProvisionLimits()
        self._running: list[Lease] = []
        self._queue: list[_Waiter] = []
        self._seq = itertools.count()
        self._load_average = load_average or (lambda: os.getloadavg()[0])
        self._cpu_count = cpu_count or (lambda: os.cpu_count() or 1)
        self.load_poll_ms = load_poll_ms
        self._timer: threading.Timer | None = None

    @property
    def limits(self) -> ProvisionLimits:
        """The limits in force."""
        return self._limits

    def configure(self, limits: ProvisionLimits) -> None:
        """Replace the limits; raising admits waiters at once, lowering interrupts nothing."""
        with self._lock:
            self._limits = limits
        self._dispatch()

    def snapshot(self) -> dict[str, float]:
        """``{running, queued, limit}`` (``limit`` is ``math.inf`` when unlimited)."""
        with self._lock:
            return {"running": len(self._running), "queued": len(self._queue),
                    "limit": self._limits.concurrency}

    @property
    def timer_armed(self) -> bool:
        """Whether a load-guard re-check is pending."""
        return self._timer is not None

    def request(self, repo_key: str, caller_key: str = "anonymous",
                signal: CancelToken | None = None,
                on_queued: Callable[[int], None] | None = None) -> Future[Lease]:
        """Queue for a slot; the future resolves to a :class:`Lease` or fails with
        :class:`ProvisionCancelledError`. An already-cancelled signal never queues."""
        waiter = self._waiter(repo_key, caller_key, on_queued)
        self._enqueue(waiter, signal)
        return waiter.future

    def acquire(self, repo_key: str, caller_key: str = "anonymous",
                signal: CancelToken | None = None,
                on_queued: Callable[[int], None] | None = None) -> Lease:
        """Wait for a slot (see :meth:`request`).

        A ``KeyboardInterrupt`` while queueing or waiting takes the waiter out of the queue
        (or, if the slot was granted in the same instant, gives the slot back) before it
        propagates, so an interrupted provision never holds or later receives a slot nobody
        releases.
        """
        waiter = self._waiter(repo_key, caller_key, on_queued)
        try:
            self._enqueue(waiter, signal)
            return waiter.future.result()
        except KeyboardInterrupt:
            self._abandon(waiter)
            raise

    def close(self) -> None:
        """Reject every waiter still queued (``ProvisionCancelledError``) and stop the
        load-guard timer; leases already granted stay valid until released."""
        with self._lock:
            waiters, self._queue = list(self._queue), []
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        for waiter in waiters:
            if waiter.unsubscribe is not None:
                waiter.unsubscribe()
            with contextlib.suppress(Exception):  # already resolved
                waiter.future.set_exception(
                    ProvisionCancelledError("worktree provisioning scheduler closed"))

    # -- internals -------------------------------------------------------------------------

    def _waiter(self, repo_key: str, caller_key: str,
                on_queued: Callable[[int], None] | None) -> _Waiter:
        return _Waiter(repo_key, caller_key, next(self._seq), Future(), on_queued)

    def _enqueue(self, waiter: _Waiter, signal: CancelToken | None) -> None:
        if signal is not None and signal.cancelled:
            waiter.future.set_exception(ProvisionCancelledError())
            return
        with self._lock:
            self._queue.append(waiter)
        if signal is not None:
            waiter.unsubscribe = signal.on_cancel(lambda: self._cancel(waiter))
        self._dispatch()

    def _abandon(self, waiter: _Waiter) -> None:
        """Undo an interrupted :meth:`acquire`: dequeue the waiter or release its slot."""
        with self._lock:
            queued = waiter in self._queue
            lease = waiter.lease
        if queued:
            self._cancel(waiter)
        elif lease is not None:
            lease.release()

    def _cancel(self, waiter: _Waiter) -> None:
        with self._lock:
            if waiter not in self._queue:
                return  # granted already: cancelling after the grant does nothing
            self._queue.remove(waiter)
        if waiter.unsubscribe is not None:
            waiter.unsubscribe()
        with contextlib.suppress(Exception):  # an interrupted grant may have settled it
            waiter.future.set_exception(
                ProvisionCancelledError("worktree provisioning cancelled while queued"))
        self._dispatch()

    def _release(self, lease: Lease) -> None:
        with self._lock:
            if lease._released:
                return
            lease._released = True
            if lease in self._running:
                self._running.remove(lease)
        self._dispatch()

    def _projected_order(self) -> list[_Waiter]:
        held: dict[str, int] = {}
        for lease in self._running:
            held[lease.caller_key] = held.get(lease.caller_key, 0) + 1
        remaining = list(self._queue)
        order = []
        while remaining:
            pick = min(remaining, key=lambda w: (held.get(w.caller_key, 0), w.seq))
            remaining.remove(pick)
            order.append(pick)
            held[pick.caller_key] = held.get(pick.caller_key, 0) + 1
        return order

    def _repo_cap(self, repo_key: str) -> float:
        per_repo = self._limits.per_repo
        if repo_key in per_repo:
            cap = per_repo[repo_key]
        else:
            cap = per_repo.get(os.path.basename(repo_key.rstrip("/\\")), UNLIMITED)
        return min(cap, self._limits.concurrency)

    def _load_blocked(self) -> bool:
        factor = self._limits.load_factor
        if factor <= 0 or not self._running:
            return False
        try:
            return self._load_average() > self._cpu_count() * factor
        except OSError:
            return False

    def _arm_timer(self) -> None:
        if self._timer is not None:
            return
        timer = threading.Timer(self.load_poll_ms / 1000, self._on_timer)
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _on_timer(self) -> None:
        with self._lock:
            self._timer = None
        self._dispatch()

    def _dispatch(self) -> None:
        """Grant what the limits allow, then report queue positions. Each grant is settled
        inside the lock (lease recorded on the waiter, future resolved), so an interrupt
        landing in a dispatch never strands a granted slot without an owner to release it."""
        granted: list[_Waiter] = []
        notices: list[tuple[Callable[[int], None], int]] = []
        with self._lock:
            while self._queue and len(self._running) < self._limits.concurrency:
                if self._load_blocked():
                    self._arm_timer()
                    break
                pick = None
                for waiter in self._projected_order():
                    in_repo = sum(1 for lease in self._running
                                  if lease.repo_key == waiter.repo_key)
                    if in_repo < self._repo_cap(waiter.repo_key):
                        pick = waiter
                        break
                if pick is None:
                    break
                lease = Lease(self, pick.repo_key, pick.caller_key)
                pick.lease = lease
                self._queue.remove(pick)
                self._running.append(lease)
                pick.future.set_result(lease)
                granted.append(pick)
            if not self._queue and self._timer is not None:
                self._timer.cancel()
                self._timer = None
            for index, waiter in enumerate(self._projected_order(), start=1):
                if waiter.on_queued is not None and waiter.reported != index:
                    waiter.reported = index
                    notices.append((waiter.on_queued, index))
        for waiter in granted:
            if waiter.unsubscribe is not None:
                waiter.unsubscribe()
        for callback, position in notices:
            with contextlib.suppress(Exception):  # observers never break the queue
                callback(position)


_scheduler: ProvisionScheduler | None = None
_scheduler_lock = threading.Lock()


def provision_scheduler() -> ProvisionScheduler:
    """The process-wide scheduler, created on first use from ``~/.agentproto/config.json``
    and ``AGENTPROTO_WORKTREES_PROVISION_CONCURRENCY``."""
    global _scheduler
    with _scheduler_lock:
        if _scheduler is None:
            _scheduler = ProvisionScheduler(load_provision_limits())
        return _scheduler


def reset_provision_scheduler(scheduler: ProvisionScheduler | None = None) -> None:
    """Close the process-wide scheduler and replace it (``None``: build a fresh one from the
    configuration on next use). For tests and for re-reading a changed configuration."""
    global _scheduler
    with _scheduler_lock:
        old, _scheduler = _scheduler, scheduler
    if old is not None and old is not scheduler:
        old.close()
