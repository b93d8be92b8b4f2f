"""Fixtures of the agent-loop tests: a lab, and each provider kind in turn."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.agent.wire import KINDS, Model

from tavernlab import Lab


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """A fresh lab, closed after the test."""
    with Lab(tmp_path / "lab") as opened:
        yield opened


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    """Each provider kind in turn."""
    return str(request.param)


@pytest.fixture
def model_for(kind: str) -> Iterator[Any]:
    """``model_for(turns)`` → a :class:`Model` of this test's kind (its server ends with the
    test)."""
    with contextlib.ExitStack() as stack:
        yield lambda turns: Model(kind, turns, stack)
