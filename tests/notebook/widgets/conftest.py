"""Fixtures for the widget tests without a frontend: ipywidgets opens a dummy comm outside a
kernel, so the widgets keep their whole state and the tests read it from their traits.

``greet_lab`` is a deterministic lab (fixed clock, sequential ids) with the ``greet`` skill
installed; ``greet_run`` a run bound to it. ``opened`` closes every widget a test made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.host import Lab, Run

GREET_JS = """import {workspace} from '@tauritavern/runtime';
const name = process.argv[2] ?? 'world';
await workspace.writeText('output/greeting.md', `Hello, ${name}!\\n`);
console.log(`greeted ${name}`);
"""
GREET_MD = "---\nname: greet\ndescription: Greets someone.\n---\n# greet\nRun scripts/greet.js.\n"


def write_greet_skill(root: Path) -> Path:
    """The ``greet`` skill folder: ``SKILL.md`` and ``scripts/greet.js``."""
    (root / "scripts").mkdir(parents=True)
    (root / "SKILL.md").write_text(GREET_MD)
    (root / "scripts" / "greet.js").write_text(GREET_JS)
    return root


@pytest.fixture
def greet_lab(tmp_path: Path) -> Iterator[Lab]:
    lab = Lab(tmp_path / "lab", clock=FixedClock(), ids=SequentialIds("widgets"))
    lab.skills.install(write_greet_skill(tmp_path / "greet"))
    yield lab
    lab.close()


@pytest.fixture
def greet_run(greet_lab: Lab) -> Run:
    return greet_lab.start_run(chat_id="alice", skills=["greet"])


@pytest.fixture
def opened() -> Iterator[Callable[[Any], Any]]:
    """``opened(widget)`` returns the widget and closes it when the test ends."""
    made: list[Any] = []

    def keep(widget: Any) -> Any:
        made.append(widget)
        return widget

    yield keep
    for widget in made:
        widget.close()
