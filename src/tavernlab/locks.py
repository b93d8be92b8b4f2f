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


def locked_open(path: Path, flags: int = os.O_RDWR | os.O_CREAT, *,
                shared: bool = False) -> contextlib.AbstractContextManager[int]:
    """Open ``path`` with ``flags`` (plus ``O_CLOEXEC``), hold an ``flock`` on it (shared or
    exclusive) and yield the descriptor; parent directories are created when missing."""
    return _LockedOpen(path, flags, shared)


class _LockedOpen:
    """The block of :func:`locked_open` (a plain context manager: it is on every append of
    the event log, where a generator's frame costs more than the lock)."""

    __slots__ = ("_fd", "_flags", "_path", "_shared")

    def __init__(self, path: Path, flags: int, shared: bool) -> None:
        self._path, self._flags, self._shared = path, flags, shared
        self._fd = -1

    def __enter__(self) -> int:
        path, flags = self._path, self._flags | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, 0o644)
        except FileNotFoundError:  # only then look at the parents (a syscall saved per lock)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, flags, 0o644)
        try:
            acquire(fd, shared=self._shared, path=path)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return fd

    def __exit__(self, *exc: object) -> None:
        os.close(self._fd)  # releases the flock


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

    def _hold(self, *, shared: bool) -> contextlib.AbstractContextManager[None]:
        return _Hold(self, shared)

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


class _Hold:
    """One operation's hold of a :class:`LeasableLock` (a plain context manager: the storage
    port takes one per operation, where a generator's frame costs more than the lock).

    Outside a lease it takes its own ``flock`` and lets it go at the end, after the
    lock's ``on_release``; during a lease (and not nested in a hold of this thread) it takes
    the lease's thread lock and makes the lease's ``flock`` strong enough."""

    __slots__ = ("_depth", "_fd", "_lock", "_shared")

    def __init__(self, lock: LeasableLock, shared: bool) -> None:
        self._lock, self._shared = lock, shared
        self._fd = -1  # -1: leased (the thread lock is held), else this hold's descriptor
        self._depth = 0

    def __enter__(self) -> None:
        lock = self._lock
        depth: int = getattr(lock._held, "depth", 0)
        if lock._leases and not depth:
            lock._local.acquire()
            try:
                if lock._leases:  # still open once this thread's turn came
                    lock._lease_for(shared=self._shared)
                    return
            except BaseException:
                lock._local.release()
                raise
            lock._local.release()
        self._fd = _lock_fd(lock.path, shared=self._shared)
        self._depth = depth
        lock._held.depth = depth + 1

    def __exit__(self, *exc: object) -> None:
        lock = self._lock
        if self._fd < 0:
            lock._local.release()
            return
        lock._held.depth = self._depth
        try:
            if lock._on_release is not None:
                lock._on_release()
        finally:
            os.close(self._fd)


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
