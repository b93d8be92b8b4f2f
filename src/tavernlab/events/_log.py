"""A run's ``events.jsonl`` and the journal beside it: building, numbering and writing their
records (the file's numbering and line index: :mod:`tavernlab.events._sequenced`).

The numbering (docs/events.md): every line carries ``seq`` from 1, +1 per append. Appends hold an
``flock`` on the log itself, so two processes appending to one run still get contiguous
numbers. A record is built and validated *before* anything is written (a bad payload raises
and the log stays readable), and is numbered only when it is written: :func:`append_records`
writes any number of records of one run in one locked append per file, which is how the
host writes all the records of a tool call at once (:mod:`tavernlab.host._feed`).

Nothing here reads a whole log to append to it, and ``read(after_seq=n)`` parses only the
lines after ``n`` (the index of :class:`~tavernlab.events._sequenced.SequencedLog`), in
bulk (:mod:`tavernlab.events._reading`). A record's model is made only when somebody
wants it (:data:`Built`).
"""

from __future__ import annotations

import hashlib
import os
from array import array
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterator, Sequence
from datetime import datetime
from functools import partial
from itertools import accumulate, repeat
from pathlib import Path
from typing import Any, TypeVar

import tavernlab.layout as layout
from tavernlab.clock import (
    Clock,
    IdFactory,
    RandomIds,
    SequentialIds,
    many_ids,
    rfc3339,
    stamps,
)
from tavernlab.errors import FileIo
from tavernlab.events import (
    EVENT_TYPES,
    JOURNAL_TYPES,
    Event,
    EventScope,
    JournalRecord,
    Level,
    LogRepaired,
    TornTail,
)
from tavernlab.events._encoding import encode as _ENCODE
from tavernlab.events._encoding import json_string, model_text
from tavernlab.events._journal import TORN_TEXT_CHARS
from tavernlab.events._reading import anchor_of, collector_paused, parse_all, parse_records
from tavernlab.events._sequenced import SequencedLog
from tavernlab.locks import locked_open
from tavernlab.ondisk import Model

E = TypeVar("E", bound=Event)
J = TypeVar("J", bound=JournalRecord)

_APPEND = os.O_RDWR | os.O_APPEND | os.O_CREAT  # read: the last line when it grew

#: Journal record types whose byte offsets :attr:`JournalLog.written_at` keeps.
OFFSET_TYPES = frozenset({"subagent_started"})

#: A built record waiting to be written: how to make its model, and its line as it stands
#: before it is numbered (:func:`_unnumbered`: ``seq`` - and a journal record's ``eventSeq`` -
#: set when it is written, ``id``, ``type`` and the rest of the line, already encoded). The
#: model is made only when somebody wants it (a subscriber, or the caller of ``append``),
#: after the line is numbered (:func:`model_of`): a function that makes it, or ``None`` to
#: parse it from the line (records built in bulk). Either way the payload was checked, and
#: the line encoded, before anything is written.
#: Journal records built in bulk (:meth:`JournalLog.lines_of`) are one entry of many lines:
#: its ``bulk`` holds the pieces of their lines (:data:`Bulk`) and ``ids`` their ids, numbered
#: one after the other when written (``seq`` is then the first one's), all anchored alike;
#: its ``rest`` is the first one's, as a lone record's.
Maker = Callable[[dict[str, Any]], Event]
Built = tuple[Maker | None, dict[str, Any]]
#: The pieces of a bulk entry's lines: the ids' JSON text without the quotes, the stamps, the
#: payloads' text, and the envelope's text between the id and the stamp and between the stamp
#: and the payload (:func:`_bulk_texts` makes the lines).
Bulk = tuple[Sequence[str], Sequence[str], Sequence[str], str, str]

#: Id factories whose ids are letters, digits and ``_`` only (their JSON text is the id).
_PLAIN_IDS = (RandomIds, SequentialIds)


class EventLog(SequencedLog):
    """A run's ``events.jsonl``: upstream's envelope, typed events only."""

    def __init__(self, path: Path, run_id: str, *, clock: Clock, ids: IdFactory) -> None:
        super().__init__(path)
        self.run_id = run_id
        self.clock = clock
        self.ids = ids
        #: The run's journal (set by :class:`JournalLog`): where a repair of this file is
        #: noted when the caller of an append gave none.
        self.journal: JournalLog | None = None
        self._run_json: tuple[str, str] | None = None
        #: The scope last written, its id and its text (see :meth:`build`).
        self._scope_text: tuple[EventScope, str, str] | None = None

    def journal_log(self) -> JournalLog:
        """The journal beside this log (``journal.jsonl`` in its folder, made on first use
        when no :class:`JournalLog` was built for it)."""
        if self.journal is None:
            JournalLog(self.path.with_name(layout.JOURNAL), self)
        assert self.journal is not None
        return self.journal

    def build(self, kind: type[E], payload: Model | None, *, level: Level | None = None,
              scope: EventScope | None = None) -> Built:
        """An event's line (stamped now, numbered when written) and the maker of its model;
        only upstream's event types exist as typed classes. ``payload`` must be a validated
        instance of the kind's payload model (``None`` for a ``null`` payload; anything else
        goes through the kind's own validation, which raises ``ValidationError``)."""
        spec = _EVENT_KINDS.get(kind) or _kind_of(kind, _EVENT_KINDS)
        type_name, default_level, payload_model, head, tail = spec
        ident, moment = self.ids.new("evt"), self.clock.now()
        level = level or default_level
        run_id = self.run_id
        if not isinstance(payload, payload_model):  # the envelope says what is wrong
            payload = kind(seq=0, id=ident, run_id=run_id, timestamp=moment, level=level,
                           payload=payload, event_scope=scope).payload

        # the encoder's text of {id, runId, timestamp, level, type, payload, eventScope?}
        # without the opening brace, written piece by piece (:func:`_text`; a timestamp is
        # always a string)
        body = "null" if payload is None else model_text(payload)
        if scope is None:
            scoped = "}\n"
        else:
            last = self._scope_text
            # a call's events share one scope: its text is made once, while it still holds
            # what it held then (the same id, no related invocations, no extra keys)
            if (last is not None and last[0] is scope and last[1] is scope.invocation_id
                    and not scope.related_invocation_ids and not scope.__pydantic_extra__):
                scoped = last[2]
            else:
                scoped = f', "eventScope": {model_text(scope)}}}\n'
                if not scope.related_invocation_ids and not scope.__pydantic_extra__:
                    self._scope_text = (scope, scope.invocation_id, scoped)
        if level is not default_level:
            head = f"{_text(level)}{tail}"
        cached = self._run_json
        run_text = cached[1] if cached is not None and cached[0] is run_id else self._run_text()
        rest = (f'"id": {_text(ident)}, "runId": {run_text}, "timestamp": '
                f'{json_string(rfc3339(moment))}, "level": {head}{body}{scoped}')
        return (partial(_event_model, kind, ident, run_id, moment, level, payload, scope),
                {"seq": 0, "id": ident, "type": type_name, "rest": rest.encode("utf-8")})

    def _run_text(self) -> str:
        """The run id as the line encoder writes it (made once per run id)."""
        run_id = self.run_id
        cached = self._run_json
        if cached is None or cached[0] is not run_id:
            cached = self._run_json = (run_id, _text(run_id))
        return cached[1]

    def append(self, kind: type[E], payload: Model | None, *, level: Level | None = None,
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
    (:mod:`tavernlab.events._journal`)."""

    def __init__(self, path: Path, events: EventLog) -> None:
        super().__init__(path)
        self.events = events
        events.journal = self
        #: ``_anchors[k]`` is the ``eventSeq`` of the line with ``seq == k + 1``.
        self._anchors = array("q")
        #: Byte offset of each ``subagent_started`` record this process wrote, by record id:
        #: a reopened run finds its sub-agents there without reading the journal.
        self.written_at: dict[str, int] = {}

    def build(self, kind: type[J], payload: Model) -> Built:
        """A journal record's line (numbered and anchored when written) and the maker of its
        model (see :meth:`EventLog.build`)."""
        type_name, _, payload_model, head, _ = (_JOURNAL_KINDS.get(kind)
                                                or _kind_of(kind, _JOURNAL_KINDS))
        events = self.events
        ident, moment, run_id = events.ids.new("jrn"), events.clock.now(), events.run_id
        if not isinstance(payload, payload_model):  # the envelope says what is wrong
            payload = kind(seq=0, event_seq=0, id=ident, run_id=run_id, timestamp=moment,
                           payload=payload).payload

        # {id, runId, timestamp, level, type, payload} as EventLog.build writes it
        body = model_text(payload)
        rest = (f'"id": {_text(ident)}, "runId": {events._run_text()}, "timestamp": '
                f'{json_string(rfc3339(moment))}, "level": {head}{body}}}\n')
        return (partial(_journal_model, kind, ident, run_id, moment, payload),
                {"seq": 0, "eventSeq": 0, "id": ident, "type": type_name,
                 "rest": rest.encode("utf-8")})

    def lines_of(self, kind: type[J], payloads: Sequence[str]) -> list[Built]:
        """Records of one kind from payloads already rendered as JSON text (exactly what
        the line encoder writes for the kind's payload: ``{"key": value, ...}``, the model's
        camelCase keys in its field order, values the caller has checked), without a model
        or an encoding each: a run started from a large persist state journals a record per
        file. The ids and times are taken in order, one per record, as one by one; each
        line is rendered now but for its numbers (the same form :meth:`build` gives)."""
        type_name = kind.type_name()
        if type_name not in JOURNAL_TYPES:
            raise ValueError(f"{kind.__name__} is not a journal record type")
        events = self.events
        if not payloads:
            return []
        # each record's line, but for its numbers, is `"id": "<id><head><stamp><middle>
        # <payload>}` + newline (as _unnumbered(..., anchored=True) encodes it)
        head = f'", "runId": {json_string(events.run_id)}, "timestamp": "'
        middle = (f'", "level": {json_string(kind.default_level())}, "type": '
                  f'{json_string(type_name)}, "payload": ')
        with collector_paused():  # tens of thousands of acyclic objects (see log_reading)
            idents = many_ids(events.ids, "jrn", len(payloads))
            moments = stamps(events.clock, len(payloads))
            # the factories here mint ids of letters, digits and "_" only: nothing to escape
            plain = type(events.ids) in _PLAIN_IDS
            quoted = idents if plain else [json_string(ident)[1:-1] for ident in idents]
            # what could not be written (a lone surrogate) fails now, before anything is
            # written; ASCII text (the string's own flag, once joined) is written as it is
            text = "".join(payloads)
            if not text.isascii():
                text.encode()
            if not plain:
                "".join(quoted).encode()
            f"{head}{middle}".encode()
            del text
        bulk = (quoted, moments, payloads, head, middle)
        return [(None, {"seq": 0, "eventSeq": 0, "id": idents[0], "type": type_name,
                        "rest": f'"id": "{quoted[0]}{head}{moments[0]}{middle}{payloads[0]}}}\n'
                        .encode(), "bulk": bulk, "ids": idents})]

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

    def _write_anchored(self, fd: int, size: int, lines: list[bytes], anchors: list[int]
                        ) -> None:
        """Append ``lines`` whose ``eventSeq`` are ``anchors`` (kept in the index when it
        was complete)."""
        indexed = self._indexed_to == size
        self._write(fd, size, lines)
        if indexed:
            self._anchors.extend(anchors)

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


def _event_model(kind: type[Event], ident: str, run_id: str, moment: datetime, level: Level,
                 payload: Any, scope: EventScope | None, data: dict[str, Any]) -> Event:
    """The model of an event :meth:`EventLog.build` built, once it is numbered (``data``)."""
    return kind(seq=data["seq"], id=ident, run_id=run_id, timestamp=moment, level=level,
                payload=payload, event_scope=scope)


def _journal_model(kind: type[Event], ident: str, run_id: str, moment: datetime,
                   payload: Any, data: dict[str, Any]) -> Event:
    """The model of a journal record :meth:`JournalLog.build` built, once it is numbered."""
    return kind(seq=data["seq"], event_seq=data["eventSeq"], id=ident, run_id=run_id,
                timestamp=moment, payload=payload)


def model_of(make: Maker | None, data: dict[str, Any]) -> Event:
    """The model of a written (numbered) record."""
    return make(data) if make is not None else parse_records([_line(data)])[0]


def models_of(make: Maker | None, data: dict[str, Any]) -> list[Event]:
    """The models of a written entry: its record's, or each of a bulk entry's, in order."""
    if "bulk" not in data:
        return [model_of(make, data)]
    return parse_records([line.encode() for line in _bulk_texts(
        data["bulk"], data["seq"], str(data["eventSeq"]))])


def _bulk_texts(bulk: Bulk, first: int, anchor: str, start: int = 0,
                stop: int | None = None) -> list[str]:
    """The whole lines of a bulk entry (:meth:`JournalLog.lines_of`) numbered from
    ``first`` and anchored at ``anchor`` (its text), one format each; ``start`` and ``stop``
    take a slice of them (numbered as in the whole)."""
    quoted, moments, payloads, head, middle = bulk
    if stop is None:
        stop = len(quoted)
    part = slice(start, stop)
    return [f'{{"seq": {seq}, "eventSeq": {anchor}, "id": "{ident}{head}{moment}{middle}'
            f'{payload}}}\n'
            for seq, ident, moment, payload in zip(range(first + start, first + stop),
                                                   quoted[part], moments[part],
                                                   payloads[part], strict=True)]


#: What building a record of a typed class needs of it, looked up once per class: its
#: ``type`` tag, its default level, the payload model it requires, and the text of its line
#: from the level's value to the payload's, with the default level (``"info", "type":
#: "...", "payload": ``) and after any level (``, "type": "...", "payload": ``); for event
#: and journal classes apart.
KindSpec = tuple[str, Level, type[Any], str, str]
_EVENT_KINDS: dict[type[Any], KindSpec] = {}
_JOURNAL_KINDS: dict[type[Any], KindSpec] = {}


def _kind_of(kind: type[Event], known: dict[type[Any], KindSpec]) -> KindSpec:
    """The spec of a typed event (``known`` is :data:`_EVENT_KINDS`) or journal record class;
    ``ValueError`` for a class of the other file or of no upstream type."""
    type_name = kind.type_name()
    if known is _EVENT_KINDS and type_name not in EVENT_TYPES:
        raise ValueError(f"{kind.__name__} is not an upstream event type")
    if known is _JOURNAL_KINDS and type_name not in JOURNAL_TYPES:
        raise ValueError(f"{kind.__name__} is not a journal record type")
    level = kind.default_level()
    tail = f', "type": {_text(type_name)}, "payload": '
    spec = known[kind] = (type_name, level, _payload_model(kind), _text(level) + tail, tail)
    return spec


def _payload_model(kind: type[Event]) -> type[Any]:
    """The payload model a typed event or journal record class requires."""
    annotation = kind.model_fields["payload"].annotation
    return annotation if isinstance(annotation, type) else object


def _text(value: Any) -> str:
    """A value of a record's envelope as the line encoder writes it (a string, quickly)."""
    return json_string(value) if type(value) is str else _ENCODE(value)



def _unnumbered(ident: str, type_name: str, rest: str, *, anchored: bool) -> dict[str, Any]:
    """A record's line before it is numbered: ``rest`` is the encoder's text of everything
    after the numbers (``"id": ...}``, without the opening brace), kept as UTF-8 bytes with
    the newline (so text that cannot be written, such as a lone surrogate, fails here, before
    anything is written); ``seq`` (and, ``anchored``, ``eventSeq``) are set when it is."""
    data: dict[str, Any] = {"seq": 0, "eventSeq": 0} if anchored else {"seq": 0}
    data["id"], data["type"], data["rest"] = ident, type_name, (rest + "\n").encode("utf-8")
    return data


def _line(data: dict[str, Any]) -> bytes:
    """A numbered record's line: what ``json.dumps(..., ensure_ascii=False)`` writes for the
    whole record, its numbers first (``tests/events/test_log_reading.py`` pins it)."""
    if "eventSeq" in data:
        return b'{"seq": %d, "eventSeq": %d, %b' % (data["seq"], data["eventSeq"], data["rest"])
    return b'{"seq": %d, %b' % (data["seq"], data["rest"])


def append_records(events: EventLog, journal: JournalLog | None, built: Sequence[Built],
                   *, repairing: bool = False) -> None:
    """Number and write ``built`` (events and journal records of one run, in their order):
    the events in one locked append to ``events.jsonl``, then the journal records in one
    locked append to ``journal.jsonl``, each anchored on the last event before it (in
    ``built`` or, for those before any, already in the file). The lines' ``seq`` and
    ``eventSeq`` are set here (a model is made from them afterwards). The exclusive lock on
    ``events.jsonl`` is held over both halves, so a reader holding it shared
    (:meth:`tavernlab.host._feed.RunFeed.read`) sees a whole batch or none of it.

    An unfinished last line of either file is cut away first and journaled as a
    ``log_repaired`` record (:class:`~tavernlab.events.TornTail`), ahead of the batch's own
    journal records. A write that fails (``ENOSPC``, ``EFBIG``) raises
    :class:`~tavernlab.errors.FileIo` naming the file, and leaves it ending with its last
    whole line (the events already appended stay when the journal half fails).
    ``repairing``: the journal's tail is looked at even with no journal record to append
    (:func:`repair_logs`)."""
    journal = journal if journal is not None else events.journal_log()
    try:
        _append_records(events, journal, built, repairing)
    except OSError as exc:  # opening or cutting a log (no descriptor left, ...)
        name = os.path.basename(exc.filename) if isinstance(exc.filename, str) else ""
        raise FileIo("append", name or events.path.name, exc) from None


def _append_records(events: EventLog, journal: JournalLog, built: Sequence[Built],
                    repairing: bool) -> None:
    """:func:`append_records` (OS errors not yet turned into ``FileIo``). The file's
    ``flock`` is taken before the log's in-process lock, the order a reader takes them in
    (``RunFeed.read`` holds the shared ``flock`` while it reads under the lock)."""
    with locked_open(events.path, _APPEND) as fd, events._lock:  # a reader's order too
        _append_events_locked(fd, events, journal, built, repairing)


def _append_events_locked(fd: int, events: EventLog, journal: JournalLog,
                          built: Sequence[Built], repairing: bool) -> None:
    """:func:`_append_records` once ``events.jsonl`` is open on ``fd`` and locked."""
    size, torn = events._cut_torn_tail(fd, os.lseek(fd, 0, os.SEEK_END))
    events._catch_up(fd, size)
    seq = events.last_seq
    event_lines: list[bytes] = []
    notes: list[dict[str, Any]] = []
    if torn:
        notes.append(_repair_note(journal, layout.EVENTS, size, torn, seq))
    for _, data in built:
        if "eventSeq" in data:  # a journal record: anchored on the last event before it
            data["eventSeq"] = seq
            notes.append(data)
        else:
            seq += 1
            data["seq"] = seq
            event_lines.append(_line(data))
    if event_lines:
        _written(events, lambda: events._write(fd, size, event_lines))
    if notes or (repairing and journal.path.exists()):
        _append_journal(journal, notes, notes[0]["eventSeq"] if notes else seq)


def repair_logs(events: EventLog, journal: JournalLog) -> None:
    """Cut an unfinished last line off either log (journaled as :func:`append_records`
    does: the journal's own tail is otherwise looked at only when something is appended to
    it); a run does this when it is reopened, so that everything reading its files (an
    export, a replay, another process) finds whole lines only. A missing log stays
    missing."""
    if events.path.exists():
        append_records(events, journal, [], repairing=True)


def _written(log: SequencedLog, write: Callable[[], None]) -> None:
    """Run ``write``; an OS error (no space left, the file size limit) is the workspace's
    ``FileIo`` error naming the log."""
    try:
        write()
    except OSError as exc:
        raise FileIo("append", log.path.name, exc) from None


def _repair_note(journal: JournalLog, name: str, offset: int, torn: bytes, anchor: int
                 ) -> dict[str, Any]:
    """The unnumbered ``log_repaired`` line of ``torn`` cut from ``name`` at ``offset``."""
    payload = TornTail(file=name, offset=offset, bytes=len(torn),
                       sha256=hashlib.sha256(torn).hexdigest(),
                       text=torn[:TORN_TEXT_CHARS * 4].decode("utf-8", "replace")[
                           :TORN_TEXT_CHARS])
    data = journal.build(LogRepaired, payload)[1]
    data["eventSeq"] = anchor
    return data


def _append_journal(journal: JournalLog, notes: list[dict[str, Any]], anchor: int) -> None:
    """The journal half of :func:`append_records` (the events' lock is held); ``anchor`` is
    the ``eventSeq`` of a repair note of the journal itself."""
    with locked_open(journal.path, _APPEND) as fd, journal._lock:
        _append_journal_locked(fd, journal, notes, anchor)


def _append_journal_locked(fd: int, journal: JournalLog, notes: list[dict[str, Any]],
                           anchor: int) -> None:
    """:func:`_append_journal` once ``journal.jsonl`` is open on ``fd`` and locked."""
    size, torn = journal._cut_torn_tail(fd, os.lseek(fd, 0, os.SEEK_END))
    if torn:
        notes = [_repair_note(journal, layout.JOURNAL, size, torn, anchor), *notes]
    if not notes:
        return
    journal._catch_up(fd, size)
    if len(notes) == 1 and "bulk" in notes[0]:  # a start's journal of a persist state
        _write_bulk(fd, journal, size, notes[0])
        return
    lines: list[bytes] = []
    anchors: list[int] = []
    kept: list[tuple[str, int]] = []  # (id, index of its line) of the OFFSET_TYPES
    number = journal.last_seq + 1
    for data in notes:
        data["seq"] = number
        anchor = data["eventSeq"]
        bulk = data.get("bulk")
        if bulk is None:  # _line (every journal record is anchored), inline
            if data["type"] in OFFSET_TYPES:
                kept.append((data["id"], len(lines)))
            lines.append(b'{"seq": %d, "eventSeq": %d, %b' % (number, anchor, data["rest"]))
            anchors.append(anchor)
            number += 1
            continue
        texts = _bulk_texts(bulk, number, str(anchor))
        if data["type"] in OFFSET_TYPES:
            kept += zip(data["ids"], range(len(lines), len(lines) + len(texts)), strict=True)
        lines += [text.encode() for text in texts]
        anchors += repeat(anchor, len(texts))
        number += len(texts)
    if kept:
        offsets = list(accumulate(map(len, lines), initial=size))
        for ident, index in kept:
            journal.written_at[ident] = offsets[index]
    _written(journal, lambda: journal._write_anchored(fd, size, lines, anchors))


def _write_bulk(fd: int, journal: JournalLog, size: int, data: dict[str, Any]) -> None:
    """Write a bulk entry alone (:func:`_append_journal_locked`): its lines are made
    :data:`BULK_CHUNK_LINES` at a time, each chunk joined, encoded and written before the
    next is made (:func:`_bulk_chunks`), so a few hundred KiB of text are reused where the
    whole entry's lines, tens of MBs of fresh pages, cost up to twice the CPU. The lines'
    byte lengths (for the index and :attr:`JournalLog.written_at`) are gathered as the
    chunks are made."""
    number = data["seq"] = journal.last_seq + 1
    anchor = data["eventSeq"]
    bulk = data["bulk"]
    count = len(bulk[0])
    lengths: list[int] = []

    def write() -> None:
        indexed = journal._indexed_to == size
        chunks = _bulk_chunks(bulk, number, str(anchor), lengths)
        journal._write_data(fd, size, chunks, lambda _: lengths, count)
        if indexed:
            journal._anchors.extend(repeat(anchor, count))

    _written(journal, write)
    if data["type"] in OFFSET_TYPES:
        journal.written_at.update(zip(data["ids"], accumulate(lengths, initial=size),
                                      strict=False))  # one more end


def _bulk_chunks(bulk: Bulk, first: int, anchor: str, lengths: list[int]) -> Iterator[bytes]:
    """The lines of a bulk entry (:func:`_bulk_texts`) joined and encoded
    :data:`BULK_CHUNK_LINES` at a time, each chunk made when the previous one was taken;
    each line's byte length is appended to ``lengths`` as its chunk is made (its length as
    text when the chunk is ASCII; otherwise each line is encoded once, and the chunk is
    those bytes joined)."""
    count = len(bulk[0])
    for start in range(0, count, BULK_CHUNK_LINES):
        texts = _bulk_texts(bulk, first, anchor, start, min(start + BULK_CHUNK_LINES, count))
        text = "".join(texts)
        if text.isascii():  # a character a byte (the string's own flag: no scan)
            lengths += map(len, texts)
            yield text.encode()
        else:
            lines = [line.encode() for line in texts]
            lengths += map(len, lines)
            yield b"".join(lines)


#: How many lines of a bulk entry are encoded and written together (about 450 KiB of a
#: persist state's ``file_changed`` lines).
BULK_CHUNK_LINES = 1024
