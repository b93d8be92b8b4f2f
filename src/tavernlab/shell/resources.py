"""What a shell call may be given besides its command, and the long-lived resources it uses
(:mod:`tavernlab.shell.engine` runs the calls). Kept apart from the engine so that a lab can
name them - and offer the shell tool - without loading the interpreter until a shell call
actually runs."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tavernlab.clock import Clock

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from tavernlab.js.pool import WorkerPool


class MainThreadHelper:
    """The thread that runs interpreters for callers on the main thread (created on first
    use, reused: starting a thread per call costs more than the call itself; created again
    in a forked child, which inherits this object but not its thread)."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any
               ) -> Future[Any]:
        """Run ``fn`` on the helper thread."""
        with self._lock:
            if self._executor is None or self._pid != os.getpid():
                from concurrent.futures import ThreadPoolExecutor

                self._executor = ThreadPoolExecutor(max_workers=1,
                                                    thread_name_prefix="tavernlab-shell")
                self._pid = os.getpid()
            return self._executor.submit(fn, *args, **kwargs)

    def close(self) -> None:
        """Stop the thread once its current call (if any) has finished."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)


#: The process-wide helper (what every lab shares unless it has services of its own).
DEFAULT_HELPER = MainThreadHelper()


#: A listener for output as it is produced: ``(stdout chunk, stderr chunk)``.
OutputListener = Callable[[str, str], None]


@dataclass(frozen=True, slots=True)
class ShellOptions:
    """What one call may ask of the interpreter beyond its command: a deterministic ``clock``
    (then ``date`` reads it, ``$RANDOM`` is seeded with ``seed`` and file times are fixed, see
    :mod:`tavernlab.shell.fixed_time`) and a listener for output as it is produced."""

    clock: Clock | None = None
    seed: int = 0
    on_output: OutputListener | None = None


@dataclass(frozen=True, slots=True)
class ShellResources:
    """The long-lived things a shell call uses: the worker pool of its ``js`` builtins
    (``None``: the process-wide pool) and the helper thread for main-thread callers."""

    pool: WorkerPool | None = None
    helper: MainThreadHelper = DEFAULT_HELPER


