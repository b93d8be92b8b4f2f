"""A run's call ids, counted on disk so that every process writing the run hands out
different ones.

Ids the host makes are ``call_<N>``; ``N`` comes from the run directory's call counter
(:data:`~tavernlab.workspace.storage.CALL_COUNTER_NAME`): a small file holding the last number
handed out, read and rewritten in place under its own ``flock``. Two kernels, or a kernel
and the command line, holding one run therefore never reuse a number, and a reopened run
continues after the highest number any process used. The counter never goes below what the
caller already knows (a run recorded before the counter existed continues after the highest
``call_<N>`` its checkpoint and log hold), and an id the caller chose itself that has the
same shape moves the counter past it.

The file is one line, the number written as 20 digits and a newline: each update rewrites
the same 21 bytes in place (``pwrite``), so an update needs no new disk space, and a process
killed in the middle of one leaves the old number or the new one.

The counter's descriptor is opened on the first update and kept until
:meth:`CallCounter.close` (the run ended, or its lab was closed; a counter dropped unclosed
closes it when it is collected): each update still takes the file's ``flock`` for the read
and the rewrite, and the threads of one process take a thread lock around it (they share
the descriptor, and an ``flock`` excludes descriptors, not threads). A process forked from
the one that opened it lets the inherited descriptor go and opens its own (a descriptor
inherited over a fork is the same open file, whose ``flock`` the parent's would share). The
counter file is only ever created and rewritten in place, never replaced, so the kept
descriptor is always the file every other process counts in.
"""

from __future__ import annotations

import fcntl
import os
import threading
import weakref
from pathlib import Path

from tavernlab.errors import FileIo
from tavernlab.locks import acquire

_WIDTH = 20
_FLAGS = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC


class CallCounter:
    """The call counter of one run directory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fd = -1
        self._closer: weakref.finalize[[int], CallCounter] | None = None
        _COUNTERS.add(self)

    def next(self, floor: int = 0) -> int:
        """A number no process has handed out for this run: one more than the larger of the
        counter and ``floor``."""
        return self._update(floor, step=1)

    def note(self, number: int) -> None:
        """The caller used ``number`` itself: later numbers are greater."""
        self._update(number, step=0)

    @property
    def is_open(self) -> bool:
        """Whether the counter's descriptor is kept open now."""
        return self._fd >= 0

    def close(self) -> None:
        """Let the kept descriptor go (the next update opens the file again)."""
        with self._lock:
            self._release()

    def _release(self) -> None:
        fd, self._fd = self._fd, -1
        closer, self._closer = self._closer, None
        if closer is not None:
            closer.detach()
        if fd >= 0:
            os.close(fd)

    def _forked(self) -> None:
        """In a child just forked: a fresh thread lock, and the inherited descriptor (the
        parent's open file, whose ``flock`` it would share) let go."""
        self._lock = threading.Lock()
        self._release()

    def _descriptor(self) -> int:
        """The kept descriptor, opened when there is none."""
        if self._fd >= 0:
            return self._fd
        try:
            fd = os.open(self.path, _FLAGS, 0o644)
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, _FLAGS, 0o644)
        self._fd = fd
        self._closer = weakref.finalize(self, os.close, fd)
        return fd

    def _update(self, floor: int, *, step: int) -> int:
        with self._lock:
            try:
                fd = self._descriptor()
                acquire(fd, shared=False, path=self.path)
                try:
                    stored = os.pread(fd, _WIDTH + 1, 0).strip()
                    last = int(stored) if stored.isdigit() else 0
                    number = max(last, floor) + step
                    if number != last:
                        written = os.pwrite(fd, b"%0*d\n" % (_WIDTH, number), 0)
                        if written != _WIDTH + 1:
                            raise OSError(28, "No space left on device")
                    return number
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            except OSError as exc:
                self._release()  # a later update starts from a fresh descriptor
                raise FileIo("count calls in", self.path.name, exc) from None


#: Every counter of this process (a forked child lets their descriptors go).
_COUNTERS: weakref.WeakSet[CallCounter] = weakref.WeakSet()


def _after_fork() -> None:
    for counter in list(_COUNTERS):
        counter._forked()


os.register_at_fork(after_in_child=_after_fork)
