"""``tavernlab demo`` works with no arguments and no configuration, as the README promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


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
        "✗ workspace.finish_requires_commit",
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
