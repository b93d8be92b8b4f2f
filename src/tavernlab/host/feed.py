"""One path for everything observable about a run: append, then tell the subscribers.

:class:`RunFeed` owns a run's ``events.jsonl`` and ``journal.jsonl``. Every event and journal
record is appended through it (validated before the write), then handed to each subscriber,
in order, on the thread that produced it. A subscriber's exception is logged (logger
``tavernlab.subscribers``) and never breaks the run. Subscribers that drive a user interface
(widgets) must marshal what they receive to their own thread or event loop.

Reading merges the two files in one order: event ``N``, then the journal records written after
it (anchored at ``N``), then event ``N + 1``. ``after`` may be an event seq (an ``int``) or the
last record a caller received; pass the record to follow both files without repeats.
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from tavernlab.events import Event, EventScope, JournalRecord, Level, Model
from tavernlab.workspace.logs import EventLog, JournalLog

E = TypeVar("E", bound=Event)
J = TypeVar("J", bound=JournalRecord)
Callback = Callable[[Event], object]

_log = logging.getLogger("tavernlab.subscribers")


class Subscription:
    """A callback registered with :meth:`RunFeed.subscribe`; :meth:`close` stops it."""

    def __init__(self, feed: RunFeed, callback: Callback) -> None:
        self._feed = feed
        self.callback = callback
        self.closed = False

    def close(self) -> None:
        """Stop receiving records (safe to call twice, from any thread)."""
        if not self.closed:
            self.closed = True
            self._feed._remove(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def order_key(record: Event) -> tuple[int, int, int]:
    """A record's place in the merged order of the two files."""
    if isinstance(record, JournalRecord):
        return (record.event_seq, 1, record.seq)
    return (record.seq, 0, 0)


class RunFeed:
    """A run's events and journal, and the callbacks that follow them."""

    def __init__(self, events: EventLog, journal: JournalLog) -> None:
        self.events = events
        self.journal = journal
        self._subscribers: tuple[Subscription, ...] = ()
        self._publish = threading.RLock()

    # -- writing ------------------------------------------------------------------------------

    def emit(self, kind: type[E], payload: Model, *, level: Level | None = None,
             scope: EventScope | None = None) -> E:
        """Append a typed event to ``events.jsonl`` and publish it."""
        with self._publish:
            event = self.events.append(kind, payload, level=level, scope=scope)
            self._tell(event)
        return event

    def note(self, kind: type[J], payload: Model) -> J:
        """Append a journal record and publish it."""
        with self._publish:
            record = self.journal.append(kind, payload)
            self._tell(record)
        return record

    def _tell(self, record: Event) -> None:
        for subscription in self._subscribers:
            if subscription.closed:
                continue
            try:
                subscription.callback(record)
            except Exception:
                _log.exception("a subscriber of run %s failed on %s", self.events.run_id,
                               record.type)

    # -- following ----------------------------------------------------------------------------

    def subscribe(self, callback: Callback) -> Subscription:
        """Call ``callback(record)`` for every new event and journal record, in order."""
        subscription = Subscription(self, callback)
        with self._publish:
            self._subscribers = (*self._subscribers, subscription)
        return subscription

    def _remove(self, subscription: Subscription) -> None:
        with self._publish:
            self._subscribers = tuple(s for s in self._subscribers if s is not subscription)

    @property
    def subscribers(self) -> int:
        """How many subscriptions are open."""
        return len(self._subscribers)

    # -- reading ------------------------------------------------------------------------------

    def read(self, after: int | Event | None = None, *, types: Iterable[str] | None = None,
             journal: bool = True) -> list[Event]:
        """Events (and journal records, unless ``journal`` is false) after ``after``, merged
        in order; ``types`` keeps only those types. Only lines after the position are
        parsed."""
        if isinstance(after, JournalRecord):
            event_after, journal_after, anchor = after.event_seq, after.seq, after.event_seq
        else:
            event_after = after.seq if isinstance(after, Event) else (after or 0)
            journal_after, anchor = 0, event_after
        records: Iterator[Event] = iter(self.events.read(event_after))
        if journal:
            records = heapq.merge(records,
                                  self.journal.read(journal_after, from_event_seq=anchor),
                                  key=order_key)
        wanted = None if types is None else set(types)
        return [r for r in records if wanted is None or r.type in wanted]
