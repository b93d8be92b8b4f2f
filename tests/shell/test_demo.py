"""The shell section of ``tavernlab demo`` plays end to end."""

from __future__ import annotations

import io
from pathlib import Path

from tavernlab.demo import SECTIONS
from tavernlab.demo import _shell as shell_section


def test_shell_demo_section(tmp_path: Path) -> None:
    out = io.StringIO()
    shell_section.run(tmp_path, out)
    text = out.getvalue()
    assert "description: Counts scenes by mood for Alice." in text
    assert "    Harbour at dawn\n    Lantern room\n" in text
    assert '      "calm": 2,\n      "tense": 1\n' in text
    assert "-- auto-commit candidate after the move: output/main.md" in text
    assert "chat_commit_requested path=output/main.md isExplicit=False" in text
    assert "✗ workspace.shell_exit\n    Exit code: 7" in text
    assert "-- candidate after the failed call: None" in text
    assert "(commit requests so far: 1)" in text
    assert SECTIONS.index("tavernlab.demo._shell") > SECTIONS.index("tavernlab.demo._workspace")
