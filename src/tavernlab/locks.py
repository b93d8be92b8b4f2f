"""``flock``: the one lock primitive shared by threads and processes.

Every lock in tavernlab (the workspace reader/writer lock, the event log's append lock, the
persist, chat, session and retention locks) is an ``flock`` on a file. Each acquisition opens
its own descriptor, so two threads of one process exclude each other exactly as two
processes do; closing the descriptor releases the lock, even if the holder dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def locked_open(path: Path, flags: int = os.O_RDWR | os.O_CREAT, *,
                shared: bool = False) -> Iterator[int]:
    """Open ``path`` with ``flags`` (plus ``O_CLOEXEC``), hold an ``flock`` on it (shared or
    exclusive) and yield the descriptor; parent directories are created when missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, flags | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # releases the flock


@contextlib.contextmanager
def file_lock(path: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold an ``flock`` on the lock file ``path`` (created if missing)."""
    with locked_open(path, shared=shared):
        yield


class ReadWriteLock:
    """A reader/writer lock kept in one lock file (a workspace's ``.workspace.lock``, the skill
    repository's ``.lock``): many readers or one writer, across threads and processes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def shared(self) -> contextlib.AbstractContextManager[None]:
        """Hold the lock shared (many readers)."""
        return file_lock(self.path, shared=True)

    def exclusive(self) -> contextlib.AbstractContextManager[None]:
        """Hold the lock exclusively (one writer)."""
        return file_lock(self.path)
