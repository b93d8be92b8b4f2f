"""An event log's writer and its readers take its two locks in one order: the file's
``flock`` first, then the log's in-process lock. A reader (``RunFeed.read``) holds the
events file's shared ``flock`` while it reads the log under its in-process lock; a writer
that took the in-process lock first and then waited for the exclusive ``flock`` would hold
that reader up forever, and the reader would hold the writer up (a ``%%agent`` cell reading
its run's backlog while the loop appends hung that way)."""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from pathlib import Path

from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.events import (
    EventLog,
    JournalLog,
    RoundEnd,
    RoundEnded,
    StatusChange,
    StatusChanged,
    append_records,
)


def _flock_is_exclusive(path: Path) -> bool:
    """Whether another descriptor holds an exclusive ``flock`` on ``path`` right now."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        assert exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
        return True
    finally:
        os.close(fd)
    return False


class _Recording:
    """An in-process lock that notes, at each acquisition, whether ``path``'s exclusive
    ``flock`` was already held."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        self._path = path
        self.flock_held: list[bool] = []

    def __enter__(self) -> None:
        self._lock.acquire()
        self.flock_held.append(self._path.exists() and _flock_is_exclusive(self._path))

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()


def _logs(tmp_path: Path) -> tuple[EventLog, JournalLog]:
    log = EventLog(tmp_path / "events.jsonl", "run_1", clock=FixedClock(),
                   ids=SequentialIds("locks"))
    return log, JournalLog(tmp_path / "journal.jsonl", log)


def test_an_append_takes_the_files_flock_before_the_logs_lock(tmp_path: Path) -> None:
    log, journal = _logs(tmp_path)
    log.append(StatusChanged, StatusChange(status="calling_model"))
    events_lock, journal_lock = _Recording(log.path), _Recording(journal.path)
    log._lock = events_lock  # type: ignore[assignment]
    journal._lock = journal_lock  # type: ignore[assignment]
    append_records(log, journal, [log.build(StatusChanged, StatusChange(
        status="finishing")), journal.build(RoundEnded,
                                                                        RoundEnd(round=1))])
    assert events_lock.flock_held == [True]
    assert journal_lock.flock_held == [True]
