"""Rounds a user can predict: every cell that touches a run is one round of it, whether the
cell uses a magic or calls the run from Python, so the cell after an interrupted one works."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from notebook_support import Notebook

from tavernlab.host import Run
from tavernlab.notebook import current_state


def _cancel_once_running(run: Run) -> threading.Thread:
    def cancel() -> None:
        deadline = time.monotonic() + 10
        while not run.cancel() and time.monotonic() < deadline:
            time.sleep(0.01)

    thread = threading.Thread(target=cancel)
    thread.start()
    return thread


def _rounds(run: Run) -> list[int]:
    return [e.payload.round for e in run.events(types="tool_call_requested")]


def test_a_python_cell_after_an_interrupted_magic_works(nb: Notebook) -> None:
    run = current_state(nb.shell).run
    nb.ns["run"] = run
    canceller = _cancel_once_running(run)
    cancelled = nb.cell("%ws_shell while true; do :; done")
    canceller.join()
    assert cancelled.error is not None
    after = nb.cell("run.call_tool('workspace.write_file', "
                    "{'path': 'output/a.md', 'content': 'a'}).is_error")
    assert after.error is None and after.result.result is False
    assert _rounds(run) == [1, 2]


def test_a_python_cell_after_an_interrupted_python_cell_works(nb: Notebook) -> None:
    run = current_state(nb.shell).run
    nb.ns["run"] = run
    canceller = _cancel_once_running(run)
    cancelled = nb.cell("run.shell('while true; do :; done').outcome.value")
    canceller.join()
    assert cancelled.result.result == "cancelled"
    after = nb.cell("run.shell('echo fresh').stdout")
    assert after.error is None and after.result.result == "fresh\n"


def test_each_cell_that_touches_a_run_is_one_round(nb: Notebook, tmp_path: Path) -> None:
    nb.cell(f"from tavernlab.host import Lab\nlab = Lab({str(tmp_path / 'own')!r})\n"
            "run = lab.start_run(chat_id='alice')")
    nb.cell("run.call_tool('workspace.list_files', {'path': 'output'})\n"
            "run.call_tool('workspace.list_files', {'path': 'plan'})")
    nb.cell("print('a cell that does not touch the run')")
    nb.cell("run.js(['-e', 'console.log(1)']).exit_code")
    nb.cell("run.call_tool('workspace.list_files', {'path': 'output'})")
    run = nb.ns["run"]
    assert _rounds(run) == [1, 1, 3]
    assert [e.payload.round for e in run.events(types="round_ended")] == [1, 2]
    assert run.round == 3


def test_without_round_per_cell_the_round_stays_cancelled(nb: Notebook) -> None:
    nb.cell("%config TavernMagics.round_per_cell = False")
    run = current_state(nb.shell).run
    nb.ns["run"] = run
    canceller = _cancel_once_running(run)
    nb.cell("run.shell('while true; do :; done')")
    canceller.join()
    refused = nb.cell("run.call_tool('workspace.list_files', {'path': 'output'}).error_code")
    assert refused.result.result == "tool.round_cancelled"


def test_unloading_says_what_became_of_the_current_run(nb: Notebook, tmp_path: Path) -> None:
    run = current_state(nb.shell).run
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "a"})
    nb.shell.extension_manager.loaded.add("tavernlab")  # as the kernel's start-up loads it
    try:
        reloaded = nb.cell("%reload_ext tavernlab")
    finally:
        nb.shell.extension_manager.loaded.discard("tavernlab")
    assert reloaded.stdout == (
        f"tavernlab: run {run.id} (calling_model, round 1) stays in the lab "
        f"{tmp_path / '.tavernlab'}, unfinished; `%tavern run open {run.id}` makes it "
        "current again.\n")
    # the reloaded extension's first use says which run was left behind
    status = nb.cell("%ws_shell echo hi")
    fresh = current_state(nb.shell).run
    assert fresh.id != run.id
    assert status.stdout == (
        f"tavernlab: run {run.id} was left unfinished by an earlier kernel (interrupted "
        f"while calling_model); `%tavern run open {run.id}` continues it. This notebook now "
        f"uses the new run {fresh.id}.\nhi\n")
    opened = nb.cell(f"%tavern run open {run.id}")
    assert opened.error is None
    assert current_state(nb.shell).run.id == run.id
