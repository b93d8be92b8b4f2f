"""What a shell call may be given besides its command, and the long-lived resources it uses
(:mod:`tavernlab.shell._engine` runs the calls). Kept apart from the engine so that a lab can
name them - and offer the shell tool - without loading the interpreter until a shell call
actually runs."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any

from tavernlab.clock import Clock

if TYPE_CHECKING:
    from tavernlab.js import WorkerPool
    from tavernlab.shell._interpreters import KeptInterpreters


class HelperCall:
    """One function handed to the helper thread; :meth:`wait` for its result."""

    __slots__ = ("_args", "_done", "_error", "_finished", "_fn", "_kwargs", "_result")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> None:
        self._fn, self._args, self._kwargs = fn, args, kwargs
        self._result: Any = None
        self._error: BaseException | None = None
        self._finished = False  # set before _done is released
        self._done = threading.Lock()
        self._done.acquire()  # released by the helper when the function returned

    def run(self) -> None:
        """Run the function (on the helper thread) and release the waiter."""
        try:
            self._result = self._fn(*self._args, **self._kwargs)
        except BaseException as error:  # handed to the waiter
            self._error = error
        finally:
            self._fn = self._args = self._kwargs = None  # type: ignore[assignment]
            self._finished = True
            self._done.release()

    def wait(self) -> Any:
        """The function's result (or its exception, raised here). Waiting is a plain lock
        acquisition, which a signal interrupts: a ``KeyboardInterrupt`` escapes while the
        function still runs, and calling ``wait`` again goes on waiting (or returns at once
        when the function finished meanwhile, even if the interrupt came right after the
        lock was taken)."""
        if not self._finished:
            self._done.acquire()
        if self._error is not None:
            raise self._error
        return self._result


class MainThreadHelper:
    """The thread that runs interpreters for callers on the main thread where an
    :class:`InterruptWatch` cannot watch it (another ``SIGINT`` handler, or a signal wake-up
    descriptor already set). Created on first use and reused (starting a thread per call
    costs more than the call itself); created again in a forked child, which inherits this
    object but not its thread.

    The handoff is a queue and one lock per call, not a ``concurrent.futures`` executor:
    its future and condition cost about 0.1 ms more per round trip on a 2-core machine (a
    shell call on the main thread crosses threads twice; ``bench/shell.py`` times that call
    whole)."""

    def __init__(self) -> None:
        self._queue: SimpleQueue[HelperCall | None] | None = None
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> HelperCall:
        """Run ``fn`` on the helper thread."""
        call = HelperCall(fn, args, kwargs)
        with self._lock:
            if self._queue is None or self._pid != os.getpid():
                self._queue = SimpleQueue()
                self._thread = threading.Thread(target=_serve, args=(self._queue,),
                                                name="tavernlab-shell", daemon=True)
                self._thread.start()
                self._pid = os.getpid()
            self._queue.put(call)
        return call

    def close(self) -> None:
        """Stop the thread once its current call (if any) has finished."""
        with self._lock:
            queue, thread, self._queue, self._thread = self._queue, self._thread, None, None
        if queue is not None and thread is not None and self._pid == os.getpid():
            queue.put(None)
            thread.join()


def _serve(queue: SimpleQueue[HelperCall | None]) -> None:
    """The helper thread: run each call in turn until the ``None`` that closes it."""
    while (call := queue.get()) is not None:
        call.run()


#: The process-wide helper (what every lab shares unless it has services of its own).
DEFAULT_HELPER = MainThreadHelper()


# The C functions behind ``signal.signal`` and ``signal.getsignal`` (whose wrappers turn
# numbers and handlers into enums: a third of the watch's cost per call).
_SIGINT = int(signal.SIGINT)
_signal_handler: Callable[[int, Any], Any] = getattr(signal, "_signal", signal).signal
_getsignal: Callable[[int], Any] = getattr(signal, "_signal", signal).getsignal


class Interrupted:
    """What :meth:`InterruptWatch.begin` returns: whether a keyboard interrupt arrived."""

    __slots__ = ("arrived",)

    def __init__(self) -> None:
        self.arrived = False


class InterruptWatch:
    """Keyboard interrupts of the main thread, seen while it runs native code.

    An interpreter running on the main thread holds no Python frame that a
    ``KeyboardInterrupt`` could be raised in until it returns, and its callbacks (file
    operations, builtins, output) run on that thread too, where an exception raised in the
    middle would cut an operation short. :meth:`begin` therefore replaces the default
    ``SIGINT`` handler, for the block, by one that only notes the interrupt, and points
    Python's signal wake-up descriptor at a pipe that one thread of the process (created on
    first use, and again in a forked child) waits on: when ``SIGINT`` arrives it cancels the
    watched token, from that thread, at once. After :meth:`end` the previous handler and
    descriptor are back; the caller raises the interrupt.

    This costs a few system calls per block instead of a round trip to another thread. It
    applies only where nothing else listens: the default ``SIGINT`` handler is installed and
    no wake-up descriptor is set (an asyncio loop handling signals sets one); otherwise
    :meth:`begin` returns ``None`` and the caller hands its work to a
    :class:`MainThreadHelper` instead."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = -1
        self._write_fd = -1
        #: The token being watched (the main thread runs one call at a time).
        self._token: Any = None

    def _start(self) -> int:
        """The write end of the wake-up pipe (made, with its thread, once per process)."""
        with self._lock:
            if self._pid != os.getpid():
                read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
                os.set_blocking(write_fd, False)  # what the wake-up descriptor requires
                threading.Thread(target=self._serve, args=(read_fd,),
                                 name="tavernlab-shell-interrupt", daemon=True).start()
                self._write_fd, self._pid = write_fd, os.getpid()
            return self._write_fd

    def _serve(self, read_fd: int) -> None:
        while True:
            data = os.read(read_fd, 64)
            if not data:
                return
            token = self._token
            if signal.SIGINT in data and token is not None:
                token.cancel("interrupted")

    def begin(self, token: Any) -> Interrupted | None:
        """From now on (on the main thread), cancel ``token`` (``cancel(reason)``) when a
        keyboard interrupt arrives, until :meth:`end`; returns what will have arrived, or
        ``None`` when this thread cannot be watched this way (see the class notes: nothing
        was changed then, and :meth:`end` must not be called)."""
        if (threading.current_thread() is not threading.main_thread()
                or _getsignal(_SIGINT) is not signal.default_int_handler):
            return None
        previous_fd = signal.set_wakeup_fd(self._start(), warn_on_full_buffer=False)
        if previous_fd != -1:  # an event loop's: left as it was
            signal.set_wakeup_fd(previous_fd)
            return None
        seen = Interrupted()

        def note(signum: int, frame: object) -> None:
            seen.arrived = True

        try:
            self._token = token
            _signal_handler(_SIGINT, note)
        except BaseException:  # an interrupt before the handler was in place
            self.end()
            raise
        return seen

    def end(self) -> None:
        """Stop watching (after a :meth:`begin` that returned a value): the default handler
        and no wake-up descriptor are back."""
        self._token = None
        _signal_handler(_SIGINT, signal.default_int_handler)
        signal.set_wakeup_fd(-1)


#: The process-wide watch of the main thread's keyboard interrupts.
INTERRUPTS = InterruptWatch()


#: A listener for output as it is produced: ``(stdout chunk, stderr chunk)``.
OutputListener = Callable[[str, str], None]


@dataclass(frozen=True, slots=True)
class ShellOptions:
    """What one call may ask of the interpreter beyond its command: a deterministic ``clock``
    (then ``date`` reads it, ``$RANDOM`` is seeded with ``seed`` and file times are fixed, see
    :mod:`tavernlab.shell._fixed_time`) and a listener for output as it is produced."""

    clock: Clock | None = None
    seed: int = 0
    on_output: OutputListener | None = None


@dataclass(frozen=True, slots=True)
class ShellResources:
    """The long-lived things a shell call uses: the worker pool of its ``js`` builtins
    (``None``: the process-wide pool), the helper thread for main-thread callers and the
    kept interpreters calls take from (``None``: the process-wide ones)."""

    pool: WorkerPool | None = None
    helper: MainThreadHelper = DEFAULT_HELPER
    interpreters: KeptInterpreters | None = None


