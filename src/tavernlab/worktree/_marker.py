"""The creation marker (docs/worktrees.md): ``agentproto-worktree.json`` in a
worktree's private git dir, ``{"worktreeId": "wt_<8 hex>", "createdAt": "<ISO-8601>"}``.

It never shows in ``git status`` and disappears with ``git worktree remove``/``prune``.
Provenance reads it to tell this worktree's sessions from an earlier one at the same path.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tavernlab.clock import RANDOM_IDS, SYSTEM_CLOCK, Clock, IdFactory, rfc3339_millis

MARKER_FILE = "agentproto-worktree.json"


def git_dir_of(checkout: str | os.PathLike[str]) -> Path | None:
    """The private git dir of a checkout, without running git: a linked worktree's
    ``gitdir:`` file target, or a main checkout's ``.git`` directory; ``None`` otherwise."""
    dot_git = Path(checkout) / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        text = dot_git.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text[len("gitdir:"):].strip())
    return gitdir if gitdir.is_absolute() else (Path(checkout) / gitdir).resolve()


def write_creation_marker(worktree: str, *, clock: Clock = SYSTEM_CLOCK,
                          ids: IdFactory = RANDOM_IDS) -> dict[str, str]:
    """Write ``{worktreeId, createdAt}`` (ids and time from the given factory and clock)."""
    marker = {"worktreeId": ids.new("wt", 8), "createdAt": rfc3339_millis(clock.now())}
    git_dir = git_dir_of(worktree)
    if git_dir is None:
        raise FileNotFoundError(f"no git dir for the worktree at {worktree}")
    (git_dir / MARKER_FILE).write_text(json.dumps(marker), encoding="utf-8")
    return marker


def read_creation_marker(checkout: str) -> dict[str, str] | None:
    """The creation marker of a checkout (linked worktree or main checkout), or ``None``
    when there is none or it is not ``{worktreeId: str, createdAt: str, …}``."""
    git_dir = git_dir_of(checkout)
    if git_dir is None:
        return None
    try:
        data = json.loads((git_dir / MARKER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("worktreeId"), str) \
            or not isinstance(data.get("createdAt"), str):
        return None
    return data
