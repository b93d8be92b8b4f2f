"""Provisioning (docs/worktrees.md): the scheduler driving real provisions (cap 1)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tavernlab.worktree import (
    CancelToken,
    ProvisionCancelledError,
    ProvisionContext,
    call_tool,
    provision_scheduler,
    run_with_provision_context,
)
from tavernlab.worktree._scheduler import ProvisionLimits

from .conftest import Repo


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll a condition (bounded), failing the test with ``what`` if it never holds."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


class Provision(threading.Thread):
    """A provision running in its own thread with its own caller key, signal and events."""

    def __init__(self, repo: Repo, slug: str, caller: str = "test", **fields: Any) -> None:
        super().__init__(daemon=True)
        self.signal = CancelToken()
        self.events: list[dict[str, Any]] = []
        self.input = {"repoRoot": repo.root, "slug": slug, **fields}
        self.caller = caller
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        ctx = ProvisionContext(caller_key=self.caller, signal=self.signal,
                               on_progress=self.events.append)
        try:
            self.result = run_with_provision_context(
                ctx, lambda: call_tool("worktree.provision", self.input))
        except BaseException as exc:
            self.error = exc

    def finish(self) -> None:
        self.join(timeout=60)
        assert not self.is_alive()


@pytest.fixture(autouse=True)
def cap_one() -> None:
    provision_scheduler().configure(ProvisionLimits(concurrency=1))


def hold_slot(repo: Repo) -> Any:
    return provision_scheduler().acquire(repo.root, "holder")


def test_provisions_run_one_at_a_time_in_order(repo: Repo, tmp_path: Path) -> None:
    log = tmp_path / "order.log"
    runs = []
    for name in "abc":
        cmd = f"echo start:{name} >> {log}; sleep 0.2; echo end:{name} >> {log}"
        run = Provision(repo, f"order-{name}", depsCmd=cmd)
        run.start()
        runs.append(run)
        if name == "a":
            wait_until(lambda: log.exists(), "a started")
        else:
            expected = 1 if name == "b" else 2
            wait_until(lambda e=expected: provision_scheduler().snapshot()["queued"] == e,
                       f"{name} queued")
    for run in runs:
        run.finish()
        assert run.error is None
    assert log.read_text().split() == ["start:a", "end:a", "start:b", "end:b",
                                       "start:c", "end:c"]


def test_no_heavy_phase_is_never_queued(repo: Repo) -> None:
    lease = hold_slot(repo)
    events: list[dict[str, Any]] = []
    out = run_with_provision_context(
        ProvisionContext(on_progress=events.append),
        lambda: call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "cheap"}))
    assert out["branch"] == "wt/cheap"
    assert events == [{"kind": "done", "outcome": "ok"}]
    lease.release()


def test_queued_provision_progress(repo: Repo) -> None:
    lease = hold_slot(repo)
    run = Provision(repo, "queued-ok", depsCmd="true")
    run.start()
    wait_until(lambda: bool(run.events), "queued event")
    lease.release()
    run.finish()
    assert run.error is None
    assert run.events == [
        {"kind": "queued", "position": 1, "phase": "deps"},
        {"kind": "started", "phase": "deps"},
        {"kind": "phase", "phase": "deps"},
        {"kind": "done", "outcome": "ok"},
    ]


def test_phase_order_with_every_heavy_phase(repo: Repo) -> None:
    (repo.path / "node_modules").mkdir()
    repo.write(".env", "X=1\n")
    repo.commit_config({"worktree": {"setup": "true"}})
    run = Provision(repo, "all-phases", cloneGlobs=["node_modules"], depsCmd="true",
                    copyGlobs=[".env"])
    run.start()
    run.finish()
    assert run.error is None
    assert [e.get("phase") for e in run.events] == [
        "clone", "clone", "deps", "copy", "setup", None]


def test_cancel_while_queued(repo: Repo, tmp_path: Path) -> None:
    lease = hold_slot(repo)
    marker = tmp_path / "install-ran"
    run = Provision(repo, "queued", depsCmd=f"touch {marker}")
    run.start()
    wait_until(lambda: bool(run.events), "queued")
    run.signal.cancel()
    run.finish()
    assert isinstance(run.error, ProvisionCancelledError)
    assert provision_scheduler().snapshot()["queued"] == 0
    assert provision_scheduler().snapshot()["running"] == 1
    assert run.events[-1] == {"kind": "done", "outcome": "cancelled"}
    assert not marker.exists()
    assert not (repo.path.parent / "_worktrees" / "queued").exists()
    assert repo.branches("wt/queued") == ""
    lease.release()


def test_cancel_while_running_kills_the_process_group(repo: Repo, tmp_path: Path) -> None:
    pidfile = tmp_path / "pidfile"
    running = Provision(repo, "running",
                        depsCmd=f"sh -c 'sleep 300 & echo $! > {pidfile}; wait'")
    running.start()
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip() != "", "sleep started")
    next_marker = tmp_path / "next-ran"
    waiting = Provision(repo, "next-one", depsCmd=f"touch {next_marker}")
    waiting.start()
    wait_until(lambda: provision_scheduler().snapshot()["queued"] == 1, "next queued")
    grandchild = int(pidfile.read_text())
    running.signal.cancel()
    running.finish()
    assert isinstance(running.error, ProvisionCancelledError)
    wait_until(lambda: not _alive(grandchild), "grandchild sleep died")
    assert {"kind": "started", "phase": "deps"} in running.events
    assert running.events[-1] == {"kind": "done", "outcome": "cancelled"}
    assert not (repo.path.parent / "_worktrees" / "running").exists()
    assert repo.branches("wt/running") == ""
    waiting.finish()
    assert waiting.error is None and next_marker.exists()
    assert provision_scheduler().snapshot() == {"running": 0, "queued": 0, "limit": 1}


def test_already_cancelled_signal(repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "install-ran"
    run = Provision(repo, "pre-cancelled", depsCmd=f"touch {marker}")
    run.signal.cancel()
    run.start()
    run.finish()
    assert isinstance(run.error, ProvisionCancelledError)
    assert not marker.exists()
    assert provision_scheduler().snapshot() == {"running": 0, "queued": 0, "limit": 1}
    assert not (repo.path.parent / "_worktrees" / "pre-cancelled").exists()
    assert repo.branches("wt/pre-cancelled") == ""
    assert "pre-cancelled" not in repo.worktree_list()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); treat it as dead
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False
