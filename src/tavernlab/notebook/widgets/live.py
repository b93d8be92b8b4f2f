"""What every live run widget shares: following a run, closing, and its static snapshot.

:class:`RunInbox` subscribes to a run and keeps the records a widget wants until the pump
applies them (the subscription callback runs on the producing thread and must not touch the
widget). :class:`LiveWidget` is the anywidget base of the file tree and the timeline: closing
it unsubscribes and stops its updates, :meth:`LiveWidget.settle` waits for pending updates,
and its mimebundle carries ``text/plain`` and ``text/html`` snapshots beside the widget view,
so a saved notebook reads well where no kernel runs.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import anywidget

from tavernlab.events import Event
from tavernlab.host import Run
from tavernlab.notebook.widgets.sync import StateSync, route_replies_to_frontend

#: ``snapshot() -> (text, html)``: a widget's current state as plain text and as
#: self-contained HTML (inline styles only).
Snapshot = Callable[[], tuple[str, str]]


class RunInbox:
    """The records of ``wanted`` types a run produced since the inbox opened."""

    def __init__(self, run: Run, wanted: frozenset[str], on_record: Callable[[], None]) -> None:
        self.wanted = wanted
        self.on_record = on_record
        self._records: deque[Event] = deque()
        self._lock = threading.Lock()
        self._closed = False
        self.subscription = run.subscribe(self._receive)

    def _receive(self, record: Event) -> None:
        if record.type not in self.wanted:
            return
        with self._lock:
            if self._closed:
                return
            self._records.append(record)
        self.on_record()

    def drain(self) -> list[Event]:
        """Take every record received so far, in order."""
        with self._lock:
            records = list(self._records)
            self._records.clear()
        return records

    @property
    def closed(self) -> bool:
        """Whether the inbox stopped following the run."""
        return self._closed

    def close(self) -> None:
        """Unsubscribe and drop what was not applied (safe twice, from any thread)."""
        with self._lock:
            self._closed = True
            self._records.clear()
        self.subscription.close()


class LiveWidget(anywidget.AnyWidget):
    """Base of the run widgets. A subclass calls :meth:`_listen` before
    ``super().__init__`` (so no record is missed while it reads its initial state) and
    :meth:`_start` after it (updates begin; what arrived meanwhile is applied)."""

    _sync: StateSync | None
    _inbox: RunInbox
    _snapshot: Snapshot

    def _listen(self, run: Run, wanted: frozenset[str], *names: str) -> None:
        """Subscribe to ``run``: a record of a ``wanted`` type touches ``names``."""
        self._sync = None
        self._record_names = names
        self._inbox = RunInbox(run, wanted, lambda: self._sync_touch(*names))

    def _start(self, compute: Callable[[frozenset[str]], dict[str, Any]],
               snapshot: Snapshot) -> None:
        """Begin applying state on the pump thread (see :mod:`~.sync`)."""
        self._snapshot = snapshot
        self._sync = StateSync(self, compute)
        route_replies_to_frontend(self)
        self._sync.touch(*self._record_names)

    def _sync_touch(self, *names: str) -> None:
        """Touch ``names`` once updates have begun (before that, the initial state covers
        them)."""
        sync = self._sync
        if sync is not None:
            sync.touch(*names)

    @property
    def closed(self) -> bool:
        """Whether the widget was closed (it no longer follows its run)."""
        return self._inbox.closed

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until every record received so far is shown (``False`` after ``timeout``)."""
        return self._sync is None or self._sync.settle(timeout)

    def close(self) -> None:
        """Stop following the run, then close the widget's views."""
        inbox = getattr(self, "_inbox", None)
        if inbox is not None:
            inbox.close()
        sync = getattr(self, "_sync", None)
        if sync is not None:
            sync.close()
        super().close()

    def snapshot(self) -> tuple[str, str]:
        """The widget's current state as plain text and as self-contained HTML."""
        return self._snapshot()

    def __str__(self) -> str:
        """The text snapshot (what ``print(widget)`` and ``display`` outside IPython show)."""
        return self.snapshot()[0]

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        text, html = self.snapshot()
        return {**data, "text/plain": text, "text/html": html}, metadata
