"""Why a job must stop: cancellation, the deadline, and a KeyboardInterrupt in the main thread.

A :class:`StopRequest` belongs to one job. It notices the job's
:class:`~tavernlab.cancel.CancelToken` and its deadline when polled, and records a
KeyboardInterrupt: the first cancels the job, a second one asks for the worker to be killed at
once. :func:`route_sigint` turns SIGINT into such a request while the main thread waits for a
job.

Its **wake pipe** is what the job's thread sleeps on (besides the worker's socket): a cancel
from another thread (the token's callback), a SIGINT, and the pool handing the job a worker
each write one byte to it, so the thread wakes exactly when something happened instead of
polling on a timer. A closed request hands its pipe, drained, to the next request of the same
process (creating and closing a pipe costs three system calls per job; a closed request never
writes to it again, and a forked child starts with pipes of its own).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal.signal without the enum wrapping
import contextlib
import math
import os
import select
import signal
import threading
import time
from collections import deque
from collections.abc import Iterator
from types import FrameType

from tavernlab.cancel import CancelToken

#: Drained wake pipes of closed requests, ready for the next one: ``(pid, read, write)``.
_SPARE_PIPES: deque[tuple[int, int, int]] = deque()


def _wake_pipe() -> tuple[int, int]:
    """A drained, non-blocking, close-on-exec pipe: a spare one of this process, or a new one."""
    pid = os.getpid()
    while True:
        try:
            owner, read_fd, write_fd = _SPARE_PIPES.pop()
        except IndexError:
            break
        if owner == pid:
            return read_fd, write_fd
        os.close(read_fd)  # a forked child's copy of a pipe its parent keeps using
        os.close(write_fd)
    if hasattr(os, "pipe2"):
        return os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    return read_fd, write_fd


class StopRequest:
    """Why a job must stop (``cancel`` / ``deadline``), set from any thread or a handler."""

    def __init__(self, token: CancelToken | None) -> None:
        self.token = token
        self.reason: str | None = None
        self.keyboard_interrupt = False
        self.urgent = False
        self._lock = threading.RLock()  # re-entrant: a SIGINT handler may interrupt a wake()
        self._closed = False
        self.wake_fd, self._write_fd = _wake_pipe()
        self._unregister = token.on_cancel(self.wake) if token is not None else None

    def wake(self) -> None:
        """Wake the job's thread (from any thread, or a signal handler in the main thread)."""
        with self._lock:
            if self._closed:
                return
            with contextlib.suppress(BlockingIOError):  # a byte is already waiting
                os.write(self._write_fd, b"\0")

    def wait_until(self, deadline: float) -> None:
        """Sleep until woken or ``deadline`` (``inf``: no deadline), then drain."""
        remaining = deadline - time.monotonic()
        if remaining > 0:
            select.select([self.wake_fd], [], [], None if math.isinf(remaining) else remaining)
        self.drain()

    def drain(self) -> None:
        """Consume the pending wake-ups."""
        with contextlib.suppress(BlockingIOError):
            while os.read(self.wake_fd, 512):
                pass

    def close(self) -> None:
        """Release the pipe and the token callback (a later cancel is then a no-op here); the
        pipe, drained, goes to the next request."""
        if self._unregister is not None:
            self._unregister()
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.drain()  # no wake() writes after _closed, so the pipe is left empty
        _SPARE_PIPES.append((os.getpid(), self.wake_fd, self._write_fd))

    def poll(self, deadline: float) -> str | None:
        """The stop reason, noticing the token and the deadline."""
        if self.reason is None:
            if self.token is not None and self.token.cancelled:
                self.reason = "cancel"
            elif time.monotonic() >= deadline:
                self.reason = "deadline"
        return self.reason

    def interrupt(self) -> None:
        """A KeyboardInterrupt arrived: cancel; a second one kills the worker at once."""
        if self.keyboard_interrupt:
            self.urgent = True
        self.keyboard_interrupt = True
        if self.reason is None:
            self.reason = "cancel"
        self.wake()


@contextlib.contextmanager
def route_sigint(stop: StopRequest) -> Iterator[None]:
    """In the main thread, turn SIGINT into a stop request for the job's duration."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.interrupt()

    try:  # _signal: the same call without signal.signal's enum conversions (~10 us each)
        previous = _signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main interpreter
        yield
        return
    try:
        yield
    finally:
        _signal.signal(signal.SIGINT, previous)


class NotStarted(Exception):
    """The job ended before a worker took it (``reason``: ``cancel`` or ``deadline``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
