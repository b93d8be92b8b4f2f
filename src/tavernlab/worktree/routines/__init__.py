"""The shipped ``worktree-gc`` routines (docs/worktrees.md), read as package data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

__all__ = ["ROUTINES_DIR", "routine_front_matter", "routine_path"]

ROUTINES_DIR = Path(__file__).parent


def routine_path(routine_id: str) -> Path:
    """Where a shipped routine's ``ROUTINE.md`` lives."""
    return ROUTINES_DIR / routine_id / "ROUTINE.md"


def routine_front_matter(routine_id: str = "worktree-gc") -> dict[str, Any]:
    """The YAML front matter of a shipped routine."""
    text = routine_path(routine_id).read_text(encoding="utf-8")
    _, front, _ = text.split("---\n", 2)
    data: dict[str, Any] = yaml.safe_load(front)
    return data
