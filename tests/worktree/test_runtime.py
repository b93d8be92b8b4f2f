"""Runtime objects, clocks and ids, and the error family of the worktree package."""

from __future__ import annotations

import inspect
import json
import os
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import tavernlab.errors
import tavernlab.worktree
from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.worktree import (
    WorktreeRuntime,
    call_tool,
    default_runtime,
    plan_gc,
    provision_scheduler,
)
from tavernlab.worktree import _errors as worktree_errors
from tavernlab.worktree._errors import envelope_code
from tavernlab.worktree._gc import GcOptions
from tavernlab.worktree._limits import ProvisionLimits
from tavernlab.worktree._marker import read_creation_marker
from tavernlab.worktree._process import pid_alive
from tavernlab.worktree._scheduler import ProvisionScheduler

from .conftest import Repo
from .forges import ListForge, pull
from .test_processes import gone

PAST = datetime(2020, 5, 1, 12, 0, tzinfo=UTC)


def test_runtimes_share_the_process_wide_caps() -> None:
    runtime = WorktreeRuntime()
    assert runtime.scheduler is provision_scheduler()
    assert runtime.table is default_runtime().table
    assert runtime.services is not default_runtime().services


def test_runtime_close_stops_what_it_started(repo: Repo) -> None:
    repo.commit_config({"scripts": {"web": {"command": "exec sleep 300", "type": "service"}}})
    target = {"repoRoot": repo.root, "worktreePath": repo.root, "branch": "main",
              "script": "web"}
    lab = WorktreeRuntime()
    proxy = lab.start_proxy()
    mine = call_tool("worktree.start-service", target, lab)
    shared = call_tool("worktree.start-service", target)  # the default runtime's own
    assert mine["pid"] != shared["pid"]
    lab.close()
    gone(mine["pid"])
    assert pid_alive(shared["pid"])
    with pytest.raises(OSError):
        __import__("socket").create_connection(("127.0.0.1", proxy.port), timeout=5).close()
    assert call_tool("worktree.stop-service", {"worktreePath": repo.root, "script": "web"}) \
        == {"stopped": True}


def test_a_scheduler_of_its_own_rejects_its_waiters_on_close() -> None:
    scheduler = ProvisionScheduler(ProvisionLimits(concurrency=1))
    runtime = WorktreeRuntime(scheduler=scheduler)
    holder = runtime.scheduler.acquire("/r", "a")
    outcome: list[BaseException] = []

    def wait() -> None:
        try:
            scheduler.acquire("/r", "b")
        except BaseException as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    while scheduler.snapshot()["queued"] != 1:
        time.sleep(0.005)
    runtime.close()
    waiter.join(timeout=30)
    assert [type(e).__name__ for e in outcome] == ["ProvisionCancelledError"]
    assert str(outcome[0]) == "worktree provisioning scheduler closed"
    holder.release()
    assert scheduler.snapshot() == {"running": 0, "queued": 0, "limit": 1}


def test_marker_and_service_times_come_from_the_runtime(repo: Repo) -> None:
    clock = FixedClock(datetime(2026, 3, 1, tzinfo=UTC), step=timedelta(seconds=1))
    runtime = WorktreeRuntime(clock=clock, ids=SequentialIds())
    out = call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "timed"}, runtime)
    assert read_creation_marker(out["cwd"]) == {"worktreeId": "wt_00000001",
                                                "createdAt": "2026-03-01T00:00:00.000Z"}
    repo.commit_config({"scripts": {"web": {"command": "exec sleep 300", "type": "service"}}})
    status = call_tool("worktree.start-service", {
        "repoRoot": repo.root, "worktreePath": out["cwd"], "branch": "wt/timed",
        "script": "web"}, runtime)
    assert status["startedAt"] == "2026-03-01T00:00:01.000Z"
    runtime.close()


def test_gc_keeps_its_two_clocks_apart(repo: Repo) -> None:
    cwd = Path(call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "clocks"})["cwd"])
    (cwd / "f.txt").write_text("f")
    repo.git("-C", str(cwd), "add", "f.txt")
    repo.git("-C", str(cwd), "commit", "-q", "-m", "feat: f")
    tip = repo.git("-C", str(cwd), "rev-parse", "HEAD").strip()
    (cwd / "scratch.txt").write_text("an hour old")
    hour_ago = time.time() - 3600
    os.utime(cwd / "scratch.txt", (hour_ago, hour_ago))
    frozen = FixedClock(PAST, step=timedelta(0))
    forge = ListForge([pull(3, "wt/clocks", tip)])
    entry = plan_gc(repo.root, GcOptions(forge=forge, sessions=[], clock=frozen))[0]
    assert entry["integration"]["checkedAt"] == "2020-05-01T12:00:00.000Z"
    assert entry["class"] == "salvage"  # the window is measured on the real clock
    one_clock = GcOptions(forge=forge, sessions=[], clock=frozen, recent_clock=frozen)
    held = plan_gc(repo.root, one_clock)[0]
    assert (held["class"], held["holdReason"]) == ("hold", "recent-write")  # the upstream bug


def leaves() -> list[type[BaseException]]:
    return [value for value in vars(worktree_errors).values()
            if inspect.isclass(value) and issubclass(value, BaseException)
            and value.__module__ == worktree_errors.__name__]


def test_every_worktree_error_has_a_real_code() -> None:
    classes = leaves()
    assert len(classes) == 15  # upstream's 13, and the daemon host's two (worktree-agent)
    for kind in classes:
        assert issubclass(kind, tavernlab.errors.WorktreeError), kind
        assert kind.code.startswith("worktree.") and kind.code != "worktree.error", kind
    assert len({kind.code for kind in classes}) == len(classes)
    assert tavernlab.worktree.ToolError is tavernlab.errors.ToolError
    assert not hasattr(worktree_errors, "UsageError")


def test_envelope_codes_are_one_mapping() -> None:
    assert envelope_code(worktree_errors.ProvisionCancelledError()) == "cancelled"
    assert envelope_code(worktree_errors.BaseRefNotFoundError(
        "origin/main", args=[], exit_code=128, stderr="", stdout="")) == "not_found"
    assert envelope_code(worktree_errors.ConfigError("bad")) == "internal"
    assert envelope_code(tavernlab.errors.ToolError("execution_failed", "x")) == \
        "execution_failed"
    assert envelope_code(ValueError("x")) == "internal"


def test_memo_file_written_by_gc_is_upstream_shaped(repo: Repo) -> None:
    from tavernlab.worktree._forge import VerdictMemo

    cwd = Path(call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "memo"})["cwd"])
    (cwd / "m.txt").write_text("m")
    repo.git("-C", str(cwd), "add", "m.txt")
    repo.git("-C", str(cwd), "commit", "-q", "-m", "feat: m")
    tip = repo.git("-C", str(cwd), "rev-parse", "HEAD").strip()
    plan_gc(repo.root, GcOptions(forge=ListForge([pull(5, "wt/memo", tip)]), sessions=[],
                                 memo=VerdictMemo(), clock=FixedClock(PAST, step=timedelta(0))))
    stored = json.loads((Path(os.environ["HOME"]) / ".agentproto/worktree-verdicts.json")
                        .read_text())
    assert stored["entries"][0]["tipSha"] == tip
    assert stored["entries"][0]["checkedAt"] == "2020-05-01T12:00:00.000Z"
