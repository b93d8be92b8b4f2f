"""``tavernlab shell RUN_ID COMMAND`` on good and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tavernlab.cli import main
from tavernlab.host import Lab


@pytest.fixture
def lab_dir(tmp_path: Path) -> Path:
    """A lab directory with one chat run."""
    return tmp_path / "lab"


@pytest.fixture
def run_id(lab_dir: Path) -> str:
    """The id of a fresh chat run in ``lab_dir``."""
    return Lab(lab_dir).start_run(chat_id="bob").id


def test_streams_and_exit_status(lab_dir: Path, run_id: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["shell", run_id, "--lab", str(lab_dir),
                   "printf '{\"a\":[1,2]}' > d.json; jq -r '.a[]' d.json; echo warn >&2; exit 3",
                   "--workdir", "/scratch"])
    captured = capsys.readouterr()
    assert (status, captured.out, captured.err) == (3, "1\n2\n", "warn\n")
    assert (lab_dir / "_tauritavern").is_dir()
    run = Lab(lab_dir).open_run(run_id)
    assert run.read("scratch/d.json") == '{"a":[1,2]}'
    assert run.tool_results()[-1]["content"] == "Exit code: 3\n1\n2\nstderr:\nwarn"


def test_json_prints_the_stored_result(lab_dir: Path, run_id: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["shell", run_id, "ls /", "--json", "--lab", str(lab_dir)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["toolId"] == "workspace.shell"
    assert printed["content"].splitlines()[0] == "Exit code: 0"


def test_refused_calls_and_bad_input(lab_dir: Path, run_id: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["shell", run_id, "pwd", "--workdir", "/input", "--lab", str(lab_dir)]) == 1
    assert capsys.readouterr().err == "workdir `/input` is not a workspace directory\n"
    assert main(["shell", "run_missing", "pwd", "--lab", str(lab_dir)]) == 1
    assert "run_missing" in capsys.readouterr().err
    assert main(["shell", run_id, "pwd", "--lab", str(lab_dir / "nowhere")]) == 1
    assert capsys.readouterr().err.startswith("error: workspace.invalid_data: no lab at ")


def test_timeout_status(lab_dir: Path, run_id: str, capsys: pytest.CaptureFixture[str],
                        monkeypatch: pytest.MonkeyPatch) -> None:
    # a run opened by the command starts with the host's default deadline
    monkeypatch.setattr("tavernlab.host._core.DEFAULT_DEADLINE_S", 0.3)
    assert main(["shell", run_id, "echo start; while :; do :; done", "--lab", str(lab_dir)]) == 124
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("start\n", "Command timed out.\n")
