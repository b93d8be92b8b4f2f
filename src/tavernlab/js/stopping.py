"""Why a job must stop: cancellation, the deadline, and a KeyboardInterrupt in the main thread.

A :class:`StopRequest` belongs to one job. It notices the job's
:class:`~tavernlab.cancel.CancelToken` and its deadline when polled, and records a
KeyboardInterrupt: the first cancels the job, a second one asks for the worker to be killed at
once. :func:`route_sigint` turns SIGINT into such a request while the main thread waits for a
job.
"""

from __future__ import annotations

import contextlib
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
