"""Worktree garbage collection (docs/worktrees.md): plan, then apply with re-checks.

``plan_gc`` classifies every linked worktree; ``apply_gc`` acts on a plan but re-checks each
entry first, because minutes may pass between the two and an agent may have started working
again. Safety rules: an open PR or a live session always holds; a dirty merged worktree is
only ever salvaged (never discarded) and only with ``salvage_dirty``; reclaiming never passes
a discard flag, so git's own cleanliness check is the last line of defence.

Apply records follow upstream: ``{path, branch, result, …}`` with ``reclaimReason`` on a
reclaim that has one (``dep-bump``, ``orphan``, ``prunable``, a ladder rung, …),
``holdReason: "live-session-cwd"`` on a protected entry, ``{from, to}`` on
``aborted-reclassified``, ``salvageDir`` on a salvage and ``message`` on ``failed``.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tavernlab.clock import SYSTEM_CLOCK, Clock, epoch_ms
from tavernlab.worktree._cleanup import Remover, cleanup_worktree, fast_remover
from tavernlab.worktree._forge import Forge, VerdictMemo
from tavernlab.worktree._git import DEFAULT_REF, END_OF_OPTIONS, git, git_run
from tavernlab.worktree._ladder import classify_tip
from tavernlab.worktree._listing import find_worktree, is_within, list_worktrees, real
from tavernlab.worktree._orphans import admin_dir, orphan_entry, orphan_paths, points_into
from tavernlab.worktree._salvage import salvage_worktree
from tavernlab.worktree._services import ServiceRegistry
from tavernlab.worktree._sessions import load_sessions
from tavernlab.worktree._status import worktree_status

DEFAULT_NOISE_PATHS = (".opencode/package-lock.json",)
DEP_BUMP_SUBJECT = re.compile(r"^(chore|fix)\(deps[\w-]*\):\s")
DEP_BUMP_FILES = frozenset({"pnpm-lock.yaml", "package-lock.json", "yarn.lock", "package.json"})
_IN_BASE_STATES = frozenset({"partial", "diverged", "pushed-no-pr", "unpushed", "local-only",
                             "gone-unexplained"})
_UNSET: Any = object()


@dataclass(frozen=True)
class GcOptions:
    """Every knob of :func:`plan_gc` / :func:`apply_gc`.

    ``sessions`` defaults to the session registry (``load_sessions()``); pass ``None``
    explicitly for "daemon unreachable". ``clock`` stamps ``checkedAt``; ``recent_clock``
    (read once per plan or apply) is the instant the 15-minute recent-write window is
    measured from — two clocks, as upstream's ``now`` and ``nowMs``. ``remover`` wraps fast
    removal (tests record the ``force`` flag through it); ``services`` is the registry whose
    services a reclaim stops (default: the process-wide one).
    """

    forge: Forge | None = None
    memo: VerdictMemo | None = None
    sessions: Sequence[dict[str, Any]] | None = _UNSET
    protected_paths: Sequence[str] = ()
    include_detached: bool = False
    in_base_check: bool = True
    noise_paths: Sequence[str] = DEFAULT_NOISE_PATHS
    worktrees_root: str | None = None
    default_ref: str = DEFAULT_REF
    salvage_dirty: bool = False
    salvage_root: str | None = None
    clock: Clock = SYSTEM_CLOCK
    recent_clock: Clock = SYSTEM_CLOCK
    remover: Remover = fast_remover
    services: ServiceRegistry | None = None

    def resolved_sessions(self) -> Sequence[dict[str, Any]] | None:
        """The sessions to use, loading the registry when none were given."""
        return load_sessions() if self.sessions is _UNSET else self.sessions


def _protected(path: str, protected: Sequence[str]) -> bool:
    """Whether a protected path (a live session's cwd) is the worktree or inside it."""
    return any(is_within(real(p), real(path)) for p in protected)


def is_dep_bump(repo_root: str, tip: str, base: str) -> bool:
    """Whether ``base..tip`` is a mechanical dependency bump: at least one commit, every
    subject ``chore(deps…):``/``fix(deps…):``, and a diff touching only lockfiles and
    ``package.json``."""
    subjects = git_run(repo_root, ["log", "--format=%s", END_OF_OPTIONS, f"{base}..{tip}"])
    lines = [line for line in subjects.stdout.splitlines() if line]
    if subjects.exit_code != 0 or not lines:
        return False
    if not all(DEP_BUMP_SUBJECT.match(line) for line in lines):
        return False
    diff = git_run(repo_root, ["diff", "--name-only", END_OF_OPTIONS, f"{base}...{tip}"])
    files = [line for line in diff.stdout.splitlines() if line]
    return diff.exit_code == 0 and bool(files) and all(
        os.path.basename(f) in DEP_BUMP_FILES for f in files)


def _ladder(repo_root: str, tip: str, base: str) -> str | None:
    try:
        verdict = classify_tip(repo_root, tip, base)
    except Exception:
        return None  # an unresolvable base or a git error proves nothing
    return verdict if verdict in ("squash-merged", "patch-merged", "content-merged") else None


def _promotion(repo_root: str, entry: dict[str, Any], opts: GcOptions) -> str | None:
    """The reclaim reason that promotes a clean, idle-ish hold, if any."""
    state = entry["integration"]["state"]
    if entry["tree"]["state"] != "clean" or \
            entry["liveness"]["state"] not in ("idle", "daemon-unreachable"):
        return None
    if opts.include_detached and state == "detached":
        return "detached"
    if state == "unpushed" and is_dep_bump(repo_root, entry["head"], opts.default_ref):
        return "dep-bump"
    if opts.in_base_check and state in _IN_BASE_STATES:
        return _ladder(repo_root, entry["head"], opts.default_ref)
    return None


def _plan_entry(repo_root: str, record: dict[str, Any], opts: GcOptions,
                sessions: Sequence[dict[str, Any]] | None, now_ms: int) -> dict[str, Any]:
    path = record["path"]
    if record.get("prunable") is not None:
        if _protected(path, opts.protected_paths):
            return {"path": path, "branch": record.get("branch"), "head": record.get("head", ""),
                    "class": "hold", "holdReason": "live-session-cwd"}
        return {"path": path, "branch": record.get("branch"), "head": record.get("head", ""),
                "class": "reclaim", "reclaimReason": "prunable", "prunable": True}
    entry = worktree_status(repo_root, record, forge=opts.forge, memo=opts.memo,
                            sessions=sessions, noise_paths=opts.noise_paths,
                            default_ref=opts.default_ref, clock=opts.clock, now_ms=now_ms)
    reason = entry.pop("reason")
    if _protected(path, opts.protected_paths):
        entry.update({"class": "hold", "holdReason": "live-session-cwd"})
    elif entry["class"] != "hold":
        entry["reclaimReason" if entry["class"] == "reclaim" else "salvageReason"] = reason
    elif (promoted := _promotion(repo_root, entry, opts)) is not None:
        entry.update({"class": "reclaim", "reclaimReason": promoted})
    else:
        entry["holdReason"] = reason
    return entry


def plan_gc(repo_root: str, options: GcOptions | None = None,
            paths: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Classify every linked worktree (never the main checkout); ``paths`` limits the plan.

    With ``worktrees_root``, ``git worktree prune`` runs first and leftover directories whose
    ``.git`` file points into this repository's ``worktrees/`` admin area become orphans.
    """
    opts = options or GcOptions()
    root = os.path.abspath(repo_root)
    if opts.worktrees_root is not None:
        git_run(root, ["worktree", "prune"])
    sessions = opts.resolved_sessions()
    now_ms = epoch_ms(opts.recent_clock.now())  # one instant for the whole plan
    wanted = {real(p) for p in paths} if paths is not None else None
    records = list_worktrees(root)[1:]
    plan = [_plan_entry(root, dict(record), opts, sessions, now_ms) for record in records
            if wanted is None or real(record["path"]) in wanted]
    if opts.worktrees_root is not None:
        for path in orphan_paths(root, opts.worktrees_root, [r["path"] for r in records]):
            if wanted is None or real(path) in wanted:
                plan.append(orphan_entry(path, _protected(path, opts.protected_paths)))
    return plan


def _record(entry: dict[str, Any], result: str, **extra: Any) -> dict[str, Any]:
    return {"path": entry["path"], "branch": entry.get("branch"), "result": result, **extra}


def _reclaimed(entry: dict[str, Any]) -> dict[str, Any]:
    reason = entry.get("reclaimReason")
    return _record(entry, "reclaimed", **({"reclaimReason": reason} if reason else {}))


def _restore_noise(repo_root: str, path: str, noise: Sequence[str]) -> None:
    for rel in noise:
        tracked = git_run(repo_root, ["ls-files", "--error-unmatch", "--", rel], target=path)
        if tracked.exit_code == 0:
            git_run(repo_root, ["checkout", "HEAD", "--", rel], target=path)
        else:
            target = Path(path) / rel
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            elif target.exists() or target.is_symlink():
                target.unlink()


def _apply_orphan(repo_root: str, entry: dict[str, Any]) -> dict[str, Any]:
    path = entry["path"]
    if not os.path.lexists(path):
        return _reclaimed(entry)
    git_run(repo_root, ["worktree", "prune"])
    if find_worktree(repo_root, path) is None and points_into(Path(path), admin_dir(repo_root)):
        try:
            shutil.rmtree(path)
        except OSError as exc:
            return _record(entry, "failed", message=str(exc))
        return _reclaimed(entry)
    return _record(entry, "aborted-reclassified", **{"from": "reclaim", "to": "hold"})


def _apply_prunable(repo_root: str, entry: dict[str, Any]) -> dict[str, Any]:
    current = find_worktree(repo_root, entry["path"])
    if current is not None and current.get("prunable") is None:
        return _record(entry, "aborted-reclassified", **{"from": "reclaim", "to": "hold"})
    if current is not None:
        try:
            git(repo_root, ["worktree", "prune"])
        except Exception as exc:
            return _record(entry, "failed", message=str(exc))
    return _reclaimed(entry)  # the branch is never deleted: nothing is left to inspect


def _remove(repo_root: str, entry: dict[str, Any], opts: GcOptions) -> dict[str, Any]:
    """Reclaim (no discard flags) or salvage-then-remove a re-verified entry."""
    path, branch = entry["path"], entry.get("branch")
    if entry["class"] == "reclaim":
        _restore_noise(repo_root, path, opts.noise_paths)
        try:
            cleanup_worktree(repo_root, path, branch=branch, delete_branch=True,
                             remover=opts.remover, services=opts.services)
        except Exception as exc:
            return _record(entry, "failed", message=str(exc))
        return _reclaimed(entry)
    try:
        salvaged = salvage_worktree(repo_root, path,
                                    slug=branch or os.path.basename(path.rstrip("/")),
                                    salvage_root=opts.salvage_root,
                                    provenance=entry.get("provenance"), clock=opts.clock)
    except Exception as exc:
        return _record(entry, "failed", message=f"salvage failed, nothing removed: {exc}")
    try:
        cleanup_worktree(repo_root, path, branch=branch, delete_branch=True,
                         discard_untracked=True, discard_modified=True, remover=opts.remover,
                         services=opts.services)
    except Exception as exc:
        return _record(entry, "failed", salvageDir=salvaged["dir"],
                       message=f"salvaged to {salvaged['dir']}, but removal failed: {exc}")
    return _record(entry, "salvaged", salvageDir=salvaged["dir"])


def _apply_one(repo_root: str, entry: dict[str, Any], opts: GcOptions,
               now_ms: int) -> dict[str, Any]:
    if _protected(entry["path"], opts.protected_paths):
        if entry["class"] == "hold":
            return _record(entry, "held", holdReason="live-session-cwd")
        return _record(entry, "aborted-reclassified", holdReason="live-session-cwd",
                       **{"from": entry["class"], "to": "hold"})
    if entry.get("orphan"):
        return _apply_orphan(repo_root, entry)
    if entry.get("prunable"):
        return _apply_prunable(repo_root, entry)
    if entry["class"] == "hold":
        return _record(entry, "held")
    if entry["class"] == "salvage" and not opts.salvage_dirty:
        return _record(entry, "skipped-dirty")
    current = find_worktree(repo_root, entry["path"])
    if current is None:
        return _record(entry, "aborted-vanished")
    fresh = _plan_entry(repo_root, dict(current), opts, opts.resolved_sessions(), now_ms)
    if fresh["class"] != entry["class"]:
        return _record(fresh, "aborted-reclassified",
                       **{"from": entry["class"], "to": fresh["class"]})
    return _remove(repo_root, fresh, opts)


def apply_gc(repo_root: str, plan: Sequence[dict[str, Any]],
             options: GcOptions | None = None) -> list[dict[str, Any]]:
    """Act on a plan entry by entry, re-checking each one first; returns
    ``[{path, branch, result, …}]`` with ``result`` one of ``reclaimed``, ``salvaged``,
    ``held``, ``skipped-dirty``, ``aborted-vanished``, ``aborted-reclassified``, ``failed``."""
    opts = options or GcOptions()
    root = os.path.abspath(repo_root)
    now_ms = epoch_ms(opts.recent_clock.now())
    return [_apply_one(root, entry, opts, now_ms) for entry in plan]


def reclaim_one_worktree(repo_root: str, path: str,
                         options: GcOptions | None = None) -> dict[str, Any] | None:
    """Plan and apply GC for one worktree; ``None`` if ``path`` is not a linked worktree."""
    opts = replace(options or GcOptions(), worktrees_root=None)
    plan = plan_gc(repo_root, opts, paths=[path])
    if not plan:
        return None
    return apply_gc(repo_root, plan, opts)[0]
