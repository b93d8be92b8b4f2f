"""A sequenced JSON-lines file: the numbering and the line index that ``events.jsonl`` and
the journal share (:mod:`tavernlab.events._log` builds and writes their records).

Numbering (docs/events.md): each line carries ``seq`` from 1, +1 per append. Nothing here reads a
whole log to append to it: when the file grew behind this process's back (another writer),
the last ``seq`` is read from its last line. An unfinished last line (its writer was killed,
or ran out of space, in the middle of an append) is cut away under the lock before the next
append, so it never merges with a line after it; readers leave such a line out. Reading
after a sequence number is incremental:
the log keeps the byte offset of every line it has indexed, so a read after ``n`` seeks
straight to line ``n + 1``; the index is built the first time a read needs it, and extended
from where it ended (counting newlines, not parsing JSON).
"""

from __future__ import annotations

import contextlib
import os
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate
from pathlib import Path

from tavernlab.events._reading import CHUNK_BYTES, end_of_last_line, read_chunks, seq_of_last_line


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
        #: A size at which the file was seen (or written) ending with a whole line: an
        #: append that finds the file at that size needs not look at its last byte.
        self._whole_to = -1

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

    def _cut_torn_tail(self, fd: int, size: int) -> tuple[int, bytes]:
        """Cut an unfinished last line off the file (the caller holds its ``flock``, so no
        writer is in the middle of a line): ``(size afterwards, the bytes cut)``, nothing cut
        when the file is empty or ends with a newline. A writer killed (or out of space) in
        the middle of its append leaves such a line; the next append would merge into it."""
        if size == self._whole_to:  # only a torn line's cut brings a log back to a size
            return size, b""
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            self._whole_to = size
            return size, b""
        end = end_of_last_line(fd, size)
        torn = os.pread(fd, size - end, end)
        os.ftruncate(fd, end)
        self._whole_to = end
        if self._indexed_to > end:
            self._reset_index()
        self._known_size = -1
        self._catch_up(fd, end)
        return end, torn

    def _write(self, fd: int, size: int, lines: list[bytes]) -> None:
        """Append ``lines`` (each ending with a newline) at ``size`` in one write, whose
        length is checked. A write that fails (no space left, the file size limit) is cut
        back off, so the file still ends with its last whole line, and raises ``OSError``
        (nothing of the batch is written; what this process knows is unchanged)."""
        self._write_data(fd, size, (b"".join(lines),), lambda _: map(len, lines), len(lines))

    def _write_data(self, fd: int, size: int, chunks: Iterable[bytes],
                    lengths: Callable[[int], Iterable[int]], count: int) -> None:
        """:meth:`_write` of ``count`` lines given as ``chunks`` of whole lines, written one
        after the other (and all cut back off if one fails); ``lengths(written)`` gives the
        byte length of each line (``written``: all their bytes), asked for only when the
        index is kept up."""
        written = 0
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:  # a short write is continued, which then raises what stopped it
                    view = view[os.write(fd, view):]
                written += len(chunk)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
        if self._indexed_to == size:  # the index was complete: keep it so
            offsets = self._offsets
            offsets.extend(accumulate(lengths(written), initial=size))
            offsets.pop()  # the end of the last line
            self._indexed_to = size + written
        self._known_size = self._whole_to = size + written
        self._seq += count

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
