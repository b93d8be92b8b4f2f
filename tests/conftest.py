"""Shared fixtures: a fresh lab and a foreground Chat run in it (both under ``tmp_path``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tavernlab.lab import Lab
from tavernlab.workspace.runs import Run


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    """An empty lab in the test's temporary directory."""
    return Lab(tmp_path / "lab")


@pytest.fixture
def run(lab: Lab) -> Run:
    """A foreground Chat run for the character chat ``alice`` with the default Profile."""
    return lab.start_run(chat_id="alice")
