"""``flock``: the one lock primitive shared by threads and processes.

Every lock in tavernlab (the workspace reader/writer lock, the event log's append lock, the
persist, chat, session and retention locks) is an ``flock`` on a file. Each acquisition opens
its own descriptor, so two threads of one process exclude each other exactly as two
processes do; closing the descriptor releases the lock, even if the holder dies.

No wait is unbounded: a lock that another process (or thread) keeps for longer than
:data:`LOCK_WAIT_S` seconds (120 s, four times the longest tool call's deadline; the
environment variable ``TAVERNLAB_LOCK_WAIT_S`` changes it) makes the waiter give up with
:class:`~tavernlab.errors.LockTimeout` (``workspace.lock_timeout``) instead of hanging behind
a stopped or hung process. An uncontended lock costs one non-blocking ``flock``; a contended
one is waited for in the kernel's queue, on a helper thread the caller stops waiting for at
the limit.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from tavernlab.errors import LockTimeout

#: How long a lock is waited for before :class:`~tavernlab.errors.LockTimeout` (seconds).
LOCK_WAIT_S = 120.0
LOCK_WAIT_ENV = "TAVERNLAB_LOCK_WAIT_S"


def acquire(fd: int, *, shared: bool, path: Path) -> None:
    """Take the ``flock`` of ``fd`` (shared or exclusive), waiting at most the lock wait
    limit (see the module notes).

    An uncontended lock is one non-blocking ``flock``. A contended one is waited for by a
    helper thread blocked in ``flock`` on a duplicate of ``fd`` (the same open file, so the
    lock it gets is ``fd``'s; the kernel queues it like any waiter); past the limit the caller
    gives up, and should the helper get the lock later, it lets it go at once.
    """
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    limit = _wait_limit()
    if not _Waiter(os.dup(fd), mode).wait(limit):
        raise LockTimeout(path, limit)


class _Waiter:
    """One contended ``flock``, waited for on a helper thread (see :func:`acquire`)."""

    def __init__(self, dup: int, mode: int) -> None:
        self._dup = dup
        self._mode = mode
        self._done = threading.Event()
        self._error: OSError | None = None
        threading.Thread(target=self._run, name="tavernlab-lock-wait", daemon=True).start()

    def _run(self) -> None:
        try:
            fcntl.flock(self._dup, self._mode)
        except OSError as exc:
            self._error = exc
        self._done.set()
        # Got in time: the caller's own descriptor keeps the lock. Given up on: the caller's
        # descriptor is closed (or about to be), so closing this last one lets the lock go.
        os.close(self._dup)

    def wait(self, limit: float) -> bool:
        """Whether the lock was got within ``limit`` seconds (an error of ``flock`` is
        raised)."""
        if not self._done.wait(limit):
            return False
        if self._error is not None:
            raise self._error
        return True


def _wait_limit() -> float:
    raw = os.environ.get(LOCK_WAIT_ENV)
    try:
        value = float(raw) if raw else LOCK_WAIT_S
    except ValueError:
        return LOCK_WAIT_S
    return value if value > 0 and value == value and value != float("inf") else LOCK_WAIT_S


@contextlib.contextmanager
def locked_open(path: Path, flags: int = os.O_RDWR | os.O_CREAT, *,
                shared: bool = False) -> Iterator[int]:
    """Open ``path`` with ``flags`` (plus ``O_CLOEXEC``), hold an ``flock`` on it (shared or
    exclusive) and yield the descriptor; parent directories are created when missing."""
    try:
        fd = os.open(path, flags | os.O_CLOEXEC, 0o644)
    except FileNotFoundError:  # only then look at the parents (a syscall saved per lock)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags | os.O_CLOEXEC, 0o644)
    try:
        acquire(fd, shared=shared, path=path)
        yield fd
    finally:
        os.close(fd)  # releases the flock


@contextlib.contextmanager
def shared_lock_if_present(path: Path) -> Iterator[None]:
    """Hold a shared ``flock`` on an existing file while reading it (a reader never creates
    the file or its folders: a missing one has nothing to wait for)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        yield
        return
    try:
        acquire(fd, shared=True, path=path)
        yield
    finally:
        os.close(fd)


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


class LeasableLock(ReadWriteLock):
    """A :class:`ReadWriteLock` that a caller can also *lease*: while a lease is open the
    lock file's ``flock`` is held once, for the whole lease - taken shared at the first
    operation and made exclusive at the first one that needs it (Linux converts an ``flock``
    by releasing it first, so what was learnt under the lock is forgotten then), kept until the
    lease ends - and the operations of this process, from any thread, exclude each other with
    a thread lock instead of an ``flock`` each. Other processes' writers (and, once the lease
    wrote, their readers) wait for the lease to end. The workspace shell leases its workspace
    for one call, so a pipeline over many files takes the lock once.

    A thread that already holds the lock outside a lease (an operation nested in another)
    keeps taking its own ``flock``, as before the lease began: it must not wait for the lease,
    which may be waiting for it.

    ``on_release`` runs whenever this process is about to let the ``flock`` go (after each
    operation outside a lease, and when a lease ends): what was learnt under the lock must be
    forgotten then.
    """

    def __init__(self, path: Path, on_release: Callable[[], None] | None = None) -> None:
        super().__init__(path)
        self._on_release = on_release
        self._local = threading.RLock()
        self._leases = 0
        self._lease_fd: int | None = None
        self._lease_exclusive = False
        self._held = threading.local()  # ``depth``: this thread's holds outside a lease

    def shared(self) -> contextlib.AbstractContextManager[None]:
        """Hold the lock shared (many readers; during a lease, one operation at a time)."""
        return self._hold(shared=True)

    def exclusive(self) -> contextlib.AbstractContextManager[None]:
        """Hold the lock exclusively (one writer)."""
        return self._hold(shared=False)

    @contextlib.contextmanager
    def _hold(self, *, shared: bool) -> Iterator[None]:
        depth: int = getattr(self._held, "depth", 0)
        if self._leases and not depth:
            with self._local:
                if self._leases:  # still open once this thread's turn came
                    self._lease_for(shared=shared)
                    yield
                    return
        fd = _lock_fd(self.path, shared=shared)
        self._held.depth = depth + 1
        try:
            yield
        finally:
            self._held.depth = depth
            try:
                if self._on_release is not None:
                    self._on_release()
            finally:
                os.close(fd)

    def _lease_for(self, *, shared: bool) -> None:
        """Make the lease's ``flock`` strong enough for one operation (``_local`` held)."""
        if self._lease_fd is None:
            self._lease_fd = _lock_fd(self.path, shared=shared)
            self._lease_exclusive = not shared
        elif not shared and not self._lease_exclusive:
            if self._on_release is not None:
                self._on_release()
            acquire(self._lease_fd, shared=False, path=self.path)
            self._lease_exclusive = True

    @contextlib.contextmanager
    def lease(self) -> Iterator[None]:
        """Hold the lock for the whole block (nested and concurrent leases share it)."""
        with self._local:
            self._leases += 1
        try:
            yield
        finally:
            with self._local:
                self._leases -= 1
                if not self._leases and self._lease_fd is not None:
                    fd, self._lease_fd = self._lease_fd, None
                    try:
                        if self._on_release is not None:
                            self._on_release()
                    finally:
                        os.close(fd)


def _lock_fd(path: Path, *, shared: bool) -> int:
    """A new descriptor of the lock file ``path`` holding its ``flock``."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        acquire(fd, shared=shared, path=path)
    except BaseException:
        os.close(fd)
        raise
    return fd
