"""The kernel-free run viewer: the page of a lab's run and of its bundle, the model turns,
the replay report, the page a bundle carries, and ``tavernlab view`` writing and serving."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tavernlab.cli import main
from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.errors import NotFound
from tavernlab.host import Lab
from tavernlab.replay import read_bundle
from tavernlab.view import MODEL_RESPONSES, page_for, read_report

SRC = Path(__file__).resolve().parents[2] / "src"


def _data(page: str) -> dict[str, object]:
    marker = '<script type="application/json" id="tl-view-data">'
    start = page.index(marker) + len(marker)
    end = page.index("</script>", start)
    return dict(json.loads(page[start:end].replace("<\\/", "</")))


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str]:
    """A deterministic lab with one run of two rounds (returns the lab's path, the run id)."""
    with Lab(tmp_path / "lab", clock=FixedClock(), ids=SequentialIds("view")) as lab:
        run = lab.start_run(chat_id="alice")
        run.call_tool("workspace.write_file", {"path": "output/main.md",
                                               "content": "# Notes\nline 2\n"})
        run.shell("mkdir -p scratch/data && printf 'a,b\\n' > scratch/data/t.csv")
        run.next_round()
        run.call_tool("workspace.read_file", {"path": "nope/x.md"})
        return tmp_path / "lab", run.id


def test_the_page_holds_the_tree_the_timeline_and_every_call(recorded: tuple[Path, str]
                                                             ) -> None:
    lab_dir, run_id = recorded
    with Lab(lab_dir) as lab:
        page = page_for(run_id, lab=lab)
    assert page.startswith("<!DOCTYPE html>") and "<link" not in page and "src=" not in page
    data = _data(page)
    paths = [n["path"] for n in data["nodes"]]  # type: ignore[attr-defined, index]
    assert {"output/main.md", "scratch/data/t.csv"} <= set(paths)
    assert "run.json" not in paths
    assert "run.json" in [n["path"] for n in data["hidden_nodes"]]  # type: ignore[attr-defined, index]
    rounds = data["rounds"]
    assert [[b["label"] for b in r["bars"]] for r in rounds] == [  # type: ignore[attr-defined]
        ["workspace.write_file", "workspace.shell", "commit output/main.md"],
        ["workspace.read_file"]]
    assert data["previews"]["output/main.md"]["lines"] == ["# Notes", "line 2"]  # type: ignore[index]
    # each call's arguments, result and changed files, readable without script
    assert page.count('class="tl-view-call"') == 4
    assert "mkdir -p scratch/data" in page and "workspace.path_not_visible" in page
    assert "scratch/data/t.csv" in page.split("<h2>Rounds</h2>")[1]
    assert "class TimelineView" in page  # the widget code is inlined


def test_a_bundle_shows_the_same_page_and_can_carry_it(recorded: tuple[Path, str],
                                                       tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    lab_dir, run_id = recorded
    with Lab(lab_dir) as lab:
        from_lab = page_for(run_id, lab=lab)
        plain = lab.open_run(run_id).export(tmp_path / "plain.tavernrun")
    assert read_bundle(plain).page is None
    # the same page, but for the status: the recording's, where the lab's unfinished run
    # (its lab was closed) is interrupted
    recorded_page = from_lab.replace(" · interrupted<", " · calling_model<")
    assert page_for(plain) == recorded_page
    assert main(["run", "export", run_id, "-o", str(tmp_path / "r.tavernrun"),
                 "--lab", str(lab_dir), "--with-view"]) == 0
    bundle = tmp_path / "r.tavernrun"
    assert capsys.readouterr().out == f"{bundle}\n"
    with zipfile.ZipFile(bundle) as archive:
        assert archive.read("view.html").decode() == recorded_page
    carried = read_bundle(bundle)
    assert carried.page == recorded_page.encode()
    assert carried.manifest == read_bundle(plain).manifest
    assert main(["view", str(bundle), "-o", str(tmp_path / "out" / "run.html")]) == 0
    assert (tmp_path / "out" / "run.html").read_text() == recorded_page


def test_model_turns_and_a_replay_report_get_their_sections(recorded: tuple[Path, str],
                                                            tmp_path: Path) -> None:
    lab_dir, run_id = recorded
    with Lab(lab_dir) as lab:
        run_dir = lab.open_run(run_id).dir
        (run_dir / MODEL_RESPONSES).mkdir()
        (run_dir / MODEL_RESPONSES / "round-002.json").write_text(
            json.dumps({"content": "I will read x.md", "toolCalls": 1}))
        report_file = tmp_path / "report.json"
        report_file.write_text(json.dumps({
            "bundle": "r.tavernrun", "runId": run_id, "identical": False, "actions": 3,
            "elapsedSeconds": 0.5, "lab": None, "skills": [],
            "divergences": [{"index": 1, "action": "tool workspace.shell", "kind": "stdout",
                             "subject": "stdout", "expected": "a", "actual": "b",
                             "diff": "-a\n+b\n"}]}))
        page = page_for(run_id, lab=lab, report=read_report(report_file))
    second = page.split('data-round="2"')[1]
    assert second.index("model call") < second.index("workspace.read_file")
    assert "I will read x.md" in second
    assert "model call" not in page.split('data-round="1"')[1].split('data-round="2"')[0]
    replay = page.split("<h2>Replay</h2>")[1]
    assert "diverged" in replay and "tool workspace.shell" in replay


def test_a_run_id_needs_an_existing_lab(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", "run_x", "--lab", str(tmp_path / "none"), "-o",
                 str(tmp_path / "x.html")]) == 1
    assert capsys.readouterr().err.startswith("error: ")
    assert not (tmp_path / "x.html").exists()
    with Lab(tmp_path / "empty") as lab, pytest.raises(NotFound) as missing:
        page_for("run_x", lab=lab)
    assert missing.value.message == "run `run_x` was not found in the run index"


def test_without_output_the_page_is_served_until_ctrl_c(recorded: tuple[Path, str],
                                                        tmp_path: Path) -> None:
    lab_dir, run_id = recorded
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get(
        "PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "tavernlab.cli", "view", run_id, "--lab",
                             str(lab_dir)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(f"serving the page of {run_id} at http://127.0.0.1:")
        url = line.split(" at ")[1].split(" ")[0]
        with urllib.request.urlopen(url, timeout=10) as response:
            served = response.read().decode()
        with Lab(lab_dir) as lab:
            assert served == page_for(run_id, lab=lab)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert (proc.returncode, err) == (130, "cancelled\n")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_page_says_the_status_to_show(recorded: tuple[Path, str], tmp_path: Path) -> None:
    lab_dir, run_id = recorded  # its lab was closed with the run unfinished
    with Lab(lab_dir) as lab:
        assert "4 calls in 2 rounds · interrupted" in page_for(run_id, lab=lab)
        bundle = lab.open_run(run_id).export(tmp_path / "r.tavernrun")
    assert "4 calls in 2 rounds · calling_model" in page_for(bundle)
