"""``tavernlab demo`` works with no arguments and no configuration, as the README promises."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from tavernlab.demo import run_demo
from tavernlab.errors import InvalidData
from tavernlab.host import Lab


def test_demo_runs_from_the_command_line_with_no_arguments(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "tavernlab.cli", "demo"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert (tmp_path / "tavernlab-demo" / "lab" / "_tauritavern").is_dir()
    for expected in (
        "▶ workspace_apply_patch(path=\"summaries/critic-result.md\"",
        "✗ workspace.patch_requires_full_read",
        "Patched summaries/critic-result.md with 1 replacement(s)",
        "✗ agent.foreground_commit_required",
        "Requested chat commit of output/main.md with mode Replace.",
        "Finished the Agent run.",
        "persistStateStatus=committed",
        "modified         story-so-far.md",
        "install: wordcount -> installed",
        "Counts the words of a text file for Alice",
        '"top":[["the",7],["kept",3],["lamp",3]]',
        "stderr: usage: js count.js PATH [--top N]",
        "Executed skill script `wordcount/scripts/count-legacy.js`. Result:",
        "✗ skill.run_script_invalid_name",
    ):
        assert expected in out, expected


def _chat_after_run_1(text: str) -> str:
    return text.split("=== Chat after run 1 ===\n", 1)[1].split("\n===", 1)[0]


def test_a_second_play_starts_fresh_finishes_every_run_and_announces_its_errors(
        tmp_path: Path) -> None:
    first, second = io.StringIO(), io.StringIO()
    run_demo(tmp_path, first)
    run_demo(tmp_path, second)
    text = second.getvalue()
    assert text.startswith("(starting fresh: removed the previous play's lab, skill-src, "
                           "worktree)\n")
    chat = _chat_after_run_1(text)
    assert chat.count("message #") == _chat_after_run_1(first.getvalue()).count("message #") == 2
    with Lab(tmp_path / "lab") as lab:
        statuses = [record.status for record in lab.runs()]
    assert statuses == ["completed"] * 5
    lines = text.split("\n")
    failures = [i for i, line in enumerate(lines) if "  ✗ " in line]
    assert len(failures) == 4
    for i in failures:
        assert lines[i - 1].startswith("(deliberate error: "), lines[i]
    at = lines.index("(deliberate error: no PATH argument, so the script prints its usage and "
                     "exits 2)")
    assert lines[at + 1:at + 3] == ["$ js /skills/wordcount/scripts/count.js", "exit 2"]


def test_a_folder_the_demo_did_not_make_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "mine.txt").write_text("keep")
    with pytest.raises(InvalidData, match="did not make; play the demo in another folder"):
        run_demo(tmp_path, io.StringIO())
    assert (tmp_path / "lab" / "mine.txt").read_text() == "keep"
