"""Getting a job's output into the cell that started it, while the job runs.

Under ipykernel 7 a thread's ``print``/``display`` goes to the *latest* shell request, not to
the cell that started the work (the automatic thread tracking was removed in 7.0). The shell
runs on a helper thread and worktree progress arrives on scheduler threads, so every write
made on a job's behalf is wrapped in :meth:`CellRouter.routed`: it sets the cell's parent
header for the writing thread only (``shell.set_thread_parent``, public since ipykernel 7)
and resets it afterwards, leaving every other thread's routing alone. Outside a kernel (a
terminal IPython, the testing shell) there is nothing to route.

:class:`CellOutput` is the ``on_output`` callback of ``%%js`` and ``%ws_shell``: with
streaming on it writes each chunk at once (flushing at most every :data:`FLUSH_INTERVAL_S`,
so a flood of lines stays well under Jupyter's IOPub rate limit; ipykernel's own 0.2 s
flush sends the rest), otherwise it writes everything when the job ends.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any, Literal, TypeVar

from tavernlab.clock import SYSTEM_CLOCK, Clock
from tavernlab.errors import NotebookError
from tavernlab.notebook._errors import cell_interrupted

#: Shortest time between two explicit flushes of one stream while streaming.
FLUSH_INTERVAL_S = 0.05

Stream = Literal["stdout", "stderr"]


class CellRouter:
    """Routes writes from any thread to the cell that was running when it was created."""

    def __init__(self, shell: Any) -> None:
        self._set = getattr(shell, "set_thread_parent", None)
        self._reset = getattr(shell, "reset_thread_parent", None)
        get_parent = getattr(shell, "get_parent", None)
        self._parent = get_parent() if self._set is not None and get_parent else None

    @contextlib.contextmanager
    def routed(self) -> Iterator[None]:
        """Within the block, this thread's output goes to the cell."""
        if self._parent is None or self._set is None or self._reset is None:
            yield
            return
        tokens = self._set(self._parent)
        try:
            yield
        finally:
            self._reset(tokens)


def write(stream: Stream, text: str, *, flush: bool = True) -> None:
    """Write ``text`` to the current ``sys.stdout``/``sys.stderr``."""
    target = sys.stdout if stream == "stdout" else sys.stderr
    target.write(text)
    if flush:
        target.flush()


class CellOutput:
    """A job's output, shown in its cell as it is produced (or at the end, or not at all).

    ``show`` false (``--quiet``) shows nothing; ``stream`` false holds everything until
    :meth:`finish`. Use :meth:`js_chunk` as ``run.js``'s ``on_output`` and
    :meth:`shell_chunk` as ``run.shell``'s.
    """

    def __init__(self, shell: Any, *, show: bool = True, stream: bool = True,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.router = CellRouter(shell)
        self.show = show
        self.stream = stream
        self._clock = clock
        self._flushed: dict[Stream, float] = {"stdout": 0.0, "stderr": 0.0}
        self._held: list[tuple[Stream, str]] = []

    def js_chunk(self, stream: Stream, text: str) -> None:
        """One chunk of a ``js`` job's output."""
        if not self.show:
            return
        if not self.stream:
            self._held.append((stream, text))
            return
        now = self._clock.monotonic()
        due = now - self._flushed[stream] >= FLUSH_INTERVAL_S
        with self.router.routed():
            write(stream, text, flush=due)
        if due:
            self._flushed[stream] = now

    def shell_chunk(self, stdout: str, stderr: str) -> None:
        """One chunk of a shell call's output (both streams at once, either may be empty)."""
        for stream, text in (("stdout", stdout), ("stderr", stderr)):
            if text:
                self.js_chunk(stream, text)  # type: ignore[arg-type]

    def finish(self) -> None:
        """Write what was held back and flush both streams."""
        held, self._held = self._held, []
        with self.router.routed():
            for stream, text in held:
                write(stream, text, flush=False)
            sys.stdout.flush()
            sys.stderr.flush()

    def note(self, text: str) -> None:
        """One line of the magic's own (a status, ``cancelled after 1.2 s``) on stderr."""
        with self.router.routed():
            write("stderr", text + "\n")

    def say(self, text: str) -> None:
        """One line of news of the magic's own (what it chose for the user) on stdout."""
        with self.router.routed():
            write("stdout", text + "\n")


class Stopwatch:
    """Elapsed wall time of one job, for ``cancelled after 1.2 s``."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._start = clock.monotonic()

    @property
    def elapsed(self) -> float:
        """Seconds since the stopwatch was made."""
        return self._clock.monotonic() - self._start

    def cancelled_line(self) -> str:
        """``cancelled after 1.2 s``."""
        return f"cancelled after {self.elapsed:.1f} s"


R = TypeVar("R")


def run_cell_job(output: CellOutput, job: Callable[[], R], *,
                 keep: Callable[[R], None] | None,
                 error_of: Callable[[R], NotebookError | None], raise_on_error: bool) -> R:
    """What ``%%js`` and ``%ws_shell`` do around their job: run it with its output streaming
    into the cell; on a kernel interrupt print ``cancelled after 1.2 s`` and re-raise
    (:func:`~tavernlab.notebook._errors.cell_interrupted`); hand the result to ``keep``
    (``--out VAR``) before anything can raise; and for a failed result (``error_of``) raise
    its error, or with ``--no-raise`` print it as one line and return the result."""
    watch = Stopwatch()
    try:
        result = job()
    except KeyboardInterrupt:
        output.finish()
        output.note(watch.cancelled_line())
        raise cell_interrupted() from None
    output.finish()
    if keep is not None:
        keep(result)
    error = error_of(result)
    if error is not None:
        if raise_on_error:
            raise error
        # an error whose details were streamed already names only what is left to say
        output.note(getattr(error, "streamed_note", f"{error.code}: {error.message}"))
    return result
