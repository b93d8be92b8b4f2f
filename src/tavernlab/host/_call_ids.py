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
"""

from __future__ import annotations

import os
from pathlib import Path

from tavernlab.errors import FileIo
from tavernlab.locks import locked_open

_WIDTH = 20


class CallCounter:
    """The call counter of one run directory."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def next(self, floor: int = 0) -> int:
        """A number no process has handed out for this run: one more than the larger of the
        counter and ``floor``."""
        return self._update(floor, step=1)

    def note(self, number: int) -> None:
        """The caller used ``number`` itself: later numbers are greater."""
        self._update(number, step=0)

    def _update(self, floor: int, *, step: int) -> int:
        try:
            with locked_open(self.path) as fd:
                stored = os.pread(fd, _WIDTH + 1, 0).strip()
                last = int(stored) if stored.isdigit() else 0
                number = max(last, floor) + step
                if number != last:
                    written = os.pwrite(fd, b"%0*d\n" % (_WIDTH, number), 0)
                    if written != _WIDTH + 1:
                        raise OSError(28, "No space left on device")
                return number
        except OSError as exc:
            raise FileIo("count calls in", self.path.name, exc) from None
