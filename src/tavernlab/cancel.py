"""Cooperative cancellation shared by the tools, the shell and the JavaScript sandbox.

A :class:`CancelToken` belongs to one in-flight operation (a tool call, a ``run.js`` job). It
can be cancelled from any thread (``run.cancel()``, a Jupyter interrupt, a shell deadline);
the operation checks it at its own safe points and stops scheduling new work, while work
already started (a file write holding the lock) completes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from tavernlab.errors import Cancelled


class CancelToken:
    """A one-way flag with callbacks: once cancelled it stays cancelled.

    The event a :meth:`wait` blocks on is made by the first wait (most tokens, one per
    tool call, are never waited on)."""

    __slots__ = ("_callbacks", "_cancelled", "_event", "_lock", "reason")

    def __init__(self) -> None:
        self._cancelled = False
        self._event: threading.Event | None = None
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.reason = ""

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._cancelled

    def cancel(self, reason: str = "cancelled") -> None:
        """Request cancellation and run the registered callbacks (once)."""
        with self._lock:
            if self._cancelled:
                return
            self.reason = reason
            self._cancelled = True
            if self._event is not None:
                self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def check(self) -> None:
        """Raise :class:`~tavernlab.errors.Cancelled` if cancellation was requested."""
        if self._cancelled:
            raise Cancelled()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` when cancelled (now, if already cancelled); returns an unregister."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)

                def unregister() -> None:
                    with self._lock:
                        if callback in self._callbacks:
                            self._callbacks.remove(callback)

                return unregister
        callback()
        return lambda: None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` passes; returns whether it was cancelled."""
        with self._lock:
            if self._cancelled:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)
