"""One worker process as the parent sees it: spawn, readiness, messages, death, kill.

Workers are clean ``subprocess`` children (``sys.executable -m tavernlab.js.worker FD``), not
``fork`` copies: they inherit no threads, locks or kernel state, only one end of a Unix socket
pair, and run in their own session so a terminal Ctrl-C reaches only the parent. Their stderr
goes to a temporary file whose tail explains a death. Startup costs about 0.1 s (measured in
``bench/js_sandbox.py``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any

from tavernlab.js.errors import WorkerStartError

#: Wake-up interval while waiting for a starting worker.
POLL_SLICE = 0.02


class WorkerProcess:
    """One worker process and the parent's end of its socket pair."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: Connection | None = None
        self.log: IO[bytes] | None = None
        self.pid: int | None = None
        self.ready = False

    def start(self) -> None:
        """Spawn the process (does not wait for it to be ready)."""
        mine, theirs = socket.socketpair()
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tavernlab.js.worker", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=self.log, env=env, start_new_session=True)
        finally:
            theirs.close()
        self.conn = Connection(mine.detach())
        self.pid = self.proc.pid
        self.ready = False

    def wait_ready(self, deadline: float) -> bool:
        """Wait for ``("ready", pid)``; ``False`` when the deadline passed first."""
        assert self.conn is not None and self.proc is not None
        while not self.ready:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                if self.conn.poll(min(remaining, POLL_SLICE)):
                    message = self.conn.recv()
                    self.ready = message[0] == "ready"
                elif self.proc.poll() is not None:
                    raise EOFError
            except (EOFError, OSError):
                raise WorkerStartError(
                    f"The JavaScript worker process could not start: {self.death()}") from None
        return True

    def send(self, message: tuple[Any, ...]) -> None:
        """Send one message (a dead worker is noticed by the reader)."""
        assert self.conn is not None
        with contextlib.suppress(OSError):
            self.conn.send(message)

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
