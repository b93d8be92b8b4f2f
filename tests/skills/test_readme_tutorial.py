"""The README's "Write your first skill" works as written: its commands, and its test file
run against the scaffold."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## Write your first skill", 1)[1].split("\n## ", 1)[0]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", SECTION, flags=re.S)


def test_the_tutorial_commands_and_its_test_file(tmp_path: Path) -> None:
    (commands,) = blocks("bash")
    for line in commands.strip().splitlines():
        argv = line.split("#", 1)[0].split()
        assert argv[0] == ".venv/bin/tavernlab"
        done = subprocess.run([sys.executable, "-m", "tavernlab.cli", *argv[1:]], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (line, done.stdout, done.stderr)
    (script,) = blocks("js")
    assert script in (tmp_path / "skills/greeter/scripts/main.js").read_text()
    (test_file,) = blocks("python")
    (tmp_path / "skills/greeter/tests/test_readme.py").write_text(test_file)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path / "skills/greeter/tests/test_readme.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
