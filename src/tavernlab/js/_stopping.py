"""Why a job must stop: cancellation, the deadline, and a KeyboardInterrupt in the main thread.

A :class:`StopRequest` belongs to one job. It notices the job's
:class:`~tavernlab.cancel.CancelToken` and its deadline when polled, and records a
KeyboardInterrupt: the first cancels the job, a second one asks for the worker to be killed at
once. :func:`route_sigint` turns SIGINT into such a request while the main thread waits for a
job.

Its **wake pipe** is what the job's thread sleeps on (besides the worker's socket): a cancel
from another thread (the token's callback), a SIGINT, and the pool handing the job a worker
each write one byte to it, so the thread wakes exactly when something happened instead of
polling on a timer.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

from tavernlab.cancel import CancelToken


class StopRequest:
    """Why a job must stop (``cancel`` / ``deadline``), set from any thread or a handler."""

    def __init__(self, token: CancelToken | None) -> None:
        self.token = token
        self.reason: str | None = None
        self.keyboard_interrupt = False
        self.urgent = False
        self._lock = threading.RLock()  # re-entrant: a SIGINT handler may interrupt a wake()
        self._closed = False
        if hasattr(os, "pipe2"):
            self.wake_fd, self._write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        else:
            self.wake_fd, self._write_fd = os.pipe()
            os.set_blocking(self.wake_fd, False)
            os.set_blocking(self._write_fd, False)
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
        """Release the pipe and the token callback (a later cancel is then a no-op here)."""
        if self._unregister is not None:
            self._unregister()
        with self._lock:
            self._closed = True
            os.close(self.wake_fd)
            os.close(self._write_fd)

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

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main interpreter
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class NotStarted(Exception):
    """The job ended before a worker took it (``reason``: ``cancel`` or ``deadline``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
