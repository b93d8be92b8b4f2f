"""``worktree.cleanup`` (docs/worktrees.md): stop services, tear down, remove, delete branch.

Removal never discards work silently: without a discard flag git's own cleanliness check
decides; with flags, every kind of change must be authorized by its own flag. The worktree's
services are stopped first, process group and all, so nothing keeps running in a deleted
directory.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from tavernlab.worktree._config import load_committed_config
from tavernlab.worktree._environment import HookContext
from tavernlab.worktree._errors import WorktreeNotRemovableError
from tavernlab.worktree._git import DEFAULT_REF, END_OF_OPTIONS, git
from tavernlab.worktree._hooks import run_teardown
from tavernlab.worktree._removal import remove_worktree_fast
from tavernlab.worktree._services import ServiceRegistry, default_registry
from tavernlab.worktree._tree import tree_status

PREFIX = "worktree.cleanup"

#: ``remover(repo_root, path, force)`` — fast removal unless a caller wraps it.
Remover = Callable[[str, str, bool], None]


def fast_remover(repo_root: str, path: str, force: bool) -> None:
    """The default remover: :func:`remove_worktree_fast`."""
    remove_worktree_fast(repo_root, path, force=force)


def teardown_worktree(repo_root: str, cwd: str, branch: str | None, base: str) -> None:
    """Run the committed teardown hooks; nothing here ever blocks removal.

    Any config load error counts as "no config"; failures are reported on stderr.
    """
    try:
        config = load_committed_config(repo_root, base)
    except Exception:
        config = None
    if config is None or not config.teardown_commands:
        return
    try:
        runs = run_teardown(config.teardown_commands, HookContext(repo_root, cwd, branch or ""))
    except Exception as exc:
        print(f"{PREFIX}: teardown hook error (ignored): {exc}", file=sys.stderr)
        return
    for run in runs:
        if run.result.exit_code != 0:
            detail = run.result.stderr.strip() or run.result.stdout.strip()
            print(f"{PREFIX}: teardown '{run.command}' exited {run.result.exit_code} "
                  f"(ignored): {detail}", file=sys.stderr)


def remove_checked(repo_root: str, cwd: str, *, discard_untracked: bool,
                   discard_modified: bool, remover: Remover = fast_remover) -> None:
    """Remove the worktree through fast removal, honouring the discard flags."""
    if not discard_untracked and not discard_modified:
        try:
            remover(repo_root, cwd, False)
        except Exception as exc:
            raise WorktreeNotRemovableError(cwd, [], str(exc)) from exc
        return
    state = tree_status(cwd, repo_root=repo_root)
    if state["state"] == "clean":
        remover(repo_root, cwd, False)
        return
    blocked = []
    if state["untracked"] > 0 and not discard_untracked:
        blocked.append("untracked")
    if (state["modified"] > 0 or state["staged"] > 0) and not discard_modified:
        blocked.append("modified")
    if blocked:
        raise WorktreeNotRemovableError(cwd, blocked)
    remover(repo_root, cwd, True)


def cleanup_worktree(repo_root: str, cwd: str, *, branch: str | None = None,
                     delete_branch: bool = False, base: str = DEFAULT_REF,
                     run_teardown_hooks: bool = True, discard_untracked: bool = False,
                     discard_modified: bool = False,
                     remover: Remover = fast_remover,
                     services: ServiceRegistry | None = None) -> dict[str, Any]:
    """Stop services, run teardown, remove the worktree and optionally delete its branch.

    Returns ``{removed: true}``; a refusal raises :class:`WorktreeNotRemovableError`. A
    branch deletion error propagates even though the worktree is already gone. ``remover``
    replaces fast removal (GC wraps it to record every removal it asks for); ``services``
    is the registry whose supervisor of ``cwd`` is stopped (default: the process-wide one).
    """
    root = os.path.abspath(repo_root)
    (services or default_registry()).dispose(cwd)
    if run_teardown_hooks:
        teardown_worktree(root, cwd, branch, base)
    remove_checked(root, cwd, discard_untracked=discard_untracked,
                   discard_modified=discard_modified, remover=remover)
    if delete_branch and branch:
        git(root, ["branch", "-D", END_OF_OPTIONS, branch])
    return {"removed": True}
