"""Ambient provisioning context and progress events (docs/worktrees.md).

A caller (an orchestrator, a notebook cell, the CLI) wraps a provision in
:func:`run_with_provision_context` to give it a caller key for fair queueing, a cancel
signal and a progress observer. Provisioning reads this ambient signal rather than a tool
runner's timeout, so a long install is never cancelled by a generic deadline.

Besides upstream's progress events, a context may carry an *output observer*
(``on_output``): it receives every line the ``deps`` command and the setup hooks print, as
they print it, so a notebook can show the tail of a long install. This is tavernlab's
addition (upstream streams no hook output); it is a separate seam so that the progress
event stream stays exactly upstream's.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, TypeVar

from tavernlab.cancel import CancelToken

Phase = Literal["worktree", "clone", "deps", "copy", "setup"]
Outcome = Literal["ok", "failed", "cancelled"]


class QueuedEvent(TypedDict):
    """``{kind: "queued", position, phase}`` — the position in the queue changed."""

    kind: Literal["queued"]
    position: int
    phase: Phase


class StartedEvent(TypedDict):
    """``{kind: "started", phase}`` — a slot was granted; the first heavy phase starts."""

    kind: Literal["started"]
    phase: Phase


class PhaseEvent(TypedDict):
    """``{kind: "phase", phase}`` — a heavy phase begins."""

    kind: Literal["phase"]
    phase: Phase


class DoneEvent(TypedDict):
    """``{kind: "done", outcome}`` — provisioning finished."""

    kind: Literal["done"]
    outcome: Outcome


ProgressEvent = QueuedEvent | StartedEvent | PhaseEvent | DoneEvent
ProgressObserver = Callable[[ProgressEvent], Any]


class OutputLine(TypedDict):
    """``{phase, stream, line}`` — one line printed by the ``deps`` command or a setup hook
    (without its newline)."""

    phase: Phase
    stream: Literal["stdout", "stderr"]
    line: str


OutputObserver = Callable[[OutputLine], Any]
#: What a command runner is given to stream lines: ``sink(stream, line)``.
LineSink = Callable[[Literal["stdout", "stderr"], str], None]


@dataclass(frozen=True)
class ProvisionContext:
    """``{callerKey?, signal?, onProgress?}`` for the provisions run inside it, plus
    tavernlab's ``on_output`` (see the module docstring)."""

    caller_key: str | None = None
    signal: CancelToken | None = None
    on_progress: ProgressObserver | None = None
    on_output: OutputObserver | None = None

    def emit(self, event: ProgressEvent) -> None:
        """Deliver a progress event; observer exceptions are swallowed."""
        if self.on_progress is None:
            return
        with contextlib.suppress(Exception):
            self.on_progress(event)

    def line_observer(self, phase: Phase) -> LineSink | None:
        """What a runner of ``phase``'s commands passes as ``on_line``: each line goes to
        ``on_output`` (exceptions swallowed); ``None`` when nobody watches the output."""
        observer = self.on_output
        if observer is None:
            return None

        def deliver(stream: Literal["stdout", "stderr"], line: str) -> None:
            with contextlib.suppress(Exception):
                observer({"phase": phase, "stream": stream, "line": line})

        return deliver


_current: contextvars.ContextVar[ProvisionContext | None] = contextvars.ContextVar(
    "tavernlab_provision_context", default=None)

T = TypeVar("T")


def current_provision_context() -> ProvisionContext | None:
    """The ambient context, or ``None`` outside :func:`run_with_provision_context`."""
    return _current.get()


def run_with_provision_context(context: ProvisionContext, fn: Callable[[], T]) -> T:
    """Call ``fn`` with ``context`` as the ambient provisioning context.

    For a coroutine function the context is set inside the returned coroutine, so it stays
    visible across every ``await`` of that call and is absent outside it.
    """
    if inspect.iscoroutinefunction(fn):
        async def run_async() -> Any:
            token = _current.set(context)
            try:
                return await fn()
            finally:
                _current.reset(token)

        return run_async()  # type: ignore[return-value]
    token = _current.set(context)
    try:
        return fn()
    finally:
        _current.reset(token)
