"""Sequenced JSON-lines logs: a run's ``events.jsonl`` (and the journal beside it).

spec/workspace.md 8.3: every line carries ``seq`` from 1, +1 per append. Appends hold an
``flock`` on the log itself, so two processes appending to one run still get contiguous
numbers. A record is built and validated *before* anything is written (a bad payload raises
and the log stays readable), and is numbered only when it is written: :func:`append_records`
writes any number of records of one run in one locked append per file, which is how the
host writes all the records of a tool call at once (:mod:`tavernlab.host.feed`).

Nothing here reads a whole log to append to it: when the file grew behind this process's back
(another writer), the last ``seq`` is read from its last line. Reading after a sequence number
is incremental: each log keeps the byte offset of every line it has indexed, so
``read(after_seq=n)`` seeks straight to line ``n + 1`` and parses only what follows; the index
is built the first time a read needs it, and extended from where it ended (counting newlines,
not parsing JSON). Reading parses in bulk (:mod:`tavernlab.workspace.log_reading`).
"""

from __future__ import annotations

import json
import os
import threading
from array import array
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterator, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any, TypeVar

from tavernlab.clock import Clock, IdFactory, rfc3339
from tavernlab.events import (
    EVENT_TYPES,
    JOURNAL_TYPES,
    Event,
    EventScope,
    JournalRecord,
    Level,
    Model,
)
from tavernlab.locks import locked_open
from tavernlab.workspace.log_reading import (
    CHUNK_BYTES,
    anchor_of,
    collector_paused,
    parse_all,
    parse_records,
    read_chunks,
    seq_of_last_line,
)

E = TypeVar("E", bound=Event)
J = TypeVar("J", bound=JournalRecord)

_APPEND = os.O_RDWR | os.O_APPEND | os.O_CREAT  # read: the last line when it grew

#: Journal record types whose byte offsets :attr:`JournalLog.written_at` keeps.
OFFSET_TYPES = frozenset({"subagent_started"})

#: A built record waiting to be written: how to make its model, and the JSON object of its
#: line (a journal record's has ``eventSeq``). The model is made only when somebody wants it
#: (a subscriber, or the caller of ``append``), after the line is numbered (:func:`model_of`):
#: a function that makes it, or ``None`` to parse it from the line (records built in bulk).
#: Either way the payload was validated before anything is written.
Maker = Callable[[dict[str, Any]], Event]
Built = tuple[Maker | None, dict[str, Any]]


class SequencedLog:
    """An append-only JSON-lines file whose lines carry contiguous ``seq`` numbers from 1."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._known_size = -1  # the file's size when this process last looked (-1: never)
        self._seq = 0  # the last seq of the file at ``_known_size``
        #: ``_offsets[k]`` is the byte offset of the line with ``seq == k + 1``; the index
        #: covers the first ``_indexed_to`` bytes of the file.
        self._offsets = array("q")
        self._indexed_to = 0

    @property
    def last_seq(self) -> int:
        """The last ``seq`` this process has written or seen."""
        return self._seq

    @property
    def known_size(self) -> int:
        """The file's size when this process last wrote or looked (``-1``: never)."""
        return self._known_size

    def position(self) -> tuple[int, int]:
        """``(size, last seq)`` of the file as this process knows it (looked up from the
        file's last line if it never did; a missing file is ``(0, 0)``)."""
        with self._lock:
            if self._known_size < 0:
                try:
                    fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
                except FileNotFoundError:
                    return 0, 0
                try:
                    self._catch_up(fd, os.fstat(fd).st_size)
                finally:
                    os.close(fd)
            return self._known_size, self._seq

    def known(self, size: int, seq: int) -> None:
        """The file is known to end at ``size`` with ``seq`` (a reopened run read its tail);
        appends then need not look at it again."""
        with self._lock:
            if self._known_size < 0:
                self._known_size, self._seq = size, seq

    # -- appending (the caller holds ``_lock`` and the file's flock) ----------------------------

    def _catch_up(self, fd: int, size: int) -> None:
        """Learn the last ``seq`` when the file changed behind our back (O(1): its last line)."""
        if size == self._known_size:
            return
        if size < self._indexed_to:  # replaced behind our back: start over
            self._reset_index()
        self._seq = len(self._offsets) if size == self._indexed_to else seq_of_last_line(
            fd, size)
        self._known_size = size

    def _reset_index(self) -> None:
        self._offsets, self._indexed_to = array("q"), 0

    def _write(self, fd: int, size: int, lines: list[bytes]) -> None:
        """Append ``lines`` (each ending with a newline) at ``size`` in one write."""
        data = b"".join(lines)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if self._indexed_to == size:  # the index was complete: keep it so
            self._offsets.extend(accumulate((len(line) for line in lines[:-1]), initial=size))
            self._indexed_to = size + len(data)
        self._known_size = size + len(data)
        self._seq += len(lines)

    # -- the index --------------------------------------------------------------------------

    def _index_to(self, size: int) -> None:
        """Index the lines between the last indexed offset and ``size`` (complete lines
        only; an unfinished last line is indexed once it ends)."""
        if size < self._indexed_to:
            self._reset_index()
        if size > self._indexed_to:
            with open(self.path, "rb") as handle:
                handle.seek(self._indexed_to)
                position, carry, remaining = self._indexed_to, b"", size - self._indexed_to
                while remaining > 0 and (chunk := handle.read(min(CHUNK_BYTES, remaining))):
                    remaining -= len(chunk)
                    data = carry + chunk
                    end = data.rfind(b"\n") + 1
                    if end:
                        lines = data[:end - 1].split(b"\n")
                        self._offsets.extend(accumulate((len(line) + 1 for line in lines[:-1]),
                                                        initial=position))
                        self._indexed_lines(lines)
                        position += end
                    carry = data[end:]
            self._indexed_to = position
        self._seq, self._known_size = len(self._offsets), size

    def _indexed_lines(self, lines: list[bytes]) -> None:
        """Lines were indexed (subclasses keep more per line)."""

    def refresh(self) -> None:
        """Index what other writers appended since the last look."""
        if self.path.exists():
            with self._lock:
                self._index_to(self.path.stat().st_size)

    # -- reading ----------------------------------------------------------------------------

    def read_lines(self, after_seq: int = 0) -> Iterator[bytes]:
        """The raw lines with ``seq > after_seq``, in order (complete lines only)."""
        for chunk in self._read_from(lambda: after_seq):
            yield from chunk

    def lines_from_offset(self, offset: int) -> Iterator[list[bytes]]:
        """The raw lines from the byte ``offset`` (a line start) to the end of the file as it
        is now, in chunks, without the index (a reopened run replays its tail this way)."""
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return
        yield from read_chunks(self.path, offset, size)

    def _read_from(self, first: Callable[[], int]) -> Iterator[list[bytes]]:
        """The raw lines from index ``first()`` (computed under the lock) to the end, in
        chunks of about :data:`CHUNK_BYTES` (memory stays bounded while reading)."""
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return
        with self._lock:
            self._index_to(size)
            index = max(first(), 0)
            if index >= len(self._offsets):
                return
            start, end = self._offsets[index], self._indexed_to
        yield from read_chunks(self.path, start, end)


class EventLog(SequencedLog):
    """A run's ``events.jsonl``: upstream's envelope, typed events only."""

    def __init__(self, path: Path, run_id: str, *, clock: Clock, ids: IdFactory) -> None:
        super().__init__(path)
        self.run_id = run_id
        self.clock = clock
        self.ids = ids

    def build(self, kind: type[E], payload: Model, *, level: Level | None = None,
              scope: EventScope | None = None) -> Built:
        """An event's line (stamped now, numbered when written) and the maker of its model;
        only upstream's event types exist as typed classes. ``payload`` must be a validated
        instance of the kind's payload model (anything else goes through the kind's own
        validation, which raises ``ValidationError``)."""
        type_name = kind.type_name()
        if type_name not in EVENT_TYPES:
            raise ValueError(f"{kind.__name__} is not an upstream event type")
        ident, moment = self.ids.new("evt"), self.clock.now()
        level = level or kind.default_level()
        run_id = self.run_id
        if not isinstance(payload, _payload_model(kind)):
            kind(seq=0, id=ident, run_id=run_id, timestamp=moment, level=level,
                 payload=payload, event_scope=scope)  # raises; or coerces nothing we keep

        def make(data: dict[str, Any]) -> Event:
            return kind(seq=data["seq"], id=ident, run_id=run_id, timestamp=moment,
                        level=level, payload=payload, event_scope=scope)

        data: dict[str, Any] = {
            "seq": 0, "id": ident, "runId": run_id, "timestamp": rfc3339(moment),
            "level": level, "type": type_name,
            "payload": payload.model_dump(mode="json", by_alias=True),
        }
        if scope is not None:
            data["eventScope"] = scope.model_dump(mode="json", by_alias=True)
        return make, data

    def append(self, kind: type[E], payload: Model, *, level: Level | None = None,
               scope: EventScope | None = None) -> E:
        """Append one typed event and return it (validated before the line is written)."""
        built = self.build(kind, payload, level=level, scope=scope)
        append_records(self, None, [built])
        return model_of(*built)  # type: ignore[return-value]

    def read(self, after_seq: int = 0, *, types: Collection[str] | None = None) -> list[Event]:
        """The events with ``seq > after_seq`` (of ``types`` only, if given), parsed into
        their typed models."""
        return parse_all(self._read_from(lambda: after_seq), types)


class JournalLog(SequencedLog):
    """A run's ``journal.jsonl``: journal records anchored on ``events.jsonl``
    (:mod:`tavernlab.events.journal`)."""

    def __init__(self, path: Path, events: EventLog) -> None:
        super().__init__(path)
        self.events = events
        #: ``_anchors[k]`` is the ``eventSeq`` of the line with ``seq == k + 1``.
        self._anchors = array("q")
        #: Byte offset of each ``subagent_started`` record this process wrote, by record id:
        #: a reopened run finds its sub-agents there without reading the journal.
        self.written_at: dict[str, int] = {}

    def build(self, kind: type[J], payload: Model) -> Built:
        """A journal record's line (numbered and anchored when written) and the maker of its
        model (see :meth:`EventLog.build`)."""
        type_name = kind.type_name()
        if type_name not in JOURNAL_TYPES:
            raise ValueError(f"{kind.__name__} is not a journal record type")
        events = self.events
        ident, moment, run_id = events.ids.new("jrn"), events.clock.now(), events.run_id
        if not isinstance(payload, _payload_model(kind)):
            kind(seq=0, event_seq=0, id=ident, run_id=run_id, timestamp=moment,
                 payload=payload)  # raises

        def make(data: dict[str, Any]) -> Event:
            return kind(seq=data["seq"], event_seq=data["eventSeq"], id=ident, run_id=run_id,
                        timestamp=moment, payload=payload)

        data: dict[str, Any] = {
            "seq": 0, "eventSeq": 0, "id": ident, "runId": run_id,
            "timestamp": rfc3339(moment), "level": kind.default_level(),
            "type": type_name, "payload": payload.model_dump(mode="json", by_alias=True),
        }
        return make, data

    def lines_of(self, kind: type[J], payloads: Sequence[dict[str, Any]]) -> list[Built]:
        """Records of one kind from payloads already in their on-disk form (the model's
        camelCase keys, in its field order, JSON values the caller has checked), without
        building a model each: a run started from a large persist state journals a record
        per file. The ids and times are taken in order, one per record, as one by one."""
        type_name = kind.type_name()
        if type_name not in JOURNAL_TYPES:
            raise ValueError(f"{kind.__name__} is not a journal record type")
        events = self.events
        new_id, now, run_id = events.ids.new, events.clock.now, events.run_id
        level = kind.default_level()
        with collector_paused():  # tens of thousands of acyclic dicts (see log_reading)
            return [(None, {"seq": 0, "eventSeq": 0, "id": new_id("jrn"), "runId": run_id,
                            "timestamp": rfc3339(now()), "level": level, "type": type_name,
                            "payload": payload})
                    for payload in payloads]

    def append(self, kind: type[J], payload: Model) -> J:
        """Append one journal record, anchored on the last event written (by any process);
        validated before the line is written."""
        built = self.build(kind, payload)
        append_records(self.events, self, [built])
        return model_of(*built)  # type: ignore[return-value]

    def offset_of(self, seq: int) -> int:
        """The byte offset of the indexed line with ``seq``."""
        return self._offsets[seq - 1]

    def _reset_index(self) -> None:
        super()._reset_index()
        self._anchors = array("q")

    def _write(self, fd: int, size: int, lines: list[bytes]) -> None:
        indexed = self._indexed_to == size
        super()._write(fd, size, lines)
        if not indexed:
            return
        self._anchors.extend(anchor_of(line) for line in lines)

    def _indexed_lines(self, lines: list[bytes]) -> None:
        self._anchors.extend(anchor_of(line) for line in lines)

    def read(self, after_seq: int = 0, *, from_event_seq: int = 0,
             types: Collection[str] | None = None) -> list[JournalRecord]:
        """The records with ``seq > after_seq`` anchored at ``from_event_seq`` or later
        (found by bisecting the anchors, so only those lines are parsed), of ``types`` only
        if given."""
        chunks = self._read_from(
            lambda: max(after_seq, bisect_left(self._anchors, from_event_seq)))
        return [r for r in parse_all(chunks, types) if isinstance(r, JournalRecord)]


def model_of(make: Maker | None, data: dict[str, Any]) -> Event:
    """The model of a written (numbered) record."""
    return make(data) if make is not None else parse_records([_line(data)])[0]


_PAYLOADS: dict[type[Any], type[Any]] = {}


def _payload_model(kind: type[Event]) -> type[Any]:
    """The payload model a typed event or journal record class requires."""
    model = _PAYLOADS.get(kind)
    if model is None:
        annotation = kind.model_fields["payload"].annotation
        model = _PAYLOADS[kind] = annotation if isinstance(annotation, type) else object
    return model


#: ``json.dumps(..., ensure_ascii=False)`` without building an encoder per line.
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode


def _line(data: dict[str, Any]) -> bytes:
    return (_ENCODE(data) + "\n").encode("utf-8")


def append_records(events: EventLog, journal: JournalLog | None, built: Sequence[Built]
                   ) -> None:
    """Number and write ``built`` (events and journal records of one run, in their order):
    the events in one locked append to ``events.jsonl``, then the journal records in one
    locked append to ``journal.jsonl``, each anchored on the last event before it (in
    ``built`` or, for those before any, already in the file). The lines' ``seq`` and
    ``eventSeq`` are set here (a model is made from them afterwards). The exclusive lock on
    ``events.jsonl`` is held over both halves, so a reader holding it shared
    (:meth:`tavernlab.host.feed.RunFeed.read`) sees a whole batch or none of it."""
    with events._lock, locked_open(events.path, _APPEND) as fd:
        size = os.fstat(fd).st_size
        events._catch_up(fd, size)
        seq = events.last_seq
        event_lines: list[bytes] = []
        notes: list[dict[str, Any]] = []
        for _, data in built:
            if "eventSeq" in data:  # a journal record: anchored on the last event before it
                data["eventSeq"] = seq
                notes.append(data)
            else:
                seq += 1
                data["seq"] = seq
                event_lines.append(_line(data))
        if event_lines:
            events._write(fd, size, event_lines)
        if notes:
            assert journal is not None, "journal records need the journal"
            _append_journal(journal, notes)


def _append_journal(journal: JournalLog, notes: list[dict[str, Any]]) -> None:
    """The journal half of :func:`append_records` (the events' lock is held)."""
    with journal._lock, locked_open(journal.path, _APPEND) as fd:
        size = os.fstat(fd).st_size
        journal._catch_up(fd, size)
        lines = []
        offset = size
        for number, data in enumerate(notes, start=journal.last_seq + 1):
            data["seq"] = number
            line = _line(data)
            if data["type"] in OFFSET_TYPES:
                journal.written_at[data["id"]] = offset
            offset += len(line)
            lines.append(line)
        journal._write(fd, size, lines)
