"""Who is changing a run's workspace now, and the journal's ``file_changed`` records.

Tool calls and ``run.js`` jobs each open an *activity*. The workspace port reports every
mutation to the run's :class:`~tavernlab.workspace.storage.ChangeRecorder`; the changes are
flushed to the journal as :class:`~tavernlab.events.FileChanged` records, attributed to the
activity, when it ends and every :data:`FLUSH_INTERVAL_S` seconds while one is open (so a long
shell call shows its files as it writes them). Changes made outside any activity (the host's
own writes, a user writing through ``run.internals.fs``) are flushed as the host's when the next
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
import time

from tavernlab.events import FileChange, FileChanged, Writer
from tavernlab.host._feed import RunFeed
from tavernlab.workspace.storage import ChangeRecorder, WorkspaceFs

#: How often the changes of a running activity are flushed to the journal.
FLUSH_INTERVAL_S = 0.5


class Activities:
    """The open activities of one run and the flushing of its workspace changes.

    ``live`` (the default) flushes an open activity's changes, and the records its call
    holds, every :data:`FLUSH_INTERVAL_S` (:class:`_Ticker`); a lab with a deterministic
    clock turns it off, because a flush at a moment that depends on the machine's speed
    would stamp and number records differently from one replay to the next.
    """

    def __init__(self, fs: WorkspaceFs, feed: RunFeed, *, live: bool = True) -> None:
        self.fs = fs
        self.feed = feed
        self.live = live
        self.recorder = ChangeRecorder(str(fs.directory))
        fs.observer = self.recorder.note
        self._open: list[tuple[Writer, str | None]] = []
        self._lock = threading.Lock()
        #: Held by a flush (reentrant: an activity holds it from :meth:`Activity.take_changes`
        #: to its end, and a flush of the host's changes on the way must not wait for itself).
        self._flushing = threading.RLock()

    def activity(self, writer: Writer, call_id: str | None) -> Activity:
        """Attribute the workspace changes made while the block runs to ``call_id``."""
        return Activity(self, writer, call_id)

    def _open_activity(self, entry: tuple[Writer, str | None]) -> None:
        self.flush("host", None)
        with self._lock:
            self._open.append(entry)
        if self.live:
            _TICKER.watch(self)

    def _close_activity(self, entry: tuple[Writer, str | None],
                        held: list[FileChange] | None = None) -> None:
        try:
            with self._lock:
                self._open.remove(entry)
            if self.live:
                _TICKER.forget(self)
            if held is not None:
                for change in held:
                    self.feed.note(FileChanged, change)
        finally:
            if held is not None:
                self._flushing.release()
        self.flush(*entry)

    def _take(self, entry: tuple[Writer, str | None]) -> list[FileChange] | None:
        """The flush of :meth:`_close_activity`, described now, under a hold of the
        workspace lock the caller already has (``None`` when another flush is under way:
        the close then flushes as usual). The changes are journaled when the activity
        closes, where its flush would have journaled them; until then no other flush runs,
        so nothing changed later is journaled before them."""
        if not self._flushing.acquire(blocking=False):
            return None
        try:
            return self.recorder.flush(*entry)
        except BaseException:
            self._flushing.release()
            raise

    def tick(self) -> None:
        """While an activity is open: write the records its call holds and journal its
        changes so far (called by the ticker thread)."""
        with self._lock:
            if not self._open:
                return
            writer, call_id = self._open[-1]
        self.feed.flush()
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

    def record(self, changes: list[str]) -> None:
        """Journal changes the port did not see (``persist/`` filled from a state), given as
        ``file_changed`` payloads rendered as JSON text (see
        :func:`tavernlab.host._starting.persist_changes`)."""
        if changes:
            self.feed.note_all(FileChanged, changes)


class Activity:
    """The block of :meth:`Activities.activity` (a plain context manager: one per tool
    call)."""

    __slots__ = ("_activities", "_entry", "_held")

    def __init__(self, activities: Activities, writer: Writer, call_id: str | None) -> None:
        self._activities = activities
        self._entry = (writer, call_id)
        self._held: list[FileChange] | None = None

    def __enter__(self) -> Activity:
        self._activities._open_activity(self._entry)
        return self

    def take_changes(self) -> None:
        """Describe the changes the activity's end would journal now, while the caller
        holds the workspace lock (the call's last write, its stored result, is in that
        hold), so the end need not take the lock again; they are journaled at the end, in
        the same place and with the same content. Called at most once, the last thing the
        activity writes (a change made after it is flushed by the end as usual)."""
        if self._held is None:
            self._held = self._activities._take(self._entry)

    def __exit__(self, *exc: object) -> None:
        held, self._held = self._held, None
        self._activities._close_activity(self._entry, held)


class _Ticker:
    """One thread for the whole process that ticks each run whose activity has been open
    for :data:`FLUSH_INTERVAL_S`, then every :data:`FLUSH_INTERVAL_S` (started on first use;
    it sleeps while nothing is open, so no thread is started per tool call, and a call that
    ends sooner is never ticked). After the last call it lingers one interval, so calls in
    quick succession never wake it."""

    def __init__(self) -> None:
        #: ``id(activities)`` -> (activities, open count, when it is due; real time).
        self._watched: dict[int, tuple[Activities, int, float]] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._idle = False  # the thread waits for something to watch (no deadline)

    def watch(self, activities: Activities) -> None:
        """Tick ``activities`` until :meth:`forget` (counted: nested activities)."""
        with self._wake:
            key = id(activities)
            if key in self._watched:
                _, count, due = self._watched[key]
                self._watched[key] = (activities, count + 1, due)
                return
            self._watched[key] = (activities, 1, time.monotonic() + FLUSH_INTERVAL_S)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="tavernlab-changes")
                self._thread.start()
            elif self._idle:  # otherwise it wakes before this one is due anyway
                self._wake.notify()

    def forget(self, activities: Activities) -> None:
        """One :meth:`watch` of ``activities`` ended."""
        with self._wake:
            key = id(activities)
            if key not in self._watched:
                return
            _, count, due = self._watched[key]
            if count <= 1:
                del self._watched[key]
            else:
                self._watched[key] = (activities, count - 1, due)

    def _due(self) -> list[Activities]:
        """Wait (holding the condition) until some watched run is due; mark it ticked."""
        while True:
            if not self._watched:
                # Linger one interval before sleeping until woken: a call that starts
                # meanwhile needs no wake-up (its first tick is due after the linger ends),
                # so back-to-back calls never wake this thread just to be watched.
                self._wake.wait(FLUSH_INTERVAL_S)
                if not self._watched:
                    self._idle = True
                    self._wake.wait_for(lambda: bool(self._watched))
                    self._idle = False
                continue
            now = time.monotonic()
            first = min(due for _, _, due in self._watched.values())
            if first > now:
                self._wake.wait(first - now)
                continue
            ready = []
            for key, (activities, count, due) in list(self._watched.items()):
                if due <= now:
                    ready.append(activities)
                    self._watched[key] = (activities, count, now + FLUSH_INTERVAL_S)
            return ready

    def _run(self) -> None:
        while True:
            with self._wake:
                ready = self._due()
            for activities in ready:
                activities.tick()


_TICKER = _Ticker()
