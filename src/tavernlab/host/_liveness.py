"""Which runs a living process holds, so that a run a dead process left behind shows as
*interrupted* instead of as still working.

A run's status is written as it changes (``calling_model``, ``dispatching_tool``, …); a
kernel that is restarted or killed in the middle leaves the last one on disk, and nothing
will ever move it on. So every process that opens a run (:meth:`Lab.start_run`,
:meth:`Lab.open_run`) holds a shared ``flock`` on ``<lab>/_live/<run id>.lock`` while its lab
is open; the operating system drops the lock when the process dies, however it dies. A run
that is not terminal and that no process holds is shown as :data:`INTERRUPTED` (the
record keeps its status: reopening the run continues it). tavernlab choice: upstream runs
inside one long-lived host process and has no such case.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from pathlib import Path

from tavernlab.workspace.records import RunRecord

#: Where the lock files live, below the lab's root.
LIVE_DIR = "_live"
#: The status shown for a non-terminal run that no process holds.
INTERRUPTED = "interrupted"


class LiveRuns:
    """The runs this lab holds, and the question whether any process holds a run."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def _path(self, run_id: str) -> Path:
        return self.directory / f"{run_id}.lock"

    def hold(self, run_id: str) -> None:
        """Hold ``run_id`` until :meth:`close` (holding it twice is one hold)."""
        with self._lock:
            if run_id in self._held:
                return
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(self._path(run_id), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            fcntl.flock(fd, fcntl.LOCK_SH)
            self._held[run_id] = fd

    def is_held(self, run_id: str) -> bool:
        """Whether some living process (this one included) holds ``run_id``."""
        with self._lock:
            if run_id in self._held:
                return True
        try:
            fd = os.open(self._path(run_id), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops the probe's own lock
        return False

    def shown_status(self, record: RunRecord) -> str:
        """The record's status, or :data:`INTERRUPTED` for a non-terminal run no process
        holds."""
        if record.is_terminal or self.is_held(record.id):
            return record.status
        return INTERRUPTED

    def close(self) -> None:
        """Release every run this lab holds."""
        with self._lock:
            held, self._held = self._held, {}
        for fd in held.values():
            with contextlib.suppress(OSError):
                os.close(fd)
