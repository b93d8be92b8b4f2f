"""The fixtures of :mod:`tavernlab.testing` (see there)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.host import Lab, Run

SkillRun = Callable[..., Run]


@pytest.fixture
def tavern_lab(tmp_path: Path) -> Iterator[Lab]:
    """A temporary lab with a fixed clock and sequential ids (closed after the test)."""
    with Lab(tmp_path / "tavern-lab", clock=FixedClock(), ids=SequentialIds("tavern-lab")
             ) as lab:
        yield lab


@pytest.fixture
def skill_run(tavern_lab: Lab) -> SkillRun:
    """``skill_run(path, skills=(), legacy=False, chat_id="test", **start_run)``: install the
    skill at ``path`` (and the skill directories in ``skills``) and start a run with them
    bound."""

    def start(path: str | Path, skills: Iterable[str | Path] = (), *, legacy: bool = False,
              chat_id: str = "test", **options: Any) -> Run:
        names: list[str] = []
        for folder in (path, *skills):
            report = tavern_lab.skills.install(folder, on_conflict="replace")
            report.check()
            names.extend(result.name for result in report.results)
        return tavern_lab.start_run(chat_id=chat_id, skills=names, legacy_run_script=legacy,
                                    **options)

    return start
