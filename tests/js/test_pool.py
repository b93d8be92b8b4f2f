"""The worker pool as an object: ownership, closing, the shared process-wide default."""

from __future__ import annotations

import os
import pickle
import threading
import time
from pathlib import Path

import pytest

from tavernlab.cancel import CancelToken
from tavernlab.errors import SandboxError, TavernlabError
from tavernlab.host import Lab
from tavernlab.js import CommandResult, WorkerPool, default_pool, run_js_command
from tavernlab.js import _errors as js_errors
from tavernlab.js._errors import PoolClosedError
from tavernlab.js._job import Job
from tavernlab.js._worker import resident_bytes
from tavernlab.workspace.scope import ScopedWorkspaceFs

from .conftest import frozen, wait_for


def alive(pid: int) -> bool:
    """Whether a process with ``pid`` still exists (and is not a zombie of ours)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_pool_owns_its_workers_and_close_stops_them(scope: ScopedWorkspaceFs) -> None:
    with WorkerPool(2) as pool:
        pool.warm()
        pids = pool.worker_pids()
        assert len(pids) == 2 and all(alive(pid) for pid in pids)
        assert not set(pids) & set(default_pool().worker_pids())
        result = run_js_command(["-e", "console.log('own pool')"], scope=scope,
                                context=frozen(), pool=pool)
        assert result.stdout == "own pool\n"
    assert pool.closed and pool.worker_pids() == []
    assert not any(alive(pid) for pid in pids)
    with pytest.raises(PoolClosedError) as caught:
        run_js_command(["-e", "1"], scope=scope, context=frozen(), pool=pool,
                       deadline=time.monotonic() + 5)
    assert (caught.value.code, caught.value.message) == (
        "js.pool_closed", "The JavaScript worker pool is closed.")


def test_the_default_pool_is_shared_and_sized_by_the_process_wide_cap() -> None:
    assert default_pool() is default_pool()
    assert default_pool().size == 2


def test_a_closed_default_pool_is_replaced_on_next_use(scope: ScopedWorkspaceFs) -> None:
    first = default_pool()
    first.warm()
    first.close()
    second = default_pool()
    assert second is not first and not second.closed
    result = run_js_command(["-e", "console.log(2)"], scope=scope, context=frozen())
    assert result.stdout == "2\n"


def test_a_lab_on_the_shared_services_follows_a_replaced_default_pool(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    assert run.js(["-e", "console.log(1)"]).stdout == "1\n"  # the shared services' first use
    first = default_pool()
    assert lab.services.js_pool is first
    first.close()  # closed by someone else (another test, a user, the exit hook)
    assert run.js(["-e", "console.log(2)"]).stdout == "2\n"
    assert lab.services.js_pool is default_pool() is not first
    assert not default_pool().closed
    lab.close()  # a lab on the shared services leaves the shared pool running
    assert not default_pool().closed


def test_a_pool_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        WorkerPool(0)


def test_every_sandbox_leaf_sits_below_sandbox_error_with_its_code() -> None:
    codes = {
        "WorkerStartError": "js.sandbox_failed",
        "PoolClosedError": "js.pool_closed",
        "CapabilityError": "js.capability_failed",
        "JsArgumentError": "js.invalid_arguments",
        "JsLoadError": "js.load_failed",
        "ModuleLoadError": "js.module_load_failed",
        "SkillScriptValidationError": "skill.run_script_invalid_request",
        "SkillScriptContextError": "agent.invalid_skill_script_context",
    }
    for name, code in codes.items():
        leaf = getattr(js_errors, name)
        assert issubclass(leaf, SandboxError) and issubclass(leaf, TavernlabError)
        assert leaf.code == code
    assert SandboxError.code == "js.error"
    assert js_errors.SkillScriptError("skill.run_script_not_found", "x").code == (
        "skill.run_script_not_found")


HEAVY = ("const a = [];\n"
         "for (let i = 0; i < 24; i++) a.push('x'.repeat(1 << 20) + i);\n"
         "console.log(a.length);")
MIB = 1024 * 1024


def run_on(pool: WorkerPool, scope: ScopedWorkspaceFs, source: str) -> str:
    """Run ``-e source`` on ``pool`` and return its stdout (it must succeed)."""
    result = run_js_command(["-e", source], scope=scope, context=frozen(), pool=pool,
                            deadline=time.monotonic() + 20)
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    return result.stdout


def test_a_heavy_job_hands_its_memory_back_and_keeps_its_worker(
        scope: ScopedWorkspaceFs) -> None:
    with WorkerPool(1) as pool:
        run_on(pool, scope, "console.log(1)")
        run_on(pool, scope, "console.log(2)")
        (pid,) = pool.worker_pids()
        light = pool.worker_memory()[pid]
        assert run_on(pool, scope, HEAVY) == "24\n"
        run_on(pool, scope, "console.log(3)")
        after_heavy = pool.worker_memory()[pid]
        assert pool.worker_pids() == [pid]
        assert light is not None and after_heavy is not None
        # The job held at least 24 MiB of strings; what stays is a fraction of that.
        assert after_heavy < light + 16 * MIB
        assert after_heavy < 64 * MIB


def test_a_worker_over_its_memory_limit_is_replaced_while_idle(
        scope: ScopedWorkspaceFs) -> None:
    with WorkerPool(1, rss_limit=1 * MIB) as pool:
        pool.warm()
        (first,) = pool.worker_pids()
        assert run_on(pool, scope, HEAVY) == "24\n"
        assert run_on(pool, scope, "console.log('next')") == "next\n"
        (second,) = pool.worker_pids()
        assert second != first and not alive(first)
        assert run_on(pool, scope, "console.log('again')") == "again\n"
        assert pool.worker_pids() != [second]


def test_a_queued_job_is_woken_by_its_cancel_while_the_worker_stays_busy(
        workspace: Path, scope: ScopedWorkspaceFs) -> None:
    blocker_source = ("import { workspace } from '@tauritavern/runtime';\n"
                      "workspace.writeText('scratch/started.txt', 'yes');\n"
                      "while (!workspace.exists('scratch/release.txt')) {}\n")
    with WorkerPool(1) as pool:
        box: list[CommandResult] = []
        blocker = threading.Thread(target=lambda: box.append(run_js_command(
            ["-e", blocker_source], scope=scope, context=frozen(), pool=pool,
            deadline=time.monotonic() + 20)))
        blocker.start()
        wait_for(workspace / "scratch" / "started.txt")
        token = CancelToken()
        threading.Thread(target=token.cancel).start()
        queued = run_js_command(["-e", "console.log('ran')"], scope=scope, context=frozen(),
                                pool=pool, token=token, deadline=time.monotonic() + 20)
        assert blocker.is_alive()
        assert (queued.cancelled, queued.stdout) == (True, "")
        (workspace / "scratch" / "release.txt").write_text("go")
        blocker.join()
        assert box[0].exit_code == 0


def test_more_submitting_threads_than_workers_all_complete_in_order(
        scope: ScopedWorkspaceFs) -> None:
    with WorkerPool(2) as pool:
        results: dict[int, list[str]] = {}

        def feed(index: int) -> None:
            results[index] = [run_on(pool, scope, f"console.log({index * 100 + n})")
                              for n in range(25)]

        threads = [threading.Thread(target=feed, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == {i: [f"{i * 100 + n}\n" for n in range(25)] for i in range(4)}
        assert len(pool.worker_pids()) == 2


def test_a_job_crosses_the_process_boundary_whole() -> None:
    job = Job(mode="legacy", entry="scripts/m.js", modules={"scripts/m.js": "export default 1"},
              runtime_names=("@tauritavern/runtime/v1",), context="{}", argv=("js", "a"),
              args='{"a": 1}', output_cap=7, result_limit=9, time_origin=1000,
              random_state=(1, 2, 3, 4))
    assert pickle.loads(pickle.dumps(job)) == job


def test_the_worker_reads_its_memory_from_an_open_statm_like_a_fresh_one() -> None:
    fd = os.open("/proc/self/statm", os.O_RDONLY)
    try:
        held = [resident_bytes(fd) for _ in range(3)]
    finally:
        os.close(fd)
    fresh = resident_bytes()
    assert fresh is not None and all(value is not None for value in held)
    assert all(abs(value - fresh) < 16 * 1024 * 1024 for value in held)  # type: ignore[operator]


def test_a_held_statm_that_does_not_read_as_one_gives_no_figure(tmp_path: Path) -> None:
    """What is not a statm line (or not readable) is no figure, never a wrong one."""
    odd = tmp_path / "statm"
    odd.write_bytes(b"not a statm line\n")
    fd = os.open(odd, os.O_RDONLY)
    try:
        assert resident_bytes(fd) is None
    finally:
        os.close(fd)
    directory = os.open(tmp_path, os.O_RDONLY)
    try:
        assert resident_bytes(directory) is None  # pread of a directory: EISDIR
    finally:
        os.close(directory)
