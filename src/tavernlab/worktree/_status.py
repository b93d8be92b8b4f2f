"""The status engine (docs/worktrees.md): is a worktree's work integrated, is anyone
using it, and what may garbage collection do with it.

* :func:`integration_status` (:mod:`integration`) — fresh, merged, partial, open, diverged,
  unpushed, … from git ancestry, the forge's pull requests (memoized) and upstream tracking.
* :func:`liveness` and :func:`provenance` (:mod:`sessions`) — agent sessions in the worktree.
* :func:`classify` — ``reclaim`` / ``salvage`` / ``hold``. Only merged-or-fresh, clean and
  idle work is reclaimed; merged dirty work is salvaged first; everything else is held.

Two clocks, kept apart as upstream keeps ``now`` and ``nowMs``: ``clock`` stamps every
``checkedAt`` (tests freeze it, often in the past), while ``recent_clock`` is compared with
file modification times for the 15-minute "recently written" window and so must be the real
wall clock unless a test pins both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tavernlab.clock import SYSTEM_CLOCK, Clock, epoch_ms
from tavernlab.worktree._forge import Forge, VerdictMemo
from tavernlab.worktree._git import DEFAULT_REF, END_OF_OPTIONS, git_run
from tavernlab.worktree._hostnames import repo_name
from tavernlab.worktree._integration import integration_status
from tavernlab.worktree._listing import list_worktrees, real
from tavernlab.worktree._marker import read_creation_marker
from tavernlab.worktree._sessions import liveness, load_sessions, provenance
from tavernlab.worktree._tree import tree_status

__all__ = [
    "DEFAULT_REF",
    "RECENT_WRITE_MS",
    "base_divergence",
    "classify",
    "integration_status",
    "list_worktree_statuses",
    "liveness",
    "load_sessions",
    "provenance",
    "worktree_status",
]

#: A dirty merged worktree written to more recently than this is held, not salvaged.
RECENT_WRITE_MS = 15 * 60 * 1000


def classify(integration: dict[str, Any], tree: dict[str, Any], live: dict[str, Any],
             now_ms: float | None = None) -> dict[str, Any]:
    """``{class: "reclaim"|"salvage"|"hold", reason}``; ``now_ms`` is the epoch-ms
    instant the recent-write window is measured from (default: the system clock)."""
    state = integration.get("state")
    idleish = live.get("state") in ("idle", "daemon-unreachable")
    clean = tree.get("state") == "clean"
    if state in ("merged", "fresh") and clean and idleish:
        return {"class": "reclaim", "reason": state}
    if state == "merged" and not clean:
        if not idleish:
            return {"class": "hold", "reason": "live-session"}
        newest = tree.get("newestMtimeMs")
        current = now_ms if now_ms is not None else epoch_ms(SYSTEM_CLOCK.now())
        if newest is not None and current - newest < RECENT_WRITE_MS:
            return {"class": "hold", "reason": "recent-write"}
        return {"class": "salvage", "reason": "merged-dirty"}
    if not idleish:
        return {"class": "hold", "reason": "live-session"}
    if state == "fresh":
        return {"class": "hold", "reason": "dirty"}
    return {"class": "hold", "reason": str(state)}


def base_divergence(repo_root: str, head: str, base: str = DEFAULT_REF) -> dict[str, Any] | None:
    """``{ref, ahead, behind}`` of ``head`` against ``base``; None for no head or no base."""
    if not head:
        return None
    result = git_run(repo_root, ["rev-list", "--left-right", "--count", END_OF_OPTIONS,
                                 f"{base}...{head}"])
    if result.exit_code != 0:
        return None
    behind, ahead = (int(n) for n in result.stdout.split())
    return {"ref": base, "ahead": ahead, "behind": behind}


def worktree_status(repo_root: str, record: dict[str, Any], *, forge: Forge | None,
                    memo: VerdictMemo | None, sessions: Sequence[dict[str, Any]] | None,
                    noise_paths: Sequence[str] = (), default_ref: str = DEFAULT_REF,
                    clock: Clock = SYSTEM_CLOCK,
                    now_ms: float | None = None) -> dict[str, Any]:
    """Everything the engine knows about one listed worktree (``now_ms``: the instant of
    the recent-write window, see the module docstring)."""
    path = record["path"]
    entry: dict[str, Any] = {"path": path, "branch": record.get("branch"),
                             "head": record.get("head", "")}
    if record.get("prunable") is not None:
        entry["prunable"] = record["prunable"]
        return entry
    tree = tree_status(path, noise_paths, repo_root=repo_root)
    integration = integration_status(repo_root, repo_name(repo_root), record.get("branch"),
                                     record.get("head", ""), forge, memo, default_ref, clock)
    live = liveness(path, sessions)
    marker = read_creation_marker(path)
    entry.update({
        "tree": tree,
        "integration": integration,
        "liveness": live,
        "baseDivergence": base_divergence(repo_root, record.get("head", ""), default_ref),
        "provenance": provenance(path, sessions, marker.get("createdAt") if marker else None),
        **classify(integration, tree, live, now_ms),
    })
    return entry


def list_worktree_statuses(repo_root: str, paths: Sequence[str] | None = None, *,
                           forge: Forge | None = None, memo: VerdictMemo | None = None,
                           sessions: Sequence[dict[str, Any]] | None = None,
                           noise_paths: Sequence[str] = (), default_ref: str = DEFAULT_REF,
                           clock: Clock = SYSTEM_CLOCK,
                           recent_clock: Clock = SYSTEM_CLOCK) -> list[dict[str, Any]]:
    """Statuses of every worktree of the repository, the main checkout first (as upstream's
    ``listWorktreeStatuses``); ``paths`` filters by resolved path (a trailing slash matches).
    Deterministic for fixed clocks; ``recent_clock`` is read once for the whole list."""
    wanted = {real(p.rstrip("/") or "/") for p in paths} if paths is not None else None
    now_ms = epoch_ms(recent_clock.now())
    result = []
    for record in list_worktrees(repo_root):
        if wanted is not None and real(record["path"]) not in wanted:
            continue
        result.append(worktree_status(repo_root, dict(record), forge=forge, memo=memo,
                                      sessions=sessions, noise_paths=noise_paths,
                                      default_ref=default_ref, clock=clock, now_ms=now_ms))
    return result
