"""One worker process as the parent sees it: spawn, readiness, messages, death, kill.

Workers are clean ``subprocess`` children (``sys.executable -m tavernlab.js._worker FD
RSS_LIMIT OUTPUT_FD``), not ``fork`` copies: they inherit no threads, locks or kernel state, only
one end of a Unix socket pair and the write end of an output pipe (console output), and run in
their own session so a terminal Ctrl-C reaches only the parent. Their stderr goes to a
temporary file whose tail explains a death. Startup costs about 0.1 s (measured in
``bench/js_sandbox.py``).

Waiting never polls on a timer: the parent sleeps in ``poll(2)`` on the worker's socket and on
the job's wake pipe (:class:`~tavernlab.js._stopping.StopRequest`) until a message, a stop
request or the deadline arrives, and on the output pipe once a job has run for a moment (the
one extra wake-up of a job, :data:`tavernlab.js._serving.OUTPUT_DELAY`). A worker that dies
closes its end of the socket, which wakes the reader with an end-of-file.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any

from tavernlab.js._errors import WorkerStartError
from tavernlab.js._limits import WORKER_RSS_LIMIT


class WorkerProcess:
    """One worker process and the parent's end of its socket pair.

    ``rss_limit`` is handed to the worker: after a job it frees the job's memory and, if its
    resident set still exceeds the limit, announces ``("retire", rss)`` and exits while idle.
    ``rss`` is the resident set (bytes) the worker reported with its last outcome: what it
    held, idle and cleaned up, when it took that job (``None`` before its first job, or where
    ``/proc`` is unavailable).
    """

    def __init__(self, rss_limit: int = WORKER_RSS_LIMIT) -> None:
        self.rss_limit = rss_limit
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: Connection | None = None
        #: The read end of the worker's output pipe (its ``("out", ...)`` messages).
        self.output: Connection | None = None
        self.log: IO[bytes] | None = None
        self.pid: int | None = None
        self.ready = False
        self.rss: int | None = None
        self._poller: Any = None
        self._output_poller: Any = None

    def start(self) -> None:
        """Spawn the process (does not wait for it to be ready)."""
        mine, theirs = socket.socketpair()
        output_read, output_write = os.pipe()
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tavernlab.js._worker", str(theirs.fileno()),
                 str(self.rss_limit), str(output_write)],
                pass_fds=(theirs.fileno(), output_write), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=self.log, env=env, start_new_session=True)
        except BaseException:
            os.close(output_read)
            raise
        finally:
            theirs.close()
            os.close(output_write)
        self.conn = Connection(mine.detach())
        self.output = Connection(output_read, writable=False)
        self._output_poller = select.poll()
        self._output_poller.register(output_read, select.POLLIN)
        self._poller = select.poll()
        self._poller.register(self.conn.fileno(), select.POLLIN)
        self.pid = self.proc.pid
        self.ready = False
        self.rss = None

    def restart(self) -> None:
        """Kill the process (if alive) and spawn a fresh one in its place."""
        self.kill()
        self.start()

    def _poll(self, deadline: float, fds: tuple[int, ...]) -> set[int]:
        """The worker's socket and ``fds`` polled until one is readable or ``deadline`` (a
        ``time.monotonic()`` instant, ``inf`` for none) passes; the readable ones."""
        poller = self._poller
        for fd in fds:
            poller.register(fd, select.POLLIN)
        try:
            remaining = deadline - time.monotonic()
            timeout = None if math.isinf(remaining) else max(remaining, 0.0) * 1000
            events = poller.poll(timeout)
        finally:
            for fd in fds:
                poller.unregister(fd)
        return {fd for fd, _ in events}

    def wait(self, deadline: float, wake_fd: int | None = None) -> bool:
        """Sleep until the worker has something to read, ``wake_fd`` is readable or
        ``deadline`` (a ``time.monotonic()`` instant, ``inf`` for none) passes; returns whether
        the worker is readable."""
        readable = self._poll(deadline, () if wake_fd is None else (wake_fd,))
        assert self.conn is not None
        return self.conn.fileno() in readable

    def wait_job(self, deadline: float, wake_fd: int, watch_output: bool) -> tuple[bool, bool]:
        """Like :meth:`wait`, also watching the output pipe when ``watch_output``: whether the
        socket and whether the output pipe is readable."""
        assert self.conn is not None and self.output is not None
        output_fd = self.output.fileno()
        readable = self._poll(deadline, (wake_fd, output_fd) if watch_output else (wake_fd,))
        return self.conn.fileno() in readable, output_fd in readable

    def take_output(self) -> list[tuple[Any, ...]]:
        """Every output message already in the pipe, without sleeping (a message cut off by
        the worker's death ends the list)."""
        messages: list[tuple[Any, ...]] = []
        output = self.output
        if output is None or output.closed:
            return messages
        try:
            while self._output_poller.poll(0):
                messages.append(output.recv())
        except (EOFError, OSError):
            pass
        return messages

    def readable(self) -> bool:
        """Whether a message (or an end-of-file) is waiting, without sleeping."""
        return bool(self._poller.poll(0))

    def wait_ready(self, deadline: float, wake_fd: int | None = None) -> bool:
        """Wait for ``("ready", pid)``; ``False`` when the deadline passed or ``wake_fd`` woke
        us first. Raises :class:`WorkerStartError` if the process died."""
        assert self.conn is not None
        while not self.ready:
            if not self.wait(deadline, wake_fd):
                return False
            try:
                message = self.conn.recv()
            except (EOFError, OSError):
                raise WorkerStartError(
                    f"The JavaScript worker process could not start: {self.death()}") from None
            self.ready = message[0] == "ready"
        return True

    def send(self, message: tuple[Any, ...]) -> None:
        """Send one message (a dead worker is noticed by the reader)."""
        assert self.conn is not None
        with contextlib.suppress(OSError):
            self.conn.send_bytes(pickle.dumps(message))

    def death(self) -> str:
        """Why the process ended, plus the tail of its stderr if it wrote any."""
        assert self.proc is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=1.0)
        code = self.proc.returncode
        if code is None:
            why = "still running"
        elif code < 0:
            try:
                why = f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                why = f"killed by signal {-code}"
        else:
            why = f"exit status {code}"
        tail = ""
        if self.log is not None:
            with contextlib.suppress(OSError):
                self.log.seek(0)
                tail = self.log.read()[-2000:].decode("utf-8", "replace").strip()
        return f"{why}; {tail}" if tail else why

    def kill(self) -> None:
        """Kill the process and close the channel."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5.0)
        self.close()

    def close(self) -> None:
        """Close the channel and the stderr log."""
        if self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.close()
        if self.output is not None:
            with contextlib.suppress(OSError):
                self.output.close()
        if self.log is not None:
            with contextlib.suppress(OSError):
                self.log.close()

    def stop(self) -> None:
        """Ask an idle worker to exit, then make sure it is gone."""
        if self.proc is None:
            return
        self.send(("exit",))
        try:
            self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.close()
