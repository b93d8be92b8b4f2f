"""Orphaned worktree directories (docs/worktrees.md): on disk under the worktrees root, but
no longer known to ``git worktree list`` (an interrupted removal erased their admin entry).

A directory counts as an orphan of this repository only when its own ``.git`` file's
``gitdir:`` points inside this repository's ``<git-common-dir>/worktrees/``; anything else
in the pool (a plain directory, another repository's worktree) is never touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tavernlab.worktree._git import git
from tavernlab.worktree._listing import is_within, real


def admin_dir(repo_root: str) -> str:
    """The real path of ``<git-common-dir>/worktrees``."""
    common = git(repo_root, ["rev-parse", "--path-format=absolute", "--git-common-dir"]).strip()
    return real(os.path.join(common, "worktrees"))


def points_into(directory: Path, admin: str) -> bool:
    """Whether ``directory/.git`` is a ``gitdir:`` file pointing inside ``admin``."""
    try:
        text = (directory / ".git").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if not text.startswith("gitdir:"):
        return False
    gitdir = text[len("gitdir:"):].strip()
    return is_within(real(os.path.join(directory, gitdir)), admin)


def orphan_paths(repo_root: str, worktrees_root: str, registered: Iterable[str]) -> list[str]:
    """Directories under ``worktrees_root`` that are this repository's orphans, sorted."""
    known = {real(path) for path in registered}
    admin = admin_dir(repo_root)
    try:
        children = sorted(Path(worktrees_root).iterdir())
    except OSError:
        return []
    return [str(child) for child in children
            if child.is_dir() and not child.is_symlink() and real(child) not in known
            and points_into(child, admin)]


def orphan_entry(path: str, protected: bool) -> dict[str, Any]:
    """The plan entry of an orphan: reclaim ``orphan``, or hold ``live-session-cwd``."""
    if protected:
        return {"path": path, "branch": None, "head": "", "class": "hold",
                "holdReason": "live-session-cwd"}
    return {"path": path, "branch": None, "head": "", "class": "reclaim",
            "reclaimReason": "orphan", "orphan": True}
