"""Reliability of the sandbox: cancellation, KeyboardInterrupt, killed workers, concurrency.

Runaway scripts announce that they are running by writing a marker file through the runtime
API; the test then acts (cancel, SIGINT, SIGKILL) and checks the outcome. Deadlines are long
(20 s): a job that ends as *cancelled* rather than *timed out* was stopped by the action.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tavernlab.cancel import CancelToken
from tavernlab.host import Lab
from tavernlab.js import CommandResult, WorkerPool, default_pool, run_js_command
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.scope._scope import Policy
from tavernlab.workspace.storage import WorkspaceFs

from .conftest import JsRunner, frozen, max_overlap, wait_for

RUNAWAY = ("import { workspace } from '@tauritavern/runtime';\n"
           "workspace.writeText('scratch/started.txt', 'yes');\n"
           "while (true) {}\n")
CANCELLED = "js: /<eval>: JavaScript execution was cancelled.\n"


def assert_healthy(js: JsRunner) -> None:
    """A normal job runs after the incident."""
    result = js("-e", "console.log('next')")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "next\n", "")


def in_thread(target: Any, *args: Any) -> tuple[threading.Thread, list[Any]]:
    """Start ``target(*args)`` in a thread; its return value lands in the list."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(target(*args)))
    thread.start()
    return thread, box


def test_cancel_from_another_thread_stops_a_runaway_loop(workspace: Path, js: JsRunner) -> None:
    token = CancelToken()
    canceller, _ = in_thread(lambda: (wait_for(workspace / "scratch" / "started.txt"),
                                      token.cancel()))
    result = js("-e", RUNAWAY, token=token, timeout=20.0)
    canceller.join()
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", CANCELLED)
    assert result.cancelled and not result.timed_out
    assert_healthy(js)


def test_cancel_lets_the_call_in_flight_finish_and_refuses_the_next(workspace: Path) -> None:
    in_flight = threading.Event()
    release = threading.Event()

    def check() -> None:
        if not in_flight.is_set():
            in_flight.set()
            release.wait(20.0)

    scope = ScopedWorkspaceFs(WorkspaceFs(workspace), Policy.from_profile(), check=check)
    token = CancelToken()
    source = ("import { workspace } from '@tauritavern/runtime';\n"
              "workspace.writeText('scratch/first.txt', 'first');\n"
              "try { workspace.writeText('scratch/second.txt', 'second'); }\n"
              "catch (e) { workspace.writeText('scratch/caught.txt', 'caught'); }\n")

    def cancel_during_first_write() -> None:
        in_flight.wait(20.0)
        token.cancel()
        release.set()

    helper, _ = in_thread(cancel_during_first_write)
    result = run_js_command(["-e", source], scope=scope, context=frozen(), token=token,
                            deadline=time.monotonic() + 20.0)
    helper.join()
    assert result.cancelled and result.stderr == CANCELLED
    assert (workspace / "scratch" / "first.txt").read_text() == "first"
    assert not (workspace / "scratch" / "second.txt").exists()
    assert not (workspace / "scratch" / "caught.txt").exists()


def test_cancel_stops_a_script_that_only_prints(workspace: Path, js: JsRunner) -> None:
    token = CancelToken()
    source = ("import { workspace } from '@tauritavern/runtime';\n"
              "workspace.writeText('scratch/started.txt', 'yes');\n"
              "for (let i = 0; ; i++) { if (i % 1000 === 0) console.log(i); }")
    helper, _ = in_thread(lambda: (wait_for(workspace / "scratch" / "started.txt"),
                                   token.cancel()))
    result = js("-e", source, token=token)
    helper.join()
    assert result.cancelled
    assert result.stdout.startswith("0\n")
    assert result.stderr == CANCELLED


def test_keyboard_interrupt_in_the_waiting_thread(workspace: Path, js: JsRunner) -> None:
    assert threading.current_thread() is threading.main_thread()
    main = threading.main_thread().ident
    assert main is not None
    before = default_pool().worker_pids()

    def interrupt() -> None:
        wait_for(workspace / "scratch" / "started.txt")
        signal.pthread_kill(main, signal.SIGINT)

    helper, _ = in_thread(interrupt)
    with pytest.raises(KeyboardInterrupt):
        js("-e", RUNAWAY, timeout=20.0)
    helper.join()
    after = default_pool().worker_pids()
    assert len(after) == 2 and len(set(before) - set(after)) == 1
    assert_healthy(js)


def test_run_cancel_from_another_thread(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    marker = run.workspace_dir / "scratch" / "started.txt"
    canceller, _ = in_thread(lambda: (wait_for(marker), run.cancel()))
    result: CommandResult = run.js(["-e", RUNAWAY])
    canceller.join()
    assert result.cancelled and result.exit_code == 1
    assert run.js(["-e", "console.log(1)"]).stdout == "1\n"


def test_sigkill_of_a_worker_fails_only_its_own_job(workspace: Path,
                                                    scope: ScopedWorkspaceFs) -> None:
    pool = WorkerPool(2)
    try:
        def job(source: str) -> CommandResult:
            return run_js_command(["-e", source], scope=scope, context=frozen(), pool=pool,
                                  deadline=time.monotonic() + 20.0)

        victim_source = RUNAWAY
        survivor_source = ("import { workspace } from '@tauritavern/runtime';\n"
                           "workspace.writeText('scratch/survivor.txt', 'running');\n"
                           "while (!workspace.exists('scratch/release.txt')) {}\n"
                           "console.log('survived');\n")
        victim_thread, victim = in_thread(job, victim_source)
        survivor_thread, survivor = in_thread(job, survivor_source)
        wait_for(workspace / "scratch" / "started.txt")
        wait_for(workspace / "scratch" / "survivor.txt")
        running = pool.running_jobs()
        victim_pid = running[victim_thread.ident or 0]
        assert running[survivor_thread.ident or 0] != victim_pid
        os.kill(victim_pid, signal.SIGKILL)
        victim_thread.join()
        (workspace / "scratch" / "release.txt").write_text("go")
        survivor_thread.join()
        assert victim[0].exit_code == 1
        assert victim[0].stderr == ("js: /<eval>: The JavaScript worker process exited "
                                    "unexpectedly (killed by signal SIGKILL).\n")
        assert not (victim[0].timed_out or victim[0].cancelled)
        assert (survivor[0].exit_code, survivor[0].stdout) == (0, "survived\n")
        again = job("console.log('fresh worker')")
        assert (again.exit_code, again.stdout) == (0, "fresh worker\n")
        assert victim_pid not in pool.worker_pids()
    finally:
        pool.close()


def test_eight_concurrent_jobs_at_most_two_at_once(js: JsRunner) -> None:
    source = ("const start = performance.timeOrigin + performance.now();\n"
              "let x = 0; for (let i = 0; i < 3e6; i++) x += i;\n"
              "console.log(JSON.stringify([start, performance.timeOrigin + performance.now()]));")
    threads = [in_thread(js, "-e", source) for _ in range(8)]
    results: list[CommandResult] = []
    for thread, box in threads:
        thread.join()
        results.extend(box)
    assert [r.exit_code for r in results] == [0] * 8
    intervals = [tuple(json.loads(r.stdout)) for r in results]
    assert max_overlap(intervals) <= 2  # type: ignore[arg-type]


def test_the_deadline_counts_while_queued(workspace: Path, scope: ScopedWorkspaceFs) -> None:
    pool = WorkerPool(1)
    try:
        blocker_thread, _ = in_thread(lambda: run_js_command(
            ["-e", RUNAWAY], scope=scope, context=frozen(), pool=pool,
            deadline=time.monotonic() + 1.5))
        wait_for(workspace / "scratch" / "started.txt")
        queued = run_js_command(
            ["-e", "import { workspace } from '@tauritavern/runtime';\n"
                   "workspace.writeText('scratch/queued.txt', 'ran');"],
            scope=scope, context=frozen(), pool=pool, deadline=time.monotonic() + 0.2)
        blocker_thread.join()
        assert queued.timed_out and queued.exit_code == 1
        assert not (workspace / "scratch" / "queued.txt").exists()
        token = CancelToken()
        token.cancel()
        cancelled = run_js_command(["-e", "console.log(1)"], scope=scope, context=frozen(),
                                   pool=pool, token=token, deadline=time.monotonic() + 5)
        assert cancelled.cancelled and cancelled.stdout == ""
    finally:
        pool.close()


def test_the_scopes_own_cancel_check_cancels_the_job(workspace: Path) -> None:
    from tavernlab.errors import Cancelled

    operations: list[int] = []
    limit: list[int] = [3]

    def check() -> None:
        operations.append(1)
        if len(operations) >= limit[0]:
            raise Cancelled()

    scope = ScopedWorkspaceFs(WorkspaceFs(workspace), Policy.from_profile(), check=check)
    (workspace / "scratch" / "task.js").write_text(
        "import { workspace } from '@tauritavern/runtime';\n"
        "workspace.writeText('scratch/one.txt', '1');\n"
        "try { workspace.readText('scratch/one.txt'); }\n"
        "catch (e) { console.log(e.message); }\n"
        "for (;;) {}\n")
    pool = WorkerPool(1)

    def run() -> CommandResult:
        operations.clear()
        return run_js_command(["/scratch/task.js"], scope=scope, context=frozen(), pool=pool,
                              deadline=time.monotonic() + 20)

    try:
        pool.warm()
        pids = pool.worker_pids()
        during = run()
        # The refused call fails in the guest, then jsbox stops the loop: no kill was needed.
        assert during.cancelled
        assert during.stdout == "host function failed: ExecutionCancelled\n"
        assert during.stderr == "js: /scratch/task.js: JavaScript execution was cancelled.\n"
        assert pool.worker_pids() == pids
    finally:
        pool.close()
    assert (workspace / "scratch" / "one.txt").read_text() == "1"
    limit[0] = 1
    before = run_js_command(["/scratch/task.js"], scope=scope, context=frozen(),
                            deadline=time.monotonic() + 20)
    assert before.cancelled and before.exit_code == 1
    assert before.stderr == "js: JavaScript execution was cancelled.\n"
