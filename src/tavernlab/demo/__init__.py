"""``tavernlab demo``: a scripted tour that plays every subsystem against a fresh lab.

Each subsystem adds one section module with ``run(root: Path, out: TextIO) -> None``; the
sections run in the order of :data:`SECTIONS` and print what happened. The demo needs no
configuration and works offline.

Every play starts fresh: the lab and the files a previous play left in the same folder are
removed first (the folder carries :data:`MARKER`, so a folder the demo did not make is never
touched), so a second play shows only its own chat messages. Every run a play starts ends
finished, and each error it provokes on purpose is announced by :func:`deliberate_error`.
"""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path
from typing import TextIO

from tavernlab.errors import InvalidData

__all__ = ["MARKER", "PLAYED", "SECTIONS", "deliberate_error", "run_demo", "start_fresh"]

#: Section modules, in play order.
SECTIONS: tuple[str, ...] = (
    "tavernlab.demo._workspace",
    "tavernlab.demo._skills",
    "tavernlab.demo._shell",
    "tavernlab.demo._worktree",
)


#: The file that marks a folder as the demo's own (what a new play may clear).
MARKER = ".tavernlab-demo"
#: What a play leaves in its folder (each section's directory).
PLAYED = ("lab", "skill-src", "worktree")


def run_demo(root: Path, out: TextIO = sys.stdout) -> None:
    """Play every demo section in ``root`` (created if missing) and print the story to ``out``."""
    root = root.resolve()
    start_fresh(root, out)
    for name in SECTIONS:
        importlib.import_module(name).run(root, out)


def start_fresh(root: Path, out: TextIO) -> None:
    """Remove what an earlier play left in ``root``; refuse a folder the demo did not make."""
    left = [name for name in PLAYED if (root / name).exists()]
    if left and not (root / MARKER).is_file():
        raise InvalidData(f"{root} already holds {', '.join(left)} that tavernlab demo did not "
                          "make; play the demo in another folder")
    for name in left:
        shutil.rmtree(root / name)
    if left:
        print(f"(starting fresh: removed the previous play's {', '.join(left)})", file=out)
    root.mkdir(parents=True, exist_ok=True)
    (root / MARKER).write_text("made by `tavernlab demo`; a new play clears this folder\n")


def deliberate_error(out: TextIO, why: str) -> None:
    """Announce that the next step fails on purpose, and why."""
    print(f"(deliberate error: {why})", file=out)
