"""The status engine (spec sections 8.2-8.5): is a worktree's work integrated, is anyone
using it, and what may garbage collection do with it.

* :func:`integration_status` — fresh, merged, partial, open, diverged, unpushed, … from git
  ancestry, the forge's pull requests (memoized) and upstream tracking.
* :func:`liveness` — agent sessions whose cwd is inside the worktree.
* :func:`classify` — ``reclaim`` / ``salvage`` / ``hold``. Only merged-or-fresh, clean and
  idle work is reclaimed; merged dirty work is salvaged first; everything else is held.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tavernlab.worktree.errors import ForgeUnavailableError, GitError
from tavernlab.worktree.forge import Forge, PullRequest, VerdictMemo
from tavernlab.worktree.git import git, git_run
from tavernlab.worktree.hostnames import repo_name
from tavernlab.worktree.listing import is_within, list_worktrees, real
from tavernlab.worktree.provision import read_creation_marker
from tavernlab.worktree.tree import tree_status

DEFAULT_REF = "origin/main"
#: A dirty merged worktree written to more recently than this is held, not salvaged.
RECENT_WRITE_MS = 15 * 60 * 1000
LIVE_STATUSES = frozenset({"starting", "running"})
_FORGE_STATES = frozenset({"merged", "partial", "open", "diverged"})

Clock = Callable[[], float]


def now_ms() -> float:
    """Wall-clock epoch milliseconds (the default clock)."""
    return time.time() * 1000


def iso(ms: float) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds and ``Z``."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def _is_ancestor(repo_root: str, older: str, newer: str) -> bool:
    """``merge-base --is-ancestor``; exit 1 is "no", anything else raises GitError."""
    result = git_run(repo_root, ["merge-base", "--is-ancestor", older, newer])
    if result.exit_code in (0, 1):
        return result.exit_code == 0
    raise GitError(f"git merge-base --is-ancestor failed (exit {result.exit_code})",
                   args=["merge-base"], exit_code=result.exit_code, stderr=result.stderr,
                   stdout=result.stdout)


def _tracking(repo_root: str, branch: str) -> dict[str, Any]:
    out = git(repo_root, ["for-each-ref", "--format=%(upstream)|%(upstream:track)",
                          f"refs/heads/{branch}"]).strip()
    upstream, _, track = out.partition("|")
    if not upstream:
        return {"state": "local-only"}
    if "gone" in track:
        return {"state": "gone-unexplained"}
    if "ahead" in track:
        ahead = int(track.split("ahead", 1)[1].split(",")[0].strip(" ]"))
        return {"state": "unpushed", "aheadBy": ahead}
    return {"state": "pushed-no-pr"}


def _forge_verdict(repo_root: str, branch: str, tip: str, forge: Forge) -> dict[str, Any] | None:
    pulls: dict[int, PullRequest] = {}
    for pull in [*forge.pulls_for_branch(branch), *forge.pulls_for_commit(tip)]:
        pulls.setdefault(pull["number"], pull)
    merged = sorted((p for p in pulls.values() if p["merged"]),
                    key=lambda p: p["mergedAt"] or "", reverse=True)
    for pull in merged:
        head = pull["headRefOid"]
        if _is_ancestor(repo_root, tip, head):
            return {"state": "merged", "via": "squash", "pr": pull["number"], "offline": False}
        if _is_ancestor(repo_root, head, tip):
            ahead = int(git(repo_root, ["rev-list", "--count", f"{head}..{tip}"]).strip())
            return {"state": "partial", "pr": pull["number"], "aheadBy": ahead,
                    "offline": False}
    open_pulls = sorted(p["number"] for p in pulls.values() if p["state"] == "open")
    if open_pulls:
        return {"state": "open", "pr": open_pulls[0], "offline": False}
    if merged:
        return {"state": "diverged", "pr": merged[0]["number"], "offline": False}
    return None


def integration_status(repo_root: str, repo: str, branch: str | None, tip: str,
                       forge: Forge | None, memo: VerdictMemo | None,
                       default_ref: str = DEFAULT_REF,
                       clock: Clock = now_ms) -> dict[str, Any]:
    """How far a branch's tip has made it into the default ref.

    ``forge=None`` means "no forge for this repository": the forge step finds no pull
    requests and tracking decides (tavernlab's choice). A forge that raises
    :class:`ForgeUnavailableError`, or git failing while comparing with PR heads, takes the
    offline path: a memoized verdict (``offline: true``) or ``unknown``/``offline``.
    """
    checked = {"checkedAt": iso(clock())}
    if not branch:
        return {"state": "detached", **checked}
    try:
        if _is_ancestor(repo_root, tip, default_ref):
            return {"state": "fresh", **checked}
    except GitError:
        pass
    try:
        verdict = _forge_verdict(repo_root, branch, tip, forge) if forge is not None else None
        if verdict is not None:
            if memo is not None:
                memo.put(repo, branch, tip, verdict)
            return {**verdict, **checked}
        return {**_tracking(repo_root, branch), **checked}
    except (ForgeUnavailableError, GitError):
        cached = memo.get(repo, branch, tip) if memo is not None else None
        if cached is not None:
            if cached.get("state") in _FORGE_STATES:
                cached["offline"] = True
            return {**cached, **checked}
        return {"state": "unknown", "reason": "offline", **checked}


# -- liveness ---------------------------------------------------------------------------


def _read_sessions(path: Path) -> list[dict[str, Any]] | None:
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = data.get("sessions") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise ValueError("not a session list")
    return [row for row in rows if isinstance(row, dict)]


def load_sessions(path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]] | None:
    """Agent sessions from ``~/.agentproto/sessions.json`` and every
    ``~/.agentproto/workspaces/<slug>/sessions.json`` (bucket rows win on duplicate ids).

    A file holds either a list of sessions or ``{"sessions": [...]}`` (upstream format
    unknown; tavernlab accepts both). Corrupt buckets are skipped; if every existing source
    is unreadable the result is ``None`` (daemon unreachable); nothing ever run → ``[]``.
    An explicit ``path`` reads only that file.
    """
    if path is not None:
        sources = [Path(path)]
    else:
        home = Path.home() / ".agentproto"
        sources = [home / "sessions.json",
                   *sorted((home / "workspaces").glob("*/sessions.json"))]
    existing = [source for source in sources if source.exists()]
    if not existing:
        return []
    merged: dict[str, dict[str, Any]] = {}
    readable = 0
    for source in existing:  # the root file first, so bucket rows overwrite it
        try:
            rows = _read_sessions(source) or []
        except (OSError, ValueError):
            continue
        readable += 1
        for row in rows:
            merged[str(row.get("id"))] = row
    return list(merged.values()) if readable else None


def sessions_in(path: str, sessions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sessions whose cwd is the worktree or below it."""
    return [s for s in sessions if isinstance(s.get("cwd"), str) and is_within(s["cwd"], path)]


def liveness(path: str, sessions: Sequence[dict[str, Any]] | None) -> dict[str, Any]:
    """``{state: "sessions"|"idle"|"daemon-unreachable", sessions, services: []}``."""
    if sessions is None:
        return {"state": "daemon-unreachable", "sessions": [], "services": []}
    live = [s for s in sessions_in(path, sessions) if s.get("status") in LIVE_STATUSES]
    return {"state": "sessions" if live else "idle",
            "sessions": [s.get("id") for s in live], "services": []}


def provenance(path: str, sessions: Sequence[dict[str, Any]] | None,
               created_at: str | None) -> dict[str, Any]:
    """Which sessions worked in the worktree (never affects the class).

    With a creation marker only sessions started at or after ``createdAt`` count
    (confidence ``exact``); otherwise every session inside it (``best-effort``).
    """
    rows = []
    for session in sessions_in(path, sessions or []):
        if not isinstance(session.get("id"), str) or not isinstance(session.get("startedAt"),
                                                                     str):
            continue  # malformed registry entries are dropped
        if created_at is not None and session["startedAt"] < created_at:
            continue
        row: dict[str, Any] = {"id": session["id"], "startedAt": session["startedAt"],
                               "status": session.get("status")}
        for key in ("adapterSlug", "model", "costUsd", "tokensIn", "tokensOut"):
            if key in session:
                row[key] = session[key]
        auth = session.get("auth")
        if isinstance(auth, dict) and "mode" in auth:
            row["authMode"] = auth["mode"]
        rows.append(row)
    rows.sort(key=lambda row: row["startedAt"])
    return {"confidence": "exact" if created_at is not None else "best-effort",
            "sessions": rows}


# -- classification -----------------------------------------------------------------------


def classify(integration: dict[str, Any], tree: dict[str, Any], live: dict[str, Any],
             now: float | None = None) -> dict[str, Any]:
    """``{class: "reclaim"|"salvage"|"hold", reason}`` (spec 8.4)."""
    state = integration.get("state")
    idleish = live.get("state") in ("idle", "daemon-unreachable")
    clean = tree.get("state") == "clean"
    if state in ("merged", "fresh") and clean and idleish:
        return {"class": "reclaim", "reason": state}
    if state == "merged" and not clean:
        if not idleish:
            return {"class": "hold", "reason": "live-session"}
        newest = tree.get("newestMtimeMs")
        current = now if now is not None else now_ms()
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
    result = git_run(repo_root, ["rev-list", "--left-right", "--count", f"{base}...{head}"])
    if result.exit_code != 0:
        return None
    behind, ahead = (int(n) for n in result.stdout.split())
    return {"ref": base, "ahead": ahead, "behind": behind}


def worktree_status(repo_root: str, record: dict[str, Any], *, forge: Forge | None,
                    memo: VerdictMemo | None, sessions: Sequence[dict[str, Any]] | None,
                    noise_paths: Sequence[str] = (), default_ref: str = DEFAULT_REF,
                    clock: Clock = now_ms) -> dict[str, Any]:
    """Everything the engine knows about one listed worktree."""
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
        **classify(integration, tree, live, clock()),
    })
    return entry


def list_worktree_statuses(repo_root: str, paths: Sequence[str] | None = None, *,
                           forge: Forge | None = None, memo: VerdictMemo | None = None,
                           sessions: Sequence[dict[str, Any]] | None = None,
                           noise_paths: Sequence[str] = (), default_ref: str = DEFAULT_REF,
                           clock: Clock = now_ms) -> list[dict[str, Any]]:
    """Statuses of the repository's linked worktrees (``paths`` filters by resolved path;
    a trailing slash matches). Deterministic for a fixed clock."""
    wanted = {real(p.rstrip("/") or "/") for p in paths} if paths is not None else None
    result = []
    for record in list_worktrees(repo_root)[1:]:
        if wanted is not None and real(record["path"]) not in wanted:
            continue
        result.append(worktree_status(repo_root, dict(record), forge=forge, memo=memo,
                                      sessions=sessions, noise_paths=noise_paths,
                                      default_ref=default_ref, clock=clock))
    return result
