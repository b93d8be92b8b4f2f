"""``tavernlab demo``: a scripted tour that plays every subsystem against a fresh lab.

Each subsystem adds one section module with ``run(root: Path, out: TextIO) -> None``; the
sections run in the order of :data:`SECTIONS` and print what happened. The demo needs no
configuration and works offline.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TextIO

#: Section modules, in play order.
SECTIONS: tuple[str, ...] = (
    "tavernlab.demo.workspace",
    "tavernlab.demo.skills",
    "tavernlab.demo.shell",
    "tavernlab.demo.worktree",
)


def run_demo(root: Path, out: TextIO = sys.stdout) -> None:
    """Play every demo section in ``root`` (created if missing) and print the story to ``out``."""
    root = root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    for name in SECTIONS:
        importlib.import_module(name).run(root, out)
