"""Reading sequenced logs fast: bulk parsing of ``events.jsonl`` / ``journal.jsonl`` lines
into their typed models, and the last ``seq`` of a log from its last line.

Lines are parsed in chunks of about :data:`CHUNK_BYTES`: each chunk is handed to pydantic-core
as one JSON array validated against the union of every typed record class (discriminated on
``type``), which builds the models straight from the bytes, about as fast as ``json.loads``
alone would parse them. A chunk with a type tavernlab has no model for is validated in bulk
again against the same union with the generic :class:`~tavernlab.events.Event` added (chosen
by a tag function, which is slower); a chunk that does not validate either way (a malformed
line, a bad payload) is parsed line by line with
:func:`~tavernlab.events.parse_event`, which gives unknown types the generic
:class:`~tavernlab.events.Event` and raises exactly what reading one line raises
(``json.JSONDecodeError`` for a broken line). Every line is validated when read, including
the lines tavernlab wrote itself (tavernlab choice: trusting them with ``model_construct`` would
gain little once the collector is paused, and a hand-edited or half-copied run would then give
wrong models instead of a clear error).

Why the collector is paused: the models of one record are about five objects the cyclic
garbage collector tracks (a ``json.loads`` dict of the same line is one), and while tens of
thousands of them are being built the collector runs again and again over every record built
so far - on a run of 71,000 records that was more than half of the read. Nothing a read builds
can form a reference cycle, so :func:`parse_all` pauses the collector while it builds (for the
whole process: about as long as the read itself) and restores it after; the records are then
looked at by the collector like any other objects the caller keeps.
"""

from __future__ import annotations

import gc
import json
import os
import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import Discriminator, Field, Tag, TypeAdapter, ValidationError

from tavernlab.events import Event, parse_event
from tavernlab.events._base import typed_classes

#: Bytes read (and parsed in bulk) at a time.
CHUNK_BYTES = 1 << 20

#: A generic record's tag in :func:`_tolerant_adapter` (no event type is spelled so).
GENERIC = "*"

_adapters: dict[bool, tuple[int, TypeAdapter[list[Any]]]] = {}


def _records_adapter(tolerant: bool = False) -> TypeAdapter[list[Any]]:
    """The bulk adapter over every typed record class, discriminated on ``type`` (rebuilt if
    a class was added). ``tolerant``: a type with no class validates as the generic
    :class:`~tavernlab.events.Event` (a tag function instead of pydantic-core's lookup:
    slower, so used only for a chunk the strict adapter refused)."""
    classes = dict(typed_classes())
    built = _adapters.get(tolerant)
    if built is None or built[0] != len(classes):
        union: Any
        if tolerant:
            members = [Annotated[cls, Tag(name)] for name, cls in classes.items()]
            union = Annotated[Union[(*members, Annotated[Event, Tag(GENERIC)])],
                              Discriminator(_tag)]
        else:
            union = Annotated[Union[tuple(classes.values())],  # noqa: UP007
                              Field(discriminator="type")]
        built = _adapters[tolerant] = (len(classes), TypeAdapter(list[union]))
    return built[1]


def _tag(value: Any) -> str:
    """The member of the tolerant union ``value`` (one record, as parsed) validates as."""
    name = value.get("type") if isinstance(value, dict) else None
    return name if isinstance(name, str) and name in Event.registry else GENERIC


def parse_records(lines: Sequence[bytes]) -> list[Event]:
    """The typed models of ``lines`` (complete JSON lines of a run log), in order: in bulk,
    strictly, then tolerating types with no class, then line by line (which raises what
    reading the first bad line raises)."""
    if not lines:
        return []
    array = b"[" + b",".join(lines) + b"]"
    for tolerant in (False, True):
        try:
            records: list[Event] = _records_adapter(tolerant).validate_json(array)
            return records
        except ValidationError:
            continue
    return [parse_event(json.loads(line)) for line in lines]


def parse_all(chunks: Iterable[Sequence[bytes]], types: Collection[str] | None = None
              ) -> list[Event]:
    """The typed models of every line of ``chunks``, in order, built with the collector
    paused; ``types`` keeps only records of those types, and lines that cannot be one of
    them are not parsed at all (:class:`TypeFilter`)."""
    with collector_paused():
        if types is None:
            return [record for chunk in chunks for record in parse_records(chunk)]
        wanted = TypeFilter(types)
        return [record for chunk in chunks
                for record in parse_records([line for line in chunk if wanted.may_match(line)])
                if record.type in wanted.names]


class TypeFilter:
    """Which raw lines may be records of some ``types``, decided on the bytes.

    A line whose ``type`` is ``name`` holds ``name`` as a JSON string: written as-is (how
    tavernlab writes it), or with some characters escaped - as a ``\\u`` escape of four hex
    digits, such as ``\\u0074`` for ``t`` (any character), or as a short escape (only ``"``,
    ``\\``, ``/`` and control characters have one). So a line that holds neither the plain
    spelling of any of the names nor a backslash that could start such an escape cannot match,
    and is skipped unparsed - unless it does not end as a JSON object does (``}``): a cut or
    overwritten line is parsed, so it raises as in a full read (tavernlab choice: damage inside
    a line of another type that still ends in ``}`` is reported by a full read only)."""

    def __init__(self, types: Iterable[str]) -> None:
        self.names = frozenset(types)
        self._spelled = [json.dumps(name, ensure_ascii=False).encode("utf-8")
                         for name in self.names]
        short = any(char in '"\\/' or char < " " for name in self.names for char in name)
        self._escape = b"\\" if short else b"\\u"

    def may_match(self, line: bytes) -> bool:
        """Whether ``line`` may be a record of one of the types (``False``: it is not)."""
        return (self._escape in line or any(spelled in line for spelled in self._spelled)
                or not line.rstrip().endswith(b"}"))


_pause_lock = threading.Lock()
_pauses = 0  # reads under way with the collector paused
_resume = False  # whether the collector was enabled when the first of them began


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (see the module docstring); nested
    and concurrent blocks share one pause, and a collector that was already disabled (by
    the caller) stays disabled."""
    global _pauses, _resume
    with _pause_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()


def last_line(fd: int, size: int) -> bytes | None:
    """The last complete line of the file open as ``fd`` within its first ``size`` bytes
    (read from the end; an unfinished line after it is ignored), ``None`` when it has none."""
    window = 4096
    while True:
        start = max(0, size - window)
        data = os.pread(fd, size - start, start)
        end = data.rfind(b"\n")
        begin = data.rfind(b"\n", 0, max(end, 0)) + 1
        if end >= 0 and (begin > 0 or start == 0):
            return data[begin:end]
        if start == 0:
            return None
        window *= 4  # the last line is longer than the window


def end_of_last_line(fd: int, size: int) -> int:
    """The offset just past the last newline of the file open as ``fd`` within its first
    ``size`` bytes (``0`` when it has none): where an unfinished last line begins."""
    window = 4096
    while True:
        start = max(0, size - window)
        end = os.pread(fd, size - start, start).rfind(b"\n")
        if end >= 0:
            return start + end + 1
        if start == 0:
            return 0
        size, window = start, window * 4  # the unfinished line is longer than the window


def seq_of_last_line(fd: int, size: int) -> int:
    """The ``seq`` of the last complete line of a log (0 when it has none)."""
    line = last_line(fd, size)
    return 0 if line is None else int(json.loads(line)["seq"])


def read_chunks(path: Path, start: int, end: int) -> Iterator[list[bytes]]:
    """The complete, non-blank lines of ``path`` between the byte offsets ``start`` and
    ``end``, in chunks of about :data:`CHUNK_BYTES`; an unfinished line at ``end`` is left
    out."""
    with open(path, "rb") as handle:
        handle.seek(start)
        carry = b""
        while start < end:
            data = carry + handle.read(min(CHUNK_BYTES, end - start))
            read = len(data) - len(carry)
            if read == 0:
                return
            start += read
            cut = data.rfind(b"\n") + 1
            carry = data[cut:]
            lines = [line for line in data[:cut].split(b"\n") if line.strip()]
            if lines:
                yield lines


def anchor_of(line: bytes) -> int:
    """The ``eventSeq`` of a journal line (read without parsing the line when it is where
    tavernlab writes it)."""
    start = line.find(b'"eventSeq": ', 0, 64)
    if start >= 0:
        digits = line[start + 12:line.find(b",", start)]
        if digits.isdigit():
            return int(digits)
    return int(json.loads(line)["eventSeq"])
