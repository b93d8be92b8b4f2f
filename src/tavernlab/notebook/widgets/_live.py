"""What every live run widget shares: following a run, closing, and its static snapshot.

:class:`RunInbox` subscribes to a run and keeps the records a widget wants until the pump
applies them (the subscription callback runs on the producing thread and must not touch the
widget). :class:`LiveWidget` is the anywidget base of the file tree and the timeline: closing
it unsubscribes and stops its updates, :meth:`LiveWidget.settle` waits for pending updates,
and its mimebundle carries ``text/plain`` and ``text/html`` snapshots beside the widget view.
Displayed in IPython, it writes the widget view and then its static view, a second output
kept current as the widget changes (see :mod:`~.fallback`), so a saved notebook reads well
where no kernel runs.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

from tavernlab.events import Event
from tavernlab.host import Run
from tavernlab.notebook.widgets._fallback import StaticView, show_with_static_view
from tavernlab.notebook.widgets._sync import StateSync, route_replies_to_frontend

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

    #: The ids of the static views this widget's view stands for (the browser hides them
    #: while the view shows).
    _hides = traitlets.List(traitlets.Unicode()).tag(sync=True)

    def _listen(self, run: Run, wanted: frozenset[str], *names: str) -> None:
        """Subscribe to ``run``: a record of a ``wanted`` type touches ``names``."""
        self._sync = None
        self._record_names = names
        self._on_applied: list[Callable[[], None]] = []
        self._statics: list[StaticView] = []
        self._inbox = RunInbox(run, wanted, lambda: self._sync_touch(*names))

    def _start(self, compute: Callable[[frozenset[str]], dict[str, Any]],
               snapshot: Snapshot) -> None:
        """Begin applying state on the pump thread (see :mod:`~.sync`)."""
        self._snapshot = snapshot
        self._sync = StateSync(self, compute, on_applied=self._applied)
        route_replies_to_frontend(self)
        self._sync.touch(*self._record_names)

    def _applied(self) -> None:
        for listener in list(self._on_applied):
            listener()

    def follow_changes(self, static: StaticView) -> None:
        """Keep ``static`` current with this widget and let the view hide it."""
        self._on_applied.append(static.touch)
        self._statics.append(static)
        self.set_trait("_hides", [*self._hides, static.id])

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
        self._on_applied = []
        for static in getattr(self, "_statics", ()):
            static.close()
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

    def _ipython_display_(self) -> None:
        """Display the widget view, then its static view (kept current)."""
        view = super()._repr_mimebundle_()
        if view is None:
            return
        static = StaticView(self.snapshot, self.settle)
        self.follow_changes(static)
        show_with_static_view(view, f"<{type(self).__name__} {getattr(self, 'run_id', '')}>",
                              static)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        text, html = self.snapshot()
        return {**data, "text/plain": text, "text/html": html}, metadata
