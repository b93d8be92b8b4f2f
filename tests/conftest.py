"""Shared fixtures: a fresh lab, a foreground Chat run in it, a shell-like writer and a
directory outside the lab (all under ``tmp_path``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tavernlab.host import Lab, Run
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.fs import WriteGuard


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    """An empty lab in the test's temporary directory."""
    return Lab(tmp_path / "lab")


@pytest.fixture
def run(lab: Lab) -> Run:
    """A foreground Chat run for the character chat ``alice`` with the default Profile."""
    return lab.start_run(chat_id="alice")


def _shell_write(run: Run, path: str, text: str = "x") -> None:
    run.scope.write_text(WorkspacePath.parse(path), text, WriteGuard.unchecked())


@pytest.fixture
def put() -> Callable[[Run, str, str], None]:
    """``put(run, path, text)`` changes a file behind the model's back, exactly as the shell
    does: through the run's scoped view, unchecked, creating parents, with no read record
    (the auto-commit tracker does see it)."""
    return _shell_write


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the lab holding ``secret.md`` (``alpha secret``), for symlinks
    planted inside a workspace."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.md").write_text("alpha secret")
    return directory
