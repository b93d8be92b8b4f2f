"""``git worktree list --porcelain`` records and path helpers (docs/worktrees.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypedDict

from tavernlab.worktree._git import git


class WorktreeRecord(TypedDict, total=False):
    """One porcelain block: ``path``, ``head``, ``branch`` (null when detached), flags."""

    path: str
    head: str
    branch: str | None
    bare: bool
    detached: bool
    locked: str | None
    prunable: str | None


def parse_worktree_list(text: str) -> list[WorktreeRecord]:
    """Parse porcelain output: one record per blank-line block, main checkout first.

    ``branch`` loses its ``refs/heads/`` prefix; ``locked``/``prunable`` carry their reason
    (``""`` when git gives none).
    """
    records: list[WorktreeRecord] = []
    for block in text.strip("\n").split("\n\n"):
        if not block.strip():
            continue
        record: WorktreeRecord = {"path": "", "head": "", "branch": None}
        for line in block.split("\n"):
            key, _, value = line.partition(" ")
            if key == "worktree":
                record["path"] = value
            elif key == "HEAD":
                record["head"] = value
            elif key == "branch":
                record["branch"] = value.removeprefix("refs/heads/")
            elif key == "detached":
                record["detached"] = True
            elif key == "bare":
                record["bare"] = True
            elif key == "locked":
                record["locked"] = value
            elif key == "prunable":
                record["prunable"] = value
        records.append(record)
    return records


def list_worktrees(repo_root: str | os.PathLike[str]) -> list[WorktreeRecord]:
    """The repository's worktrees, main checkout first."""
    return parse_worktree_list(git(repo_root, ["worktree", "list", "--porcelain"]))


def real(path: str | os.PathLike[str]) -> str:
    """``realpath`` for comparing paths that may go through symlinks (``/tmp`` on macOS)."""
    return os.path.realpath(os.fspath(path))


def find_worktree(repo_root: str | os.PathLike[str],
                  path: str | os.PathLike[str]) -> WorktreeRecord | None:
    """The record of ``path`` among the repository's worktrees (compared by real path)."""
    wanted = real(path)
    for record in list_worktrees(repo_root):
        if real(record["path"]) == wanted:
            return record
    return None


def is_within(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Containment on a separator boundary: ``/a/b`` and ``/a/b/c`` are in ``/a/b``;
    ``/a/b-other`` is not."""
    child, parent = os.fspath(path).rstrip(os.sep), os.fspath(root).rstrip(os.sep)
    return child == parent or child.startswith(parent + os.sep)


def main_repo_root(path: str | os.PathLike[str]) -> str:
    """The main checkout of the repository that ``path`` (a checkout or worktree) belongs to."""
    common = git(path, ["rev-parse", "--path-format=absolute", "--git-common-dir"]).strip()
    return str(Path(common).parent)
