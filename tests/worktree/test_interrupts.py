"""Interrupts take the cancellation path: a real SIGINT to a real subprocess while
it waits in the queue, runs ``depsCmd``, runs a setup hook or runs a gate."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from tavernlab.cancel import CancelToken
from tavernlab.errors import ToolError
from tavernlab.worktree import (
    ProvisionCancelledError,
    ProvisionContext,
    call_tool,
    run_with_provision_context,
)
from tavernlab.worktree._environment import HookContext
from tavernlab.worktree._hooks import run_setup
from tavernlab.worktree._process import pid_alive

from .conftest import Repo
from .test_processes import gone, read_pid
from .test_scheduler_git import wait_until


def python(code: str, *args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(child: subprocess.Popen[str]) -> tuple[int, str, str]:
    """The rest of the child's output and its status (read through the same buffered
    streams as any earlier ``readline``, so nothing read ahead is lost)."""
    assert child.stdout is not None and child.stderr is not None
    out, err = child.stdout.read(), child.stderr.read()
    return child.wait(timeout=60), out, err


def interrupt_when(child: subprocess.Popen[str], ready: Path | None = None,
                   line: str | None = None) -> tuple[int, str, str]:
    """Send SIGINT once ``ready`` exists (or ``line`` was printed), then collect the child."""
    if ready is not None:
        read_pid(ready)
    if line is not None:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == line
    child.send_signal(signal.SIGINT)
    return finish(child)


def test_ctrl_c_during_deps_exits_130_and_cleans_up(repo: Repo, tmp_path: Path) -> None:
    pidfile = tmp_path / "deps.pid"
    child = subprocess.Popen(
        [sys.executable, "-m", "tavernlab.cli", "worktree", "new", "slow", "--deps-cmd",
         f"sleep 300 & echo $! > {pidfile}; wait"],
        cwd=repo.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    code, out, err = interrupt_when(child, ready=pidfile)
    assert code == 130
    assert err.endswith("done: cancelled\ncancelled\n")
    assert "Traceback" not in err and "KeyError" not in err and out == ""
    gone(int(pidfile.read_text()))
    assert not (repo.path.parent / "_worktrees" / "slow").exists()
    assert repo.branches("wt/slow") == ""
    again = call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "slow"})
    assert again["branch"] == "wt/slow"  # no "a branch named 'wt/slow' already exists"


QUEUE = """
import json, threading, time
from tavernlab.worktree._limits import ProvisionLimits
from tavernlab.worktree._scheduler import ProvisionScheduler

scheduler = ProvisionScheduler(ProvisionLimits(concurrency=1))
holder = scheduler.acquire("/repo", "holder")

def announce():
    while scheduler.snapshot()["queued"] != 1:
        time.sleep(0.005)
    print("queued", flush=True)

for attempt in range(2):
    threading.Thread(target=announce).start()
    try:
        scheduler.acquire("/repo", "waiter")
    except KeyboardInterrupt:
        print(json.dumps(scheduler.snapshot()), flush=True)
holder.release()
for _ in range(3):
    scheduler.acquire("/repo", "later").release()
print(json.dumps(scheduler.snapshot()), flush=True)
"""


def test_interrupt_while_queued_dequeues_the_waiter() -> None:
    child = python(QUEUE)
    assert child.stdout is not None
    snapshots = []
    for _ in range(2):
        assert child.stdout.readline().strip() == "queued"
        child.send_signal(signal.SIGINT)
        snapshots.append(json.loads(child.stdout.readline()))
    code, out, err = finish(child)
    assert code == 0, err
    assert snapshots == [{"running": 1, "queued": 0, "limit": 1}] * 2
    assert json.loads(out) == {"running": 0, "queued": 0, "limit": 1}  # not wedged


PROVISION = """
import json, sys, threading, time
from pathlib import Path
from tavernlab.worktree import ProvisionCancelledError, call_tool, provision_scheduler
from tavernlab.worktree._limits import ProvisionLimits

repo, mode = sys.argv[1], sys.argv[2]
scheduler = provision_scheduler()
scheduler.configure(ProvisionLimits(concurrency=1))
holder = scheduler.acquire(repo, "holder") if mode == "queued" else None
if holder is not None:
    def announce():
        while scheduler.snapshot()["queued"] != 1:
            time.sleep(0.005)
        print("queued", flush=True)
    threading.Thread(target=announce).start()
tool_input = json.loads(sys.argv[3])
try:
    call_tool("worktree.provision", tool_input)
    outcome = "finished"
except ProvisionCancelledError as exc:
    outcome = {"code": exc.code, "interrupted": exc.interrupted}
if holder is not None:
    holder.release()
print(json.dumps({"outcome": outcome, "snapshot": scheduler.snapshot()}), flush=True)
retry = call_tool("worktree.provision", {**tool_input, "depsCmd": "true", "runSetup": False})
print(json.dumps(retry), flush=True)
"""


def provision_child(repo: Repo, mode: str, **fields: Any) -> subprocess.Popen[str]:
    return python(PROVISION, repo.root, mode,
                  json.dumps({"repoRoot": repo.root, "slug": "intr", "runSetup": True,
                              **fields}))


def check_cancelled(repo: Repo, out: str) -> None:
    first, retry = (json.loads(line) for line in out.splitlines()[-2:])
    assert first == {"outcome": {"code": "worktree.provision_cancelled", "interrupted": True},
                     "snapshot": {"running": 0, "queued": 0, "limit": 1}}
    assert retry["branch"] == "wt/intr"  # the half-made worktree and branch were removed


def test_interrupt_while_queued_in_provision(repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "never.txt"
    child = provision_child(repo, "queued", depsCmd=f"touch {marker}")
    code, out, err = interrupt_when(child, line="queued")
    assert code == 0, err
    check_cancelled(repo, out)
    assert not marker.exists()  # the install never ran


def test_interrupt_during_a_setup_hook(repo: Repo, tmp_path: Path) -> None:
    pidfile = tmp_path / "hook.pid"
    repo.commit_config({"worktree": {"setup": f"sleep 300 & echo $! > {pidfile}; wait"}})
    code, out, err = interrupt_when(provision_child(repo, "running"), ready=pidfile)
    assert code == 0, err
    check_cancelled(repo, out)
    gone(int(pidfile.read_text()))


GATE = """
import sys
from tavernlab.worktree import call_tool
try:
    call_tool("worktree.run-gate", {"cwd": sys.argv[1], "cmd": sys.argv[2]})
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_interrupted_gate_kills_its_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "gate.pid"
    child = python(GATE, str(tmp_path), f"sleep 300 & echo $! > {pidfile}; wait")
    code, out, err = interrupt_when(child, ready=pidfile)
    assert (code, out) == (0, "interrupted\n"), err
    gone(int(pidfile.read_text()))


def test_fifo_as_setup_log_never_blocks(repo: Repo, tmp_path: Path) -> None:
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ToolError) as caught:
        call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "fifo",
                                         "setupLogPath": str(fifo)})
    assert (caught.value.code, caught.value.message) == (
        "input_invalid", "setupLogPath: setupLogPath must be a regular file (or not exist yet)")
    assert not (repo.path.parent / "_worktrees").exists()
    runs = run_setup(["echo logged"], HookContext(repo.root, repo.root, "main"),
                     log_path=str(fifo))  # a direct caller is not blocked either
    assert [run.result.exit_code for run in runs] == [0]


def slow_checkout_hook(repo: Repo, pidfile: Path) -> None:
    """A post-checkout hook that keeps ``git worktree add`` busy (and records its pid)."""
    hook = repo.path / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\nsleep 300 & echo $! > {pidfile}\nwait\n")
    hook.chmod(0o755)


def test_a_cancel_stops_git_itself(repo: Repo, tmp_path: Path) -> None:
    pidfile = tmp_path / "hook.pid"
    slow_checkout_hook(repo, pidfile)
    token = CancelToken()
    events: list[dict[str, object]] = []
    canceller = threading.Thread(target=lambda: (read_pid(pidfile), token.cancel()))
    canceller.start()
    with pytest.raises(ProvisionCancelledError) as caught:
        run_with_provision_context(
            ProvisionContext(signal=token, on_progress=events.append),
            lambda: call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "git-cut",
                                                     "depsCmd": "true"}))
    canceller.join()
    assert caught.value.interrupted is False
    assert events == [{"kind": "done", "outcome": "cancelled"}]
    gone(int(pidfile.read_text()))  # git's own child died with it
    assert not (repo.path.parent / "_worktrees" / "git-cut").exists()
    assert repo.branches("wt/git-cut") == "" and "git-cut" not in repo.worktree_list()


def test_ctrl_c_inside_git_worktree_add(repo: Repo, tmp_path: Path) -> None:
    pidfile = tmp_path / "hook.pid"
    slow_checkout_hook(repo, pidfile)
    child = subprocess.Popen(
        [sys.executable, "-m", "tavernlab.cli", "worktree", "new", "in-git"], cwd=repo.path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    code, _, err = interrupt_when(child, ready=pidfile)
    assert code == 130 and err.endswith("] done: cancelled\ncancelled\n")
    assert err.count("\n") == 2 and "Traceback" not in err
    gone(int(pidfile.read_text()))
    assert not (repo.path.parent / "_worktrees" / "in-git").exists()
    assert repo.branches("wt/in-git") == ""



#: One provision per delivery point (``how@at``, ``+cleanup``: a second SIGINT inside the
#: cleanup of the first); the deps command's child must never survive, whichever instant the
#: SIGINT or the cancel lands. The idle thread stands for a kernel's own threads: with one,
#: the system may hand SIGINT to any thread while Python still raises in the main one.
EVERY_INSTANT = """
import json, os, signal, sys, threading
from tavernlab.cancel import CancelToken
from tavernlab.worktree import (ProvisionCancelledError, ProvisionContext, call_tool,
                                run_with_provision_context)
from tavernlab.worktree import _process as process

repo, points, marker = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
threading.Thread(target=threading.Event().wait, daemon=True).start()
spawn, group_cancel = process._spawn, process.ProcessGroup.cancel
results = {}


def interrupt():
    # SIGINT as a kernel interrupt sends it, returning once the signal has arrived (in
    # whichever thread): Python runs the handler in the main thread at its next instruction.
    if threading.current_thread() is not threading.main_thread():  # an output line's reader
        os.kill(os.getpid(), signal.SIGINT)
        return
    arrived, wake = os.pipe()
    os.set_blocking(wake, False)
    previous = signal.set_wakeup_fd(wake)
    try:
        os.kill(os.getpid(), signal.SIGINT)
        os.read(arrived, 1)
    finally:
        signal.set_wakeup_fd(previous)
        os.close(arrived)
        os.close(wake)

for point in points:
    how, _, rest = point.partition("@")
    at, _, second = rest.partition("+")
    token, pending, deps = None, [at, second], []

    def deliver(where):
        if where in pending:  # each instant once
            pending.remove(where)
            if how == "interrupt" or where == second:
                interrupt()
            else:
                token.cancel()

    class Token(CancelToken):
        def on_cancel(self, callback):
            unregister = super().on_cancel(callback)
            if deps:
                deliver("registered")

            def unsubscribe():  # the run is over: its child exited or was stopped
                unregister()
                if deps:
                    deliver("finished")

            return unsubscribe

    def spawned(argv, *args, **kwargs):
        child = spawn(argv, *args, **kwargs)
        deps[:] = [marker in " ".join(argv)]  # the deps command, not a git call
        if deps[0]:
            deliver("spawned")
        else:
            deps.clear()
        return child

    def cancelling(self, *args, **kwargs):
        deliver("cleanup")
        return group_cancel(self, *args, **kwargs)

    process._spawn, process.ProcessGroup.cancel = spawned, cancelling
    token = Token()
    context = ProvisionContext(
        signal=token,
        on_progress=lambda event: deliver(event["kind"] + ":" + event.get("phase", "")),
        on_output=lambda line: deliver("output"))
    tool_input = {"repoRoot": repo, "slug": f"p{len(results)}",
                  "depsCmd": f"echo up; exec sleep {0 if at == 'finished' else 60}.{marker}"}
    try:
        run_with_provision_context(context, lambda: call_tool("worktree.provision", tool_input))
        results[point] = "finished"
    except ProvisionCancelledError as exc:
        results[point] = {"code": exc.code, "interrupted": exc.interrupted}
    finally:
        process._spawn, process.ProcessGroup.cancel = spawn, group_cancel
print(json.dumps(results), flush=True)
"""

#: Where a hook delivers it: the slot granted, the deps phase announced, right after the
#: spawn (before the group is known), after the cancel registration, as the output streams,
#: and as the run ends after its (then short) command exited.
INSTANTS = ["started:deps", "phase:deps", "spawned", "registered", "output", "finished"]


def marked_processes(marker: str) -> list[int]:
    """Live processes whose command line carries ``marker`` (read from the process table,
    not from pids anyone reported)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline and pid_alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def test_no_child_of_a_cancelled_provision_survives_whatever_the_instant(
        repo: Repo, tmp_path: Path) -> None:
    marker = f"{os.getpid() % 100000:05d}7"  # sleep 60.<marker>: ours alone
    points = ([f"interrupt@{at}" for at in INSTANTS]
              + ["interrupt@spawned+cleanup", "interrupt@output+cleanup"]
              + [f"cancel@{at}" for at in INSTANTS])
    child = python(EVERY_INSTANT, repo.root, ",".join(points), marker)
    try:
        code, out, err = finish(child)
        assert code == 0, err
        assert json.loads(out) == {
            point: {"code": "worktree.provision_cancelled",
                    "interrupted": point.startswith("interrupt")}
            for point in points}
        wait_until(lambda: not marked_processes(marker), "every deps child gone")
        assert not list((repo.path.parent / "_worktrees").glob("p*"))  # each removed
        assert repo.branches("wt/*") == ""
    finally:
        for pid in marked_processes(marker):
            os.kill(pid, signal.SIGKILL)
