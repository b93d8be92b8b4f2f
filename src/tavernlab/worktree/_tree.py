"""Working-tree state of a worktree (docs/worktrees.md).

Counts untracked, staged and modified paths from ``git status --porcelain=v2``; gitignored
files never count, so a worktree whose only dirt is ``node_modules`` reads clean. Configured
noise paths (lockfiles a tool rewrites on every run) are reported but not counted. The
untracked mode is always explicit (``normal``, or ``all`` with noise paths), as newer upstream
passes it, so ``status.showUntrackedFiles=no`` can never make a dirty tree read clean.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from tavernlab.worktree._errors import GitError
from tavernlab.worktree._git import git_run

PLANS_DIR = ".plans/"


def _is_noise(path: str, noise: Sequence[str]) -> bool:
    return any(path == item.rstrip("/") or path.startswith(item.rstrip("/") + "/")
               for item in noise)


def _parse_porcelain_v2(output: str) -> list[tuple[str, str]]:
    """``[(kind, path)]`` with kind ``untracked``, ``staged+modified`` flags as ``XY``."""
    entries: list[tuple[str, str]] = []
    fields = output.split("\0")
    index = 0
    while index < len(fields):
        record = fields[index]
        index += 1
        if not record:
            continue
        tag = record[0]
        if tag == "?":
            entries.append(("??", record[2:]))
        elif tag == "1":
            parts = record.split(" ", 8)
            entries.append((parts[1], parts[8]))
        elif tag == "2":
            parts = record.split(" ", 9)
            entries.append((parts[1], parts[9]))
            index += 1  # the original path follows as its own NUL-terminated field
        elif tag == "u":
            parts = record.split(" ", 10)
            entries.append((parts[1], parts[10]))
    return entries


def tree_status(worktree: str | os.PathLike[str],
                noise_paths: Sequence[str] = (),
                repo_root: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """``{state: "clean"[, noise]}`` or ``{state: "dirty", modified, staged, untracked,
    newestMtimeMs[, onlyUnder: ".plans/"]}``.

    git runs with ``--no-optional-locks`` so a status check never races an agent's own git
    commands; a failure (a missing path included) raises ``git status --porcelain=v2 failed
    in <wt> (exit <N>): …``.
    """
    path = os.fspath(worktree)
    args = ["status", "--porcelain=v2", "-z",
            "--untracked-files=all" if noise_paths else "--untracked-files=normal"]
    cwd = os.fspath(repo_root) if repo_root is not None else os.path.dirname(path) or "/"
    if not os.path.isdir(cwd):
        cwd = "/"
    result = git_run(cwd, args, target=path, global_options=["--no-optional-locks"])
    if result.exit_code != 0:
        detail = result.stderr.strip() or result.stdout.strip()
        message = (f"git status --porcelain=v2 failed in {path} (exit {result.exit_code}): "
                   f"{detail}")
        raise GitError(message, args=args, exit_code=result.exit_code, stderr=result.stderr,
                       stdout=result.stdout)
    modified = staged = untracked = 0
    dirty: list[str] = []
    noise: list[str] = []
    for xy, rel in _parse_porcelain_v2(result.stdout):
        if _is_noise(rel, noise_paths):
            noise.append(rel)
            continue
        if xy == "??":
            untracked += 1
        else:
            staged += xy[0] != "."
            modified += xy[1] != "."
        dirty.append(rel)
    if not dirty:
        return {"state": "clean", "noise": sorted(noise)} if noise else {"state": "clean"}
    mtimes = []
    for rel in dirty:
        try:
            mtimes.append(os.lstat(os.path.join(path, rel)).st_mtime * 1000)
        except OSError:
            continue
    state: dict[str, Any] = {
        "state": "dirty",
        "modified": modified,
        "staged": staged,
        "untracked": untracked,
        "newestMtimeMs": max(mtimes) if mtimes else None,
    }
    if all(rel.startswith(PLANS_DIR) for rel in dirty):
        state["onlyUnder"] = PLANS_DIR
    return state
