"""Widget state changed safely from any thread: one writer thread, updates coalesced.

A run's subscription callbacks arrive on whatever thread produced the record: the kernel's
main thread for a tool call in a cell, the journal's flusher thread during a long shell call,
a reader thread of a worktree hook. Writing widget traits from those threads directly is not
safe: ipywidgets serializes a value apart from the write, so concurrent writers can leave the
frontend on a stale value; and a flood of updates exceeds the Jupyter server's IOPub rate
limit (and zmq's high-water mark), which drops messages for good.

So a widget never writes its computed traits where a record arrives. The callback only
*touches* names (:meth:`StateSync.touch`, cheap and thread-safe); one process-wide daemon
thread, the *pump*, applies them at most every :data:`INTERVAL_S` per widget, computing each
value from the widget's current model at that moment, so many records cost one message.
Every computed trait therefore has exactly one writer thread. The pump is used instead of
the kernel's io loop (the usual recipe) because a callback marshalled to the io loop runs
only after the cell ends when the cell blocks, and these widgets must be live while a cell
runs; ipykernel queues comm messages sent from any thread on its IOPub thread, in order.

Frontend messages while a cell blocks: JupyterLab 4.6 sends widget messages on a kernel
subshell of their own, but ipykernel 7.4 routes a frontend message on a comm to the subshell
the comm last *published from* (``Comm._reply_subshell_id``) — for a widget created in a cell,
the main shell, where it waits behind the running cell. :func:`route_replies_to_frontend`
forgets that route after each publish, so clicks (a Cancel button, a timeline selection) are
handled on the frontend's subshell thread while the cell blocks. Without subshells (other
frontends, older kernels) nothing changes: the messages wait for the cell. This reaches
into ipykernel internals, feature-tested (tavernlab choice).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from tavernlab.clock import SYSTEM_CLOCK, Clock

#: The longest a touched name waits before the pump applies it.
INTERVAL_S = 0.05

Compute = Callable[[frozenset[str]], dict[str, Any]]

_log = logging.getLogger("tavernlab.widgets")


def route_replies_to_frontend(widget: Any) -> None:
    """Let the frontend's choice of kernel subshell stand for the messages of ``widget`` and
    of the widgets it contains (see the module docstring); a no-op without a kernel comm."""
    comm = getattr(widget, "comm", None)
    state = getattr(comm, "__dict__", None)
    if state is not None:
        state.pop("_reply_subshell_id", None)
    for child in getattr(widget, "children", ()) or ():
        route_replies_to_frontend(child)


class Flushable(Protocol):
    """What the pump serves: something with pending work to do on the pump thread."""

    def flush(self) -> None:
        """Do the pending work."""


class Pump:
    """The thread that applies pending widget state, in due order, for every widget."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self._due: list[tuple[float, int, Flushable]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def schedule(self, sync: Flushable, delay: float) -> None:
        """Flush ``sync`` ``delay`` seconds from now."""
        with self._wake:
            heapq.heappush(self._due, (self.clock.monotonic() + delay, next(self._order), sync))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, daemon=True,
                                                name="tavernlab-widgets")
                self._thread.start()
            self._wake.notify()

    def _serve(self) -> None:
        while True:
            with self._wake:
                while not self._due or self._due[0][0] > self.clock.monotonic():
                    timeout = self._due[0][0] - self.clock.monotonic() if self._due else None
                    self._wake.wait(timeout)
                _, _, sync = heapq.heappop(self._due)
            sync.flush()


#: The process-wide pump.
PUMP = Pump()
_PUMP = PUMP


class StateSync:
    """The pending computed traits of one widget, applied on the pump thread.

    ``compute(names)`` returns the new values of the touched names (it may add others);
    it runs on the pump thread only, so it may read the widget's model under the model's own
    lock and take its time. ``on_applied()`` is called after each write of new values. After
    :meth:`close` nothing is computed or written again.
    """

    def __init__(self, widget: Any, compute: Compute, *, interval: float = INTERVAL_S,
                 pump: Pump = _PUMP, on_applied: Callable[[], None] | None = None) -> None:
        self.widget = widget
        self.compute = compute
        self.on_applied = on_applied
        self.interval = interval
        self.pump = pump
        self._pending: set[str] = set()
        self._scheduled = False
        self._flushing = False
        self._closed = False
        self._state = threading.Condition()
        self._writing = threading.Lock()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def touch(self, *names: str, delay: float | None = None) -> None:
        """Ask for ``names`` to be recomputed and sent (safe from any thread, never blocks on
        the widget), within :attr:`interval` or, with ``delay``, that many seconds."""
        with self._state:
            if self._closed:
                return
            self._pending.update(names)
            if self._scheduled:
                return
            self._scheduled = True
        self.pump.schedule(self, self.interval if delay is None else delay)

    def flush(self) -> None:
        """Compute and write what is pending (the pump calls this; tests may too)."""
        with self._state:
            names, self._pending = frozenset(self._pending), set()
            self._scheduled = False
            if self._closed or not names:
                self._state.notify_all()
                return
            self._flushing = True
        try:
            self._apply(self.compute(names))
        except Exception:
            _log.exception("updating %s failed", type(self.widget).__name__)
        finally:
            with self._state:
                self._flushing = False
                self._state.notify_all()

    def _apply(self, values: dict[str, Any]) -> None:
        with self._writing:
            if self._closed:
                return
            for name, value in values.items():
                setattr(self.widget, name, value)
            route_replies_to_frontend(self.widget)
        if values and self.on_applied is not None:
            self.on_applied()

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until nothing is pending or being applied; ``False`` if ``timeout`` passed."""
        with self._state:
            return self._state.wait_for(
                lambda: self._closed or not (self._scheduled or self._flushing or self._pending),
                timeout)

    def close(self) -> None:
        """Drop what is pending; nothing is written after this returns (a flush already
        computing finishes its values but does not write them)."""
        with self._writing, self._state:
            self._closed = True
            self._pending.clear()
            self._state.notify_all()
