"""The workspace sub-commands of ``tavernlab`` on a real lab."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tavernlab.cli import main
from tavernlab.host import Lab


def test_runs_events_tool_retention_and_sessions(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    lab = Lab(tmp_path / "lab")
    run = lab.start_run(chat_id="alice")
    flag = ["--lab", str(lab.root)]
    assert main(["runs", *flag]) == 0
    assert run.id in capsys.readouterr().out
    assert main(["tool", run.id, "workspace.write_file",
                 '{"path": "output/main.md", "content": "hi"}', *flag]) == 0
    out = capsys.readouterr().out
    assert "Wrote 2 chars / 1 words to output/main.md." in out
    assert main(["tool", run.id, "workspace.read_file", '{"path": "input/x"}', "--json",
                 *flag]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["errorCode"] == "workspace.path_not_visible"
    assert captured.err == (
        "error: workspace.path_not_visible: Permission denied: `input/x` is not readable for "
        "this task.\n")
    assert main(["tool", run.id, "workspace.read_file", '{"path": "nope.md"}', *flag]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: workspace.path_not_visible: ")
    assert main(["events", run.id, "--type", "tool_call_failed", *flag]) == 0
    assert "tool_call_failed" in capsys.readouterr().out
    assert main(["retention", "plan", "--keep-full", "0", "--keep-recent", "0", *flag]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["blockedRuns"][0]["runId"] == run.id
    assert main(["sessions", "--new", "notes", *flag]) == 0
    session_id = capsys.readouterr().out.strip()
    assert main(["sessions", *flag]) == 0
    assert session_id in capsys.readouterr().out


def test_bad_input_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    assert main(["runs", "--lab", str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: workspace.invalid_data: no lab at ")
    lab = Lab(tmp_path / "lab")
    assert main(["tool", "run_nope", "workspace.list_files", "--lab", str(lab.root)]) == 1
    assert capsys.readouterr().err == (
        "error: workspace.not_found: run `run_nope` was not found in the run index\n")
    assert main(["tool", "run_x", "workspace.list_files", "{bad", "--lab", str(lab.root)]) == 1
    assert "ARGS is not JSON" in capsys.readouterr().err


@pytest.mark.parametrize("timeout", ["nan", "inf", "-1", "-inf"])
def test_follow_refuses_a_timeout_that_never_ends(tmp_path: Path, timeout: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    lab = Lab(tmp_path / "lab")
    run = lab.start_run(chat_id="alice")
    assert main(["events", run.id, "--follow", f"--timeout={timeout}",
                 "--lab", str(lab.root)]) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", (
        f"error: workspace.invalid_data: timeout must be a finite number of seconds >= 0, "
        f"not {float(timeout)!r}\n"))


def test_follow_with_a_zero_timeout_prints_what_is_there(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = Lab(tmp_path / "lab")
    run = lab.start_run(chat_id="alice")
    assert main(["events", run.id, "--follow", "--timeout", "0", "--json",
                 "--lab", str(lab.root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["type"] for line in lines] == [e.type for e in run.events()]


def test_tool_arguments_nested_too_deeply_are_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = Lab(tmp_path / "lab")
    run = lab.start_run(chat_id="alice")
    deep = "[" * 100_000 + "]" * 100_000
    assert main(["tool", run.id, "workspace.read_file", deep, "--lab", str(lab.root)]) == 1
    assert capsys.readouterr() == ("", "error: workspace.invalid_data: ARGS is not JSON this "
                                       "tool can take: it is nested too deeply\n")
