"""Worktree garbage collection (spec sections 9.1 and 9.2): plan, then apply with re-checks.

``plan_gc`` classifies every linked worktree; ``apply_gc`` acts on a plan but re-checks each
entry first, because minutes may pass between the two and an agent may have started working
again. Safety rules: an open PR or a live session always holds; a dirty merged worktree is
only ever salvaged (never discarded) and only with ``salvage_dirty``; reclaiming never passes
a discard flag, so git's own cleanliness check is the last line of defence.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tavernlab.worktree.cleanup import Remover, cleanup_worktree, fast_remover
from tavernlab.worktree.forge import Forge, VerdictMemo
from tavernlab.worktree.git import git, git_run
from tavernlab.worktree.ladder import classify_tip
from tavernlab.worktree.listing import is_within, list_worktrees, real
from tavernlab.worktree.salvage import salvage_worktree
from tavernlab.worktree.status import (
    DEFAULT_REF,
    Clock,
    load_sessions,
    now_ms,
    worktree_status,
)

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
    explicitly for "daemon unreachable". ``remover`` wraps fast removal (tests record the
    ``force`` flag through it).
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
    clock: Clock = now_ms
    remover: Remover = field(default=fast_remover)

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
    subjects = git_run(repo_root, ["log", "--format=%s", f"{base}..{tip}"])
    lines = [line for line in subjects.stdout.splitlines() if line]
    if subjects.exit_code != 0 or not lines:
        return False
    if not all(DEP_BUMP_SUBJECT.match(line) for line in lines):
        return False
    diff = git_run(repo_root, ["diff", "--name-only", f"{base}...{tip}"])
    files = [line for line in diff.stdout.splitlines() if line]
    return diff.exit_code == 0 and bool(files) and all(
        os.path.basename(f) in DEP_BUMP_FILES for f in files)


def _plan_entry(repo_root: str, record: dict[str, Any], options: GcOptions,
                sessions: Sequence[dict[str, Any]] | None) -> dict[str, Any]:
    path = record["path"]
    if record.get("prunable") is not None:
        return {"path": path, "branch": record.get("branch"), "head": record.get("head", ""),
                "class": "reclaim", "reclaimReason": "prunable", "prunable": True}
    status = worktree_status(repo_root, record, forge=options.forge, memo=options.memo,
                             sessions=sessions, noise_paths=options.noise_paths,
                             default_ref=options.default_ref, clock=options.clock)
    entry = dict(status)
    reason = entry.pop("reason")
    state = entry["integration"]["state"]
    clean = entry["tree"]["state"] == "clean"
    idleish = entry["liveness"]["state"] in ("idle", "daemon-unreachable")
    if _protected(path, options.protected_paths):
        entry.update({"class": "hold", "holdReason": "live-session-cwd"})
    elif entry["class"] != "hold":
        entry["reclaimReason" if entry["class"] == "reclaim" else "salvageReason"] = reason
    elif options.include_detached and state == "detached" and clean and idleish:
        entry.update({"class": "reclaim", "reclaimReason": "detached"})
    elif state == "unpushed" and clean and idleish and \
            is_dep_bump(repo_root, entry["head"], options.default_ref):
        entry.update({"class": "reclaim", "reclaimReason": "dep-bump"})
    elif options.in_base_check and state in _IN_BASE_STATES and clean and idleish and \
            (verdict := _ladder(repo_root, entry["head"], options.default_ref)) is not None:
        entry.update({"class": "reclaim", "reclaimReason": verdict})
    else:
        entry["holdReason"] = reason
    return entry


def _ladder(repo_root: str, tip: str, base: str) -> str | None:
    try:
        verdict = classify_tip(repo_root, tip, base)
    except Exception:
        return None
    return verdict if verdict in ("squash-merged", "patch-merged", "content-merged") else None


def _orphans(repo_root: str, worktrees_root: str, registered: set[str],
             protected: Sequence[str]) -> list[dict[str, Any]]:
    common = git(repo_root, ["rev-parse", "--path-format=absolute", "--git-common-dir"]).strip()
    admin = real(os.path.join(common, "worktrees"))
    entries = []
    try:
        children = sorted(Path(worktrees_root).iterdir())
    except OSError:
        return []
    for child in children:
        if not child.is_dir() or child.is_symlink() or real(child) in registered:
            continue
        if not _points_into(child, admin):
            continue
        entry: dict[str, Any] = {"path": str(child), "branch": None, "head": "",
                                 "class": "reclaim", "reclaimReason": "orphan", "orphan": True}
        if _protected(str(child), protected):
            entry.update({"class": "hold", "holdReason": "live-session-cwd"})
            entry.pop("reclaimReason")
        entries.append(entry)
    return entries


def _points_into(directory: Path, admin: str) -> bool:
    try:
        text = (directory / ".git").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if not text.startswith("gitdir:"):
        return False
    gitdir = text[len("gitdir:"):].strip()
    return is_within(real(os.path.join(directory, gitdir)), admin)


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
    wanted = {real(p) for p in paths} if paths is not None else None
    records = list_worktrees(root)[1:]
    plan = [
        _plan_entry(root, dict(record), opts, sessions) for record in records
        if wanted is None or real(record["path"]) in wanted
    ]
    if opts.worktrees_root is not None:
        registered = {real(record["path"]) for record in records}
        plan += [entry for entry in _orphans(root, opts.worktrees_root, registered,
                                             opts.protected_paths)
                 if wanted is None or real(entry["path"]) in wanted]
    return plan


def _record(entry: dict[str, Any], result: str, **extra: Any) -> dict[str, Any]:
    return {"path": entry["path"], "branch": entry.get("branch"), "result": result, **extra}


def _restore_noise(repo_root: str, entry: dict[str, Any], noise: Sequence[str]) -> None:
    path = entry["path"]
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


def _apply_one(repo_root: str, entry: dict[str, Any], opts: GcOptions) -> dict[str, Any]:
    path = entry["path"]
    if _protected(path, opts.protected_paths):
        if entry["class"] == "hold":
            return _record(entry, "held")
        return _record(entry, "aborted-reclassified", **{"from": entry["class"], "to": "hold"})
    records = list_worktrees(repo_root)[1:]
    current = next((r for r in records if real(r["path"]) == real(path)), None)
    if entry.get("orphan"):
        if not os.path.lexists(path):
            return _record(entry, "reclaimed")
        admin = real(os.path.join(git(repo_root, ["rev-parse", "--path-format=absolute",
                                                  "--git-common-dir"]).strip(), "worktrees"))
        if current is None and _points_into(Path(path), admin):
            shutil.rmtree(path)
            return _record(entry, "reclaimed")
        return _record(entry, "aborted-reclassified", **{"from": "reclaim", "to": "hold"})
    if entry.get("prunable"):
        if current is None:
            return _record(entry, "reclaimed")
        if current.get("prunable") is None:
            return _record(entry, "aborted-reclassified", **{"from": "reclaim", "to": "hold"})
        git(repo_root, ["worktree", "prune"])
        return _record(entry, "reclaimed")
    if entry["class"] == "hold":
        return _record(entry, "held")
    if entry["class"] == "salvage" and not opts.salvage_dirty:
        return _record(entry, "skipped-dirty")
    if current is None:
        return _record(entry, "aborted-vanished")
    fresh = _plan_entry(repo_root, dict(current), opts, opts.resolved_sessions())
    if fresh["class"] != entry["class"]:
        return _record(entry, "aborted-reclassified",
                       **{"from": entry["class"], "to": fresh["class"]})
    branch = fresh.get("branch")
    if fresh["class"] == "reclaim":
        _restore_noise(repo_root, fresh, opts.noise_paths)
        try:
            cleanup_worktree(repo_root, path, branch=branch, delete_branch=True,
                             remover=opts.remover)
        except Exception as exc:
            return _record(entry, "failed", error=str(exc))
        return _record(entry, "reclaimed")
    try:
        salvaged = salvage_worktree(repo_root, path,
                                    slug=branch or os.path.basename(path.rstrip("/")),
                                    salvage_root=opts.salvage_root,
                                    provenance=fresh.get("provenance"))
    except Exception as exc:
        return _record(entry, "failed", error=f"salvage failed, nothing removed: {exc}")
    try:
        cleanup_worktree(repo_root, path, branch=branch, delete_branch=True,
                         discard_untracked=True, discard_modified=True, remover=opts.remover)
    except Exception as exc:
        return _record(entry, "failed", salvageDir=salvaged["dir"],
                       error=f"salvaged to {salvaged['dir']}, but removal failed: {exc}")
    return _record(entry, "salvaged", salvageDir=salvaged["dir"])


def apply_gc(repo_root: str, plan: Sequence[dict[str, Any]],
             options: GcOptions | None = None) -> list[dict[str, Any]]:
    """Act on a plan entry by entry, re-checking each one first; returns
    ``[{path, branch, result, …}]`` with ``result`` one of ``reclaimed``, ``salvaged``,
    ``held``, ``skipped-dirty``, ``aborted-vanished``, ``aborted-reclassified``, ``failed``."""
    opts = options or GcOptions()
    root = os.path.abspath(repo_root)
    return [_apply_one(root, entry, opts) for entry in plan]


def reclaim_one_worktree(repo_root: str, path: str,
                         options: GcOptions | None = None) -> dict[str, Any] | None:
    """Plan and apply GC for one worktree; ``None`` if ``path`` is not a linked worktree."""
    opts = replace(options or GcOptions(), worktrees_root=None)
    plan = plan_gc(repo_root, opts, paths=[path])
    if not plan:
        return None
    return apply_gc(repo_root, plan, opts)[0]
