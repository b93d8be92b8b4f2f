"""Cancellation (docs/shell.md) lets started file operations finish and runs nothing
after them."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import pytest

from tavernlab.cancel import CancelToken
from tavernlab.shell import ShellOutcome, ShellResult

from .conftest import Workspace, lock_waiter_blocked

PYTHON_TWO_WRITES = (
    "python3 -c \"import pathlib; p = pathlib.Path('/output/main.md'); "
    "p.write_text('draft'); p.write_text('second')\"; echo next > /output/next.txt")


def run_in_thread(ws: Workspace, command: str, token: CancelToken
                  ) -> tuple[threading.Thread, dict[str, ShellResult]]:
    """Start a shell call on a worker thread."""
    box: dict[str, ShellResult] = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", ws.shell(command, token=token)))
    worker.start()
    return worker, box


def cancel_while_first_write_is_in_flight(ws: Workspace, command: str) -> ShellResult:
    """Hold the run lock shared so the call's first write waits inside storage, cancel then,
    and release: the write must complete, nothing after it may start."""
    token = CancelToken()
    with ws.fs.lock.shared():
        worker, box = run_in_thread(ws, command, token)
        while not lock_waiter_blocked(ws.fs):
            time.sleep(0.002)
        token.cancel()
    worker.join()
    return box["r"]


def test_python_write_in_flight_completes_and_the_next_never_starts(ws: Workspace) -> None:
    # 12.19 (python3 variant)
    result = cancel_while_first_write_is_in_flight(ws, PYTHON_TWO_WRITES)
    assert result.outcome is ShellOutcome.CANCELLED
    assert result.content.splitlines()[0] == "Command cancelled."
    assert result.error_code == "workspace.shell_cancelled"
    assert result.exit_code is None
    assert ws.read("output/main.md") == "draft"
    assert not ws.exists("output/next.txt")
    assert result.resource_refs == ["output/main.md"]
    assert ws.scope.tracker.candidate is None


def test_cancel_wakes_a_sleeping_call(ws: Workspace) -> None:
    token = CancelToken()
    worker, box = run_in_thread(ws, "sleep 60; echo late > /scratch/late.txt", token)
    threading.Timer(0.2, token.cancel).start()
    worker.join(timeout=20)
    assert not worker.is_alive()
    assert box["r"].content == "Command cancelled."
    assert not ws.exists("scratch/late.txt")


def test_cancel_stops_a_busy_loop(ws: Workspace) -> None:
    token = CancelToken()
    worker, box = run_in_thread(ws, "echo started; while :; do :; done", token)
    threading.Timer(0.2, token.cancel).start()
    worker.join(timeout=20)
    assert box["r"].content.splitlines()[0] == "Command cancelled."


def test_a_call_cancelled_before_it_starts_runs_nothing(ws: Workspace) -> None:
    token = CancelToken()
    token.cancel()
    result = ws.shell("echo x > /scratch/x.txt", token=token)
    assert result.content == "Command cancelled."
    assert not ws.exists("scratch/x.txt")


JS_TWO_WRITES = (
    "js -e \"import { workspace } from '@tauritavern/runtime'; "
    "workspace.writeText('output/main.md', 'draft'); "
    "workspace.writeText('output/main.md', 'second')\"; echo next > /output/next.txt")


def test_js_write_in_flight_completes_and_the_next_never_starts(ws: Workspace) -> None:
    # 12.19 (js variant)
    result = cancel_while_first_write_is_in_flight(ws, JS_TWO_WRITES)
    assert result.content.splitlines()[0] == "Command cancelled."
    assert result.error_code == "workspace.shell_cancelled"
    assert ws.read("output/main.md") == "draft"
    assert not ws.exists("output/next.txt")
    assert result.resource_refs == ["output/main.md"]


def test_a_keyboard_interrupt_cancels_the_call_and_is_re_raised(ws: Workspace) -> None:
    # a Jupyter interrupt / Ctrl-C reaches the main thread while the interpreter works
    assert threading.current_thread() is threading.main_thread()
    token = CancelToken()

    def interrupt_once_running() -> None:
        while not ws.exists("scratch/before.txt"):
            time.sleep(0.002)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_running).start()
    with pytest.raises(KeyboardInterrupt):
        ws.shell("echo x > /scratch/before.txt; sleep 60; echo y > /scratch/after.txt",
                 token=token)
    assert token.cancelled
    assert ws.read("scratch/before.txt") == "x\n"
    assert not ws.exists("scratch/after.txt")
    assert ws.scope.tracker.candidate is None


def interrupt_during(ws: Workspace, command: str, token: CancelToken) -> None:
    """Run ``command`` on the main thread and press Ctrl-C (a ``SIGINT`` to the process) once
    ``scratch/before.txt`` exists; the call must re-raise the interrupt."""
    def interrupt_once_running() -> None:
        while not ws.exists("scratch/before.txt"):
            time.sleep(0.002)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_running).start()
    with pytest.raises(KeyboardInterrupt):
        ws.shell(command, token=token)


def test_an_interrupt_during_a_file_operation_lets_it_finish_then_is_re_raised(
        ws: Workspace) -> None:
    # the interrupt arrives while the interpreter's write waits inside storage, on the main
    # thread: the write completes, nothing after it starts, then the interrupt is raised
    assert threading.current_thread() is threading.main_thread()
    token = CancelToken()
    held = threading.Event()

    def hold_until_interrupted() -> None:
        with ws.fs.lock.shared():
            held.set()
            while not lock_waiter_blocked(ws.fs):
                time.sleep(0.002)
            os.kill(os.getpid(), signal.SIGINT)
            while not token.cancelled:
                time.sleep(0.002)

    holder = threading.Thread(target=hold_until_interrupted)
    holder.start()
    held.wait()
    with pytest.raises(KeyboardInterrupt):
        ws.shell("echo x > /output/main.md; echo y > /output/next.txt", token=token)
    holder.join()
    assert token.cancelled
    assert ws.read("output/main.md") == "x\n"
    assert not ws.exists("output/next.txt")


def test_a_shell_call_leaves_the_interrupt_handling_as_it_found_it(ws: Workspace) -> None:
    assert ws.shell("echo hi").stdout == "hi\n"
    interrupt_during(ws, "echo x > /scratch/before.txt; sleep 60", CancelToken())
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.set_wakeup_fd(-1) == -1  # no wake-up descriptor left behind


def test_with_a_wakeup_descriptor_of_its_own_an_interrupt_still_cancels(ws: Workspace
                                                                        ) -> None:
    # an event loop that handles signals has set one: the call leaves it alone
    mine, other = socket.socketpair()
    mine.setblocking(False)
    previous = signal.set_wakeup_fd(mine.fileno())
    try:
        token = CancelToken()
        interrupt_during(ws, "echo x > /scratch/before.txt; sleep 60; echo y > "
                         "/scratch/after.txt", token)
        assert token.cancelled
        assert not ws.exists("scratch/after.txt")
        assert signal.set_wakeup_fd(mine.fileno()) == mine.fileno()  # still the loop's
        assert other.recv(16) == bytes([signal.SIGINT])  # and it was told of the signal
    finally:
        signal.set_wakeup_fd(previous)
        mine.close()
        other.close()
