"""What the notebook tests share: running cells in IPython's testing shell, and talking to a
real tavernlab kernel (started from ``kernel-spec/`` through ``JUPYTER_PATH``)."""

from __future__ import annotations

import os
import queue
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from IPython.terminal.interactiveshell import TerminalInteractiveShell
from IPython.utils.capture import capture_output
from jupyter_client import KernelManager

REPO = Path(__file__).resolve().parents[2]
KERNEL_SPEC = REPO / "kernel-spec" / "tavernlab"


@dataclass
class CellRun:
    """What one cell did: its result, captured streams and rich outputs."""

    result: Any
    stdout: str
    stderr: str
    outputs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def error(self) -> BaseException | None:
        """The exception the cell raised (or the usage error before it ran)."""
        return self.result.error_in_exec or self.result.error_before_exec

    @property
    def value(self) -> Any:
        """The cell's value (what ``Out[N]`` shows)."""
        return self.result.result


class Notebook:
    """Runs cells in the testing shell the way a notebook would (each with its number)."""

    def __init__(self, shell: TerminalInteractiveShell) -> None:
        self.shell = shell

    def cell(self, source: str) -> CellRun:
        """Run one cell, capturing stdout, stderr and displays."""
        with capture_output() as captured:
            result = self.shell.run_cell(source, store_history=True)
        return CellRun(result, captured.stdout, captured.stderr,
                       [dict(o.data) for o in captured.outputs])

    @property
    def ns(self) -> dict[str, Any]:
        """The user namespace."""
        return self.shell.user_ns  # type: ignore[no-any-return]

    @property
    def next_cell(self) -> int:
        """The number the next cell will get (its ``In [N]``)."""
        return int(self.shell.execution_count)


class Kernel:
    """A running tavernlab kernel and a blocking client, with per-cell message collection."""

    def __init__(self, manager: Any, client: Any) -> None:
        self.manager = manager
        self.client = client
        #: IOPub messages that belonged to no cell being executed (late output).
        self.others: list[dict[str, Any]] = []

    def execute(self, code: str, *, on_message: Any = None, timeout: float = 120,
                allow_stdin: bool | None = None
                ) -> tuple[dict[str, Any], list[tuple[float, dict[str, Any]]]]:
        """Run ``code``; returns the execute reply and this cell's IOPub messages (each with
        its arrival time on the monotonic clock) up to the kernel going idle.
        ``on_message(msg)`` sees each of them as it arrives; ``allow_stdin`` false runs the
        cell as a front end that takes no input would."""
        msg_id = self.client.execute(code, allow_stdin=allow_stdin)
        messages: list[tuple[float, dict[str, Any]]] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                msg = self.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no idle status within {timeout} s for {code!r}") \
                    from None
            if msg["parent_header"].get("msg_id") != msg_id:
                self.others.append(msg)
                continue
            messages.append((time.monotonic(), msg))
            if on_message is not None:
                on_message(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        while True:
            reply = self.client.get_shell_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply, messages


def start_kernel(cwd: Path, home: Path | None = None) -> Kernel:
    """Start the tavernlab kernel (from ``JUPYTER_PATH``) in ``cwd``, with ``HOME`` set to
    ``home`` when given (so ``~/.agentproto`` is private)."""
    manager = KernelManager(kernel_name="tavernlab")
    env = {**os.environ, **({"HOME": str(home)} if home is not None else {})}
    manager.start_kernel(cwd=str(cwd), env=env)
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=120)
    return Kernel(manager, client)


def stop_kernel(kernel: Kernel) -> None:
    """Shut the kernel down and wait for its process to end."""
    kernel.client.stop_channels()
    kernel.manager.shutdown_kernel(now=False)


def texts(messages: list[tuple[float, dict[str, Any]]], name: str = "stdout") -> str:
    """Everything a cell streamed to ``name``."""
    return "".join(m["content"]["text"] for _, m in messages
                   if m["msg_type"] == "stream" and m["content"]["name"] == name)
