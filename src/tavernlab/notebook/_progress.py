"""How ``%worktree new`` shows provisioning progress, behind a seam a widget can fill.

A *progress factory* is called once per provision with the slug and the provision's
:class:`~tavernlab.cancel.CancelToken` (a widget's Cancel button cancels it: the provision
then takes its cancellation path, removing the half-made worktree and branch) and returns a
:class:`ProvisionObserver`: ``update(event)`` receives every progress event (from whichever
thread emits it: the scheduler's queue positions arrive on other threads) and ``close(outcome)``
is called once at the end with ``ok``, ``failed`` or ``cancelled``; ``output(line)``
receives each line the deps command and setup hooks print.

The default, :class:`TextProgress`, is one live text line updated in place through a display
id (``worktree add-search [  1.20s] phase deps``). :func:`set_progress_factory` installs
another (``None`` puts the text line back).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from IPython.core.getipython import get_ipython
from IPython.display import Pretty, display

from tavernlab.cancel import CancelToken
from tavernlab.clock import SYSTEM_CLOCK, Clock
from tavernlab.notebook._output import CellRouter
from tavernlab.views import progress_line
from tavernlab.worktree import DoneEvent, Outcome, OutputLine, ProgressEvent


class ProvisionObserver(Protocol):
    """What watches one provision: its progress events, its hook output and its end.

    The text line and the ``ProvisionProgress`` widget both fill it."""

    def update(self, event: ProgressEvent) -> None:
        """A progress event arrived (any thread)."""

    def output(self, line: OutputLine) -> None:
        """A deps or setup-hook command printed a line (a reader thread)."""

    def close(self, outcome: Outcome) -> None:
        """The provision ended: ``ok``, ``failed`` or ``cancelled``."""


ProgressFactory = Callable[[str, CancelToken], ProvisionObserver]


class TextProgress:
    """A text line in the cell, updated in place as events arrive."""

    def __init__(self, slug: str, token: CancelToken, *, shell: Any = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.slug = slug
        self.token = token
        self._clock = clock
        self._start = clock.monotonic()
        self._router = CellRouter(shell if shell is not None else get_ipython())
        self._lock = threading.Lock()
        self.last: ProgressEvent | None = None
        self._handle = display(Pretty(self.line()),  # type: ignore[no-untyped-call]
                               display_id=True)

    def line(self) -> str:
        """The line as it reads now."""
        return progress_line(self.slug, self._clock.monotonic() - self._start, self.last)

    def _show(self) -> None:
        if self._handle is not None:
            with self._router.routed():
                self._handle.update(Pretty(self.line()))  # type: ignore[no-untyped-call]

    def update(self, event: ProgressEvent) -> None:
        """Show ``event`` in the line."""
        with self._lock:
            self.last = event
            self._show()

    def output(self, line: OutputLine) -> None:
        """Hook output is not part of the one-line display (the widget shows it)."""

    def close(self, outcome: Outcome) -> None:
        """End on ``done: <outcome>`` (provisions that failed before any event included)."""
        with self._lock:
            if self.last is None or self.last["kind"] != "done":
                self.last = DoneEvent(kind="done", outcome=outcome)
            self._show()


_factory: ProgressFactory | None = None


def set_progress_factory(factory: ProgressFactory | None) -> None:
    """Make ``factory`` show every later ``%worktree new`` (``None``: the text line)."""
    global _factory
    _factory = factory


def start_progress(slug: str, token: CancelToken) -> ProvisionObserver:
    """The progress display of one provision, from the installed factory."""
    return (_factory or TextProgress)(slug, token)
