"""One path for everything observable about a run: append, then tell the subscribers.

:class:`RunFeed` owns a run's ``events.jsonl`` and ``journal.jsonl``. Every event and journal
record is appended through it (validated when it is emitted, before anything is written),
then handed to each subscriber, in order, on the thread that wrote it. A subscriber's
exception is logged (logger ``tavernlab.subscribers``) and never breaks the run. Subscribers
that drive a user interface (widgets) must marshal what they receive to their own thread or
event loop.

Batches: inside :meth:`RunFeed.batch` (the host opens one per tool call and per ``run.js``
job) the records the batch's thread emits are held and written together - one locked append
to each file - when the batch ends or is :meth:`flushed <RunFeed.flush>` earlier: before
a record from any other thread (so the order stays the order of emission), before every read,
before a streaming tool hands output to its listener, and every half second while a call
runs (:mod:`tavernlab.host._activity`), so a long call is seen while it runs. Records are
numbered when they are written, and subscribers are told then: a subscriber sees every record,
in order, with its final ``seq``.

Reading merges the two files in one order: event ``N``, then the journal records written after
it (anchored at ``N``), then event ``N + 1``. ``after`` may be an event seq (an ``int``) or the
last record a caller received; pass the record to follow both files without repeats.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Iterable
from threading import get_ident
from typing import TypeVar

from tavernlab.events import (
    Built,
    Event,
    EventLog,
    EventScope,
    JournalLog,
    JournalRecord,
    Level,
    append_records,
    collector_paused,
    models_of,
)
from tavernlab.locks import shared_lock_if_present
from tavernlab.ondisk import Model

E = TypeVar("E", bound=Event)
J = TypeVar("J", bound=JournalRecord)
Callback = Callable[[Event], object]



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


class Batch:
    """The block of :meth:`RunFeed.batch` (a plain context manager: one per tool call)."""

    __slots__ = ("_feed", "_mine")

    def __init__(self, feed: RunFeed) -> None:
        self._feed = feed
        self._mine = False

    def __enter__(self) -> None:
        self._mine = self._feed._open_batch()

    def __exit__(self, *exc: object) -> None:
        if self._mine:
            self._feed._close_batch()


class RunFeed:
    """A run's events and journal, and the callbacks that follow them.

    ``on_written(batch_ended)`` is called after every write, on the writing thread, with the
    feed's lock held; ``batch_ended`` says whether the write ended a batch (or was outside
    one), as opposed to an early flush in the middle of one.
    """

    def __init__(self, events: EventLog, journal: JournalLog,
                 on_written: Callable[[bool], None] | None = None) -> None:
        self.events = events
        self.journal = journal
        self.on_written = on_written
        self._subscribers: tuple[Subscription, ...] = ()
        #: Held while records are queued, written and published (re-entrant: a subscriber
        #: may read the run).
        self.lock = threading.RLock()
        self._pending: list[Built] = []
        self._owner: int | None = None  # the thread whose batch is open
        self._depth = 0

    # -- writing ------------------------------------------------------------------------------

    def emit(self, kind: type[E], payload: Model | None, *, level: Level | None = None,
             scope: EventScope | None = None) -> None:
        """Append a typed event to ``events.jsonl`` and publish it (at once, or when the
        batch it belongs to is written; its ``seq`` is set then). The payload is validated
        now; the event's model is made only for subscribers."""
        with self.lock:  # _queue, inline (a tool call emits seven events)
            self._pending.append(self.events.build(kind, payload, level=level, scope=scope))
            if self._owner != get_ident():
                self._write(batch_ended=self._owner is None)

    def note(self, kind: type[J], payload: Model) -> str:
        """Append a journal record and publish it (like :meth:`emit`); returns its id."""
        with self.lock:
            built = self.journal.build(kind, payload)
            self._queue(built)
        return str(built[1]["id"])

    def note_all(self, kind: type[J], payloads: list[str]) -> None:
        """Append many journal records of one kind, in order, from payloads rendered as JSON
        text (:meth:`~tavernlab.events._log.JournalLog.lines_of`: no model is built unless
        a subscriber is told)."""
        with self.lock:
            self._pending.extend(self.journal.lines_of(kind, payloads))
            if self._owner != get_ident():
                self._write(batch_ended=self._owner is None)

    def _queue(self, built: Built) -> None:
        self._pending.append(built)
        if self._owner != get_ident():
            self._write(batch_ended=self._owner is None)

    def batch(self) -> Batch:
        """Hold the records this thread emits in the block and write them together when it
        ends (nested batches join the outer one). One thread holds records at a time: while
        another thread's batch is open, this thread's records are written at once (each
        flushing the open batch first, so the order stays the order of emission)."""
        return Batch(self)

    def _open_batch(self) -> bool:
        """Open (or join) this thread's batch; whether it is this thread's."""
        me = get_ident()
        with self.lock:
            mine = self._owner in (None, me)
            if mine:
                self._owner = me
                self._depth += 1
        return mine

    def _close_batch(self) -> None:
        """End one :meth:`_open_batch` that was this thread's; the outermost writes."""
        with self.lock:
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._write(batch_ended=True)

    @property
    def holding(self) -> bool:
        """Whether this thread has a batch open (its records are being held)."""
        return self._owner == get_ident()

    def flush(self) -> None:
        """Write and publish what an open batch holds (from any thread)."""
        if self._pending:
            with self.lock:
                self._write(batch_ended=False)

    def _write(self, *, batch_ended: bool) -> None:
        pending, self._pending = self._pending, []
        if pending:
            append_records(self.events, self.journal, pending)
        if self.on_written is not None and (pending or batch_ended):
            self.on_written(batch_ended)
        if self._subscribers:
            for make, data in pending:
                for record in models_of(make, data):
                    self._tell(record)

    def _tell(self, record: Event) -> None:
        for subscription in self._subscribers:
            if subscription.closed:
                continue
            try:
                subscription.callback(record)
            except Exception:
                import logging  # only when a subscriber fails (it costs ms to import)

                logging.getLogger("tavernlab.subscribers").exception(
                    "a subscriber of run %s failed on %s", self.events.run_id, record.type)

    # -- following ----------------------------------------------------------------------------

    def subscribe(self, callback: Callback) -> Subscription:
        """Call ``callback(record)`` for every new event and journal record, in order."""
        subscription = Subscription(self, callback)
        with self.lock:
            self._subscribers = (*self._subscribers, subscription)
        return subscription

    def _remove(self, subscription: Subscription) -> None:
        with self.lock:
            self._subscribers = tuple(s for s in self._subscribers if s is not subscription)

    @property
    def subscribers(self) -> int:
        """How many subscriptions are open."""
        return len(self._subscribers)

    # -- reading ------------------------------------------------------------------------------

    def read(self, after: int | Event | None = None, *, types: Iterable[str] | None = None,
             journal: bool = True) -> list[Event]:
        """Events (and journal records, unless ``journal`` is false) after ``after``, merged
        in order; ``types`` keeps only those types (lines of other types are skipped
        unparsed). Only lines after the position are parsed; what an open batch holds is
        written first. The records are built in bulk with the garbage collector paused
        (:mod:`tavernlab.events._reading` says why)."""
        self.flush()
        if isinstance(after, JournalRecord):
            event_after, journal_after, anchor = after.event_seq, after.seq, after.event_seq
        else:
            event_after = after.seq if isinstance(after, Event) else (after or 0)
            journal_after, anchor = 0, event_after
        wanted = None if types is None else frozenset(types)
        # A shared lock on events.jsonl for both reads: a writer holds it exclusively while it
        # appends a batch's events and journal records, so a reader in another process (or
        # thread) never sees the one half without the other (lab.follow's order).
        with shared_lock_if_present(self.events.path), \
                collector_paused():  # over the merge too: see workspace.log_reading
            records: list[Event] = self.events.read(event_after, types=wanted)
            if not journal:
                return records
            notes = self.journal.read(journal_after, from_event_seq=anchor, types=wanted)
            return list(heapq.merge(records, notes, key=order_key)) if notes else records
