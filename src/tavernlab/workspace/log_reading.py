"""Reading sequenced logs fast: bulk parsing of ``events.jsonl`` / ``journal.jsonl`` lines
into their typed models, and the last ``seq`` of a log from its last line.

Lines are parsed in chunks of about :data:`CHUNK_BYTES`: each chunk is handed to pydantic-core
as one JSON array validated against the union of every typed record class (discriminated on
``type``), which builds the models straight from the bytes, about as fast as ``json.loads``
alone would parse them. A chunk that does not validate that way (a type tavernlab has no
model for, a malformed line) is parsed line by line with
:func:`~tavernlab.events.parse_event`, which gives unknown types the generic
:class:`~tavernlab.events.Event` and raises exactly what reading one line raises
(``json.JSONDecodeError`` for a broken line).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import Field, TypeAdapter, ValidationError

from tavernlab.events import Event, parse_event

#: Bytes read (and parsed in bulk) at a time.
CHUNK_BYTES = 1 << 20

_adapter: tuple[int, TypeAdapter[list[Any]]] | None = None


def _records_adapter() -> TypeAdapter[list[Any]]:
    """The bulk adapter over every typed record class (rebuilt if a class was added)."""
    global _adapter
    classes = tuple(Event.registry.values())
    if _adapter is None or _adapter[0] != len(classes):
        union = Annotated[Union[classes], Field(discriminator="type")]  # type: ignore[valid-type]  # noqa: UP007
        _adapter = (len(classes), TypeAdapter(list[union]))
    return _adapter[1]


def parse_records(lines: Sequence[bytes]) -> list[Event]:
    """The typed models of ``lines`` (complete JSON lines of a run log), in order."""
    if not lines:
        return []
    try:
        records: list[Event] = _records_adapter().validate_json(b"[" + b",".join(lines) + b"]")
        return records
    except ValidationError:
        return [parse_event(json.loads(line)) for line in lines]


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
