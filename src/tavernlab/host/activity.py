"""Who is changing a run's workspace now, and the journal's ``file_changed`` records.

Tool calls and ``run.js`` jobs each open an *activity*. The workspace port reports every
mutation to the run's :class:`~tavernlab.workspace.changes.ChangeRecorder`; the changes are
flushed to the journal as :class:`~tavernlab.events.FileChanged` records, attributed to the
activity, when it ends and every :data:`FLUSH_INTERVAL_S` seconds while one is open (so a long
shell call shows its files as it writes them). Changes made outside any activity (the host's
own writes, a user writing through ``run.fs``) are flushed as the host's when the next
activity opens, at the end of a round and when the run is read.

Under a deterministic lab clock (:func:`tavernlab.clock.is_deterministic`) there is no
periodic flush: how changes group into records must not depend on wall time, or two plays of
the same run (a replay) would journal the same writes differently. The changes of a long call
then appear when it ends.

When two activities of one run overlap (a ``run.js`` job on another thread during a tool
call), the changes go to the one opened last (a tavernlab choice: the port cannot tell which
thread of which activity made a write).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tavernlab.events import FileChange, FileChanged, Writer
from tavernlab.host.feed import RunFeed
from tavernlab.workspace.changes import ChangeRecorder
from tavernlab.workspace.fs import WorkspaceFs

#: How often the changes of a running activity are flushed to the journal.
FLUSH_INTERVAL_S = 0.5


class Activities:
    """The open activities of one run and the flushing of its workspace changes."""

    def __init__(self, fs: WorkspaceFs, feed: RunFeed, *, periodic: bool = True) -> None:
        self.fs = fs
        self.feed = feed
        self.periodic = periodic
        self.recorder = ChangeRecorder(str(fs.directory))
        fs.observer = self.recorder.note
        self._open: list[tuple[Writer, str | None]] = []
        self._lock = threading.Condition()
        self._flushing = threading.Lock()
        self._timer: threading.Thread | None = None

    @contextmanager
    def activity(self, writer: Writer, call_id: str | None) -> Iterator[None]:
        """Attribute the workspace changes made while the block runs to ``call_id``."""
        self.flush("host", None)
        entry = (writer, call_id)
        with self._lock:
            self._open.append(entry)
            if self.periodic and self._timer is None:
                self._timer = threading.Thread(target=self._tick, daemon=True,
                                               name="tavernlab-changes")
                self._timer.start()
        try:
            yield
        finally:
            with self._lock:
                self._open.remove(entry)
                self._lock.notify_all()
            self.flush(writer, call_id)

    def _tick(self) -> None:
        """While an activity is open, flush its changes every :data:`FLUSH_INTERVAL_S`."""
        while True:
            with self._lock:
                self._lock.wait_for(lambda: not self._open, FLUSH_INTERVAL_S)
                if not self._open:
                    self._timer = None
                    return
                writer, call_id = self._open[-1]
            self.flush(writer, call_id)

    def flush(self, writer: Writer, call_id: str | None) -> list[FileChange]:
        """Journal what changed since the last flush, as ``writer``/``call_id``."""
        if not self.recorder.pending:
            return []
        with self._flushing:
            with self.fs.lock.shared():
                changes = self.recorder.flush(writer, call_id)
            for change in changes:
                self.feed.note(FileChanged, change)
        return changes

    def record(self, changes: list[FileChange]) -> None:
        """Journal changes the port did not see (``persist/`` filled from a state)."""
        for change in changes:
            self.feed.note(FileChanged, change)
