"""A run a dead process left unfinished shows as interrupted; a run a living process holds
shows its own status."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tavernlab.host import Lab
from tavernlab.views import lab_text

#: Start a run, say so, and wait to be killed.
HOLDER = """
import sys, time
from tavernlab.host import Lab
lab = Lab(sys.argv[1])
run = lab.start_run(chat_id='alice')
run.call_tool('workspace.write_file', {'path': 'output/a.md', 'content': 'a'})
print(run.id, run.status, flush=True)
time.sleep(120)
"""


def _holder(lab_dir: Path) -> tuple[subprocess.Popen[str], str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[2] / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lab_dir)], env=env,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    run_id, status = proc.stdout.readline().split()
    return proc, run_id, status


def test_a_run_left_by_a_killed_process_is_interrupted(tmp_path: Path) -> None:
    proc, run_id, status = _holder(tmp_path / "lab")
    try:
        with Lab(tmp_path / "lab") as lab:
            assert status == "calling_model"
            assert lab.shown_statuses() == {run_id: "calling_model"}  # still held
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            assert lab.index.load(run_id).status == "calling_model"  # the record is kept
            assert lab.shown_statuses() == {run_id: "interrupted"}
            assert f"  {run_id}  interrupted    foreground" in lab_text(
                str(lab.root), lab.runs(), lab.shown_statuses())
            # reopened, it is held again and continues in a new round
            run = lab.open_run(run_id)
            assert lab.shown_statuses() == {run_id: "calling_model"}
            assert run.round == 2
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_finished_and_held_runs_show_their_own_status(lab: Lab) -> None:
    finished = lab.start_run(chat_id="alice", presentation="background")
    finished.finish()
    held = lab.start_run(chat_id="bob")
    assert lab.shown_statuses() == {finished.id: finished.status, held.id: held.status}
    assert finished.status == "completed"
    other = Lab(lab.root)  # another lab object of this process sees this one's hold
    try:
        assert other.shown_statuses()[held.id] == held.status
    finally:
        other.close()
    lab.close()
    with Lab(lab.root) as reopened:
        assert reopened.shown_statuses()[held.id] == "interrupted"
