"""A cancellation signal: Python's counterpart of upstream's ``AbortSignal``.

Provisioning, the scheduler and the subprocess runner take an optional :class:`CancelSignal`.
Anyone holding it may call :meth:`CancelSignal.cancel` from any thread; listeners registered
with :meth:`CancelSignal.on_cancel` run once, in the cancelling thread.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable


class CancelSignal:
    """A one-shot, thread-safe cancellation flag with listeners."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._listeners: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` has been called."""
        return self._cancelled

    def cancel(self) -> None:
        """Set the signal and run every listener once; later calls do nothing."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            with contextlib.suppress(Exception):  # a listener never breaks the canceller
                listener()

    def on_cancel(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Run ``listener`` on cancellation (at once if already cancelled).

        Returns a function that unregisters the listener, so a finished operation stops
        reacting to a later cancel.
        """
        with self._lock:
            if not self._cancelled:
                self._listeners.append(listener)

                def remove() -> None:
                    with self._lock:
                        if listener in self._listeners:
                            self._listeners.remove(listener)

                return remove
        listener()
        return lambda: None
