"""Salvage (docs/worktrees.md): keep a worktree's uncommitted work before it is removed.

The salvage directory holds ``changes.patch`` (``git diff HEAD``, written only when there is
a diff), byte copies of unignored untracked files under ``untracked/`` and a
``MANIFEST.json``. Every file is fsynced, so a crash right after salvage loses nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from tavernlab.clock import SYSTEM_CLOCK, Clock, rfc3339_millis
from tavernlab.workspace.storage import replace_durably, sync
from tavernlab.worktree._git import git, git_failure, git_run
from tavernlab.worktree._hostnames import repo_name
from tavernlab.worktree._marker import read_creation_marker


def sanitize(name: str) -> str:
    """Runs of ``[^a-zA-Z0-9._-]`` → ``-``, leading ``-`` stripped, empty → ``worktree``."""
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", name).lstrip("-") or "worktree"


def default_salvage_root() -> Path:
    """``~/.agentproto/worktree-salvage``."""
    return Path.home() / ".agentproto" / "worktree-salvage"


def salvage_worktree(repo_root: str, path: str, *, slug: str | None = None,
                     salvage_root: str | os.PathLike[str] | None = None,
                     provenance: dict[str, Any] | None = None,
                     clock: Clock = SYSTEM_CLOCK) -> dict[str, Any]:
    """Copy a worktree's uncommitted work to
    ``<salvageRoot>/<repo>/<slug>-<tip[:7]>-<YYYY-MM-DD of createdAt>/`` → ``{dir, manifest}``.

    ``slug`` defaults to the worktree's basename; ``createdAt`` comes from the creation marker
    (``clock``'s date names the directory when there is none, and the manifest says ``null``).
    The patch is written byte for byte as git produced it.
    """
    tip = git(repo_root, ["rev-parse", "HEAD"], target=path).strip()
    branch_out = git(repo_root, ["branch", "--show-current"], target=path).strip()
    marker = read_creation_marker(path)
    created_at = marker.get("createdAt") if marker else None
    day = (created_at or rfc3339_millis(clock.now()))[:10]
    root = Path(salvage_root) if salvage_root is not None else default_salvage_root()
    name = f"{sanitize(slug or os.path.basename(path.rstrip('/')))}-{tip[:7]}-{day}"
    target = root / sanitize(repo_name(repo_root)) / name
    target.mkdir(parents=True, exist_ok=True)

    diff = git_run(repo_root, ["diff", "HEAD", "--binary"], target=path)
    if diff.exit_code != 0:
        raise git_failure(["diff", "HEAD", "--binary"], diff)
    patch = diff.raw_stdout
    if patch:
        replace_durably(target / "changes.patch", patch, parents=True)
    listed = git(repo_root, ["ls-files", "--others", "--exclude-standard", "-z"], target=path)
    untracked = sorted(rel for rel in listed.split("\0") if rel)
    for rel in untracked:
        source = Path(path) / rel
        dest = target / "untracked" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), dest)
            continue
        shutil.copyfile(source, dest)
        sync(dest)
    manifest = {
        "repo": repo_name(repo_root),
        "branch": branch_out or None,
        "tipSha": tip,
        "createdAt": created_at,
        "untrackedFiles": untracked,
        "hasPatch": bool(patch),
        "provenance": provenance,
    }
    replace_durably(target / "MANIFEST.json",
                    (json.dumps(manifest, indent=2) + "\n").encode("utf-8"), parents=True)
    for directory in {target, *(p.parent for p in target.rglob("*"))}:
        sync(directory)
    return {"dir": str(target), "manifest": manifest}
