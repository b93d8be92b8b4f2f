"""Sequenced JSON-lines logs: a run's ``events.jsonl`` (and the journal beside it).

spec/workspace.md 8.3: every line carries ``seq`` from 1, +1 per append. Appends hold an
``flock`` on the log itself, so two processes appending to one run still get contiguous
numbers; the last ``seq`` is re-read only when the file grew behind this process's back. A
record is built and validated *before* anything is written: a bad payload raises and the log
stays readable.

Reading after a sequence number is incremental: each log remembers the byte offset of every
line it has seen, so ``read(after_seq=n)`` seeks straight to line ``n + 1`` and parses only
what follows. Lines appended by another process are found by scanning forward from the last
known offset (counting newlines, not parsing JSON).
"""

from __future__ import annotations

import json
import os
import threading
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
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
    parse_event,
)
from tavernlab.locks import locked_open

E = TypeVar("E", bound=Event)
J = TypeVar("J", bound=JournalRecord)

_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT
_SCAN_CHUNK = 1 << 20


class SequencedLog:
    """An append-only JSON-lines file whose lines carry contiguous ``seq`` numbers from 1."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._known_size = -1
        self._seq = 0
        #: ``_offsets[k]`` is the byte offset of the line with ``seq == k + 1``.
        self._offsets = array("q")
        self._indexed_to = 0  # bytes of the file covered by ``_offsets``

    @property
    def last_seq(self) -> int:
        """The last ``seq`` this process has written or indexed."""
        return self._seq

    def append_line(self, build: Callable[[int], tuple[Any, dict[str, Any]]]) -> Any:
        """Append one record: ``build(seq)`` returns ``(record, json_object)``; it runs under
        the lock, so it may raise (nothing is written then). Returns the record."""
        with self._lock, locked_open(self.path, _APPEND) as fd:
            size = os.fstat(fd).st_size
            if size != self._known_size:
                self._index_to(size)
            record, data = build(self._seq + 1)
            line = (json.dumps(data, ensure_ascii=False) + "\n").encode("utf-8")
            os.write(fd, line)
            self._wrote(data)
            self._offsets.append(size)
            self._seq += 1
            self._known_size = self._indexed_to = size + len(line)
        return record

    def _index_to(self, size: int) -> None:
        """Index the lines between the last indexed offset and ``size`` (another writer's)."""
        if size < self._indexed_to:  # replaced behind our back: start over
            self._offsets, self._indexed_to, self._seq = array("q"), 0, 0
        if size == self._indexed_to:
            self._known_size = size
            return
        with open(self.path, "rb") as handle:
            handle.seek(self._indexed_to)
            position = self._indexed_to
            pending_start = position
            carry = b""
            while position < size:
                chunk = handle.read(min(_SCAN_CHUNK, size - position))
                if not chunk:
                    break
                start = 0
                while (newline := chunk.find(b"\n", start)) >= 0:
                    self._offsets.append(pending_start)
                    self._indexed_line(carry + chunk[start:newline])
                    carry = b""
                    pending_start = position + newline + 1
                    start = newline + 1
                carry += chunk[start:]
                position += len(chunk)
        self._indexed_to = pending_start
        self._seq = len(self._offsets)
        self._known_size = size

    def _indexed_line(self, line: bytes) -> None:
        """A line another writer appended was indexed (subclasses keep more per line)."""

    def _wrote(self, data: dict[str, Any]) -> None:
        """This process appended the line of ``data`` (subclasses keep more per line)."""

    def refresh(self) -> None:
        """Index what other writers appended since the last look."""
        if self.path.exists():
            with self._lock:
                self._index_to(self.path.stat().st_size)

    def read_lines(self, after_seq: int = 0) -> Iterator[bytes]:
        """The raw lines with ``seq > after_seq``, in order (complete lines only)."""
        return self._read_from(lambda: after_seq)

    def _read_from(self, first: Callable[[], int]) -> Iterator[bytes]:
        """The raw lines from index ``first()`` (computed under the lock) to the end."""
        if not self.path.exists():
            return
        with self._lock:
            self._index_to(self.path.stat().st_size)
            index = max(first(), 0)
            if index >= len(self._offsets):
                return
            start = self._offsets[index]
            end = self._indexed_to
        with open(self.path, "rb") as handle:
            handle.seek(start)
            data = handle.read(end - start)
        for line in data.split(b"\n"):
            if line.strip():
                yield line


class EventLog(SequencedLog):
    """A run's ``events.jsonl``: upstream's envelope, typed events only."""

    def __init__(self, path: Path, run_id: str, *, clock: Clock, ids: IdFactory) -> None:
        super().__init__(path)
        self.run_id = run_id
        self.clock = clock
        self.ids = ids

    def append(self, kind: type[E], payload: Model, *, level: Level | None = None,
               scope: EventScope | None = None) -> E:
        """Append one typed event and return it. The event (payload included) is validated
        before the line is written; only upstream's event types exist as typed classes."""
        type_name = kind.type_name()
        if type_name not in EVENT_TYPES:
            raise ValueError(f"{kind.__name__} is not an upstream event type")

        def build(seq: int) -> tuple[E, dict[str, Any]]:
            event = kind(seq=seq, id=self.ids.new("evt"), run_id=self.run_id,
                         timestamp=self.clock.now(), level=level or kind.default_level(),
                         payload=payload, event_scope=scope)
            data: dict[str, Any] = {
                "seq": seq, "id": event.id, "runId": self.run_id,
                "timestamp": rfc3339(event.timestamp), "level": event.level, "type": type_name,
                "payload": payload.model_dump(mode="json", by_alias=True),
            }
            if scope is not None:
                data["eventScope"] = scope.model_dump(mode="json", by_alias=True)
            return event, data

        event: E = self.append_line(build)
        return event

    def read(self, after_seq: int = 0) -> list[Event]:
        """The events with ``seq > after_seq``, parsed into their typed models."""
        return [parse_event(json.loads(line)) for line in self.read_lines(after_seq)]


class JournalLog(SequencedLog):
    """A run's ``journal.jsonl``: journal records anchored on ``events.jsonl``
    (:mod:`tavernlab.events.journal`)."""

    def __init__(self, path: Path, events: EventLog) -> None:
        super().__init__(path)
        self.events = events
        #: ``_anchors[k]`` is the ``eventSeq`` of the line with ``seq == k + 1``.
        self._anchors = array("q")

    def append(self, kind: type[J], payload: Model) -> J:
        """Append one journal record, anchored on the last event written (by any process);
        validated before the line is written."""
        type_name = kind.type_name()
        if type_name not in JOURNAL_TYPES:
            raise ValueError(f"{kind.__name__} is not a journal record type")
        events = self.events
        with events._lock, locked_open(events.path, _APPEND) as fd:
            size = os.fstat(fd).st_size
            if size != events._known_size:
                events._index_to(size)
            anchor = events.last_seq

            def build(seq: int) -> tuple[J, dict[str, Any]]:
                record = kind(seq=seq, event_seq=anchor, id=events.ids.new("jrn"),
                              run_id=events.run_id, timestamp=events.clock.now(),
                              payload=payload)
                data: dict[str, Any] = {
                    "seq": seq, "eventSeq": anchor, "id": record.id, "runId": events.run_id,
                    "timestamp": rfc3339(record.timestamp), "level": record.level,
                    "type": type_name, "payload": payload.model_dump(mode="json", by_alias=True),
                }
                return record, data

            record: J = self.append_line(build)
        return record

    def _index_to(self, size: int) -> None:
        if size < self._indexed_to:
            self._anchors = array("q")
        super()._index_to(size)

    def _indexed_line(self, line: bytes) -> None:
        self._anchors.append(int(json.loads(line)["eventSeq"]))

    def _wrote(self, data: dict[str, Any]) -> None:
        self._anchors.append(int(data["eventSeq"]))

    def read(self, after_seq: int = 0, *, from_event_seq: int = 0) -> list[JournalRecord]:
        """The records with ``seq > after_seq`` anchored at ``from_event_seq`` or later
        (found by bisecting the anchors, so only those lines are parsed)."""
        lines = self._read_from(
            lambda: max(after_seq, bisect_left(self._anchors, from_event_seq)))
        records = [parse_event(json.loads(line)) for line in lines]
        return [r for r in records if isinstance(r, JournalRecord)]
