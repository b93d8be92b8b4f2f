"""How far a branch's work has made it into the default ref (docs/worktrees.md).

Local ancestry first (``fresh``, no forge needed), then the forge's pull requests by branch
and by commit (``merged``, ``partial``, ``open``, ``diverged``; memoized), then upstream
tracking (``local-only``, ``gone-unexplained``, ``unpushed``, ``pushed-no-pr``). A forge that
cannot be asked, or git failing while comparing with pull-request heads, takes the offline
path: a memoized verdict marked ``offline: true``, else ``unknown``/``offline``. Every state
carries ``checkedAt`` from the given clock.
"""

from __future__ import annotations

from typing import Any

from tavernlab.clock import SYSTEM_CLOCK, Clock, rfc3339_millis
from tavernlab.worktree._errors import ForgeUnavailableError, GitError
from tavernlab.worktree._forge import Forge, PullRequest, VerdictMemo
from tavernlab.worktree._git import DEFAULT_REF, END_OF_OPTIONS, git, git_run

_FORGE_STATES = frozenset({"merged", "partial", "open", "diverged"})


def is_ancestor(repo_root: str, older: str, newer: str) -> bool:
    """``merge-base --is-ancestor``; exit 1 is "no", anything else raises GitError."""
    args = ["merge-base", "--is-ancestor", END_OF_OPTIONS, older, newer]
    result = git_run(repo_root, args)
    if result.exit_code in (0, 1):
        return result.exit_code == 0
    raise GitError(f"git merge-base --is-ancestor {older} {newer} failed "
                   f"(exit {result.exit_code}): {result.stderr.strip()}",
                   args=args, exit_code=result.exit_code, stderr=result.stderr,
                   stdout=result.stdout)


def _tracking(repo_root: str, branch: str) -> dict[str, Any]:
    out = git(repo_root, ["for-each-ref", "--format=%(upstream)|%(upstream:track)",
                          END_OF_OPTIONS, f"refs/heads/{branch}"]).strip()
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
        pulls[pull["number"]] = pull
    merged = sorted((p for p in pulls.values() if p["merged"]),
                    key=lambda p: p["mergedAt"] or "", reverse=True)
    for pull in merged:
        head = pull["headRefOid"]
        if is_ancestor(repo_root, tip, head):
            return {"state": "merged", "via": "squash", "pr": pull["number"], "offline": False}
        if is_ancestor(repo_root, head, tip):
            ahead = int(git(repo_root, ["rev-list", "--count", END_OF_OPTIONS,
                                        f"{head}..{tip}"]).strip())
            return {"state": "partial", "pr": pull["number"], "aheadBy": ahead,
                    "offline": False}
    open_pulls = sorted(p["number"] for p in pulls.values() if p["state"] == "open")
    if open_pulls:
        return {"state": "open", "pr": open_pulls[0], "offline": False}
    if merged:  # a merged PR that neither contains the tip nor is contained by it
        return {"state": "diverged", "offline": False}
    return None


def integration_status(repo_root: str, repo: str, branch: str | None, tip: str,
                       forge: Forge | None, memo: VerdictMemo | None,
                       default_ref: str = DEFAULT_REF,
                       clock: Clock = SYSTEM_CLOCK) -> dict[str, Any]:
    """The integration state of ``branch`` at ``tip`` (see the module docstring).

    ``forge=None`` means "no forge for this repository": the forge step finds no pull
    requests and tracking decides (tavernlab's choice).
    """
    checked = {"checkedAt": rfc3339_millis(clock.now())}
    if not branch:
        return {"state": "detached", **checked}
    try:
        if is_ancestor(repo_root, tip, default_ref):
            return {"state": "fresh", **checked}
    except GitError:
        pass
    try:
        verdict = _forge_verdict(repo_root, branch, tip, forge) if forge is not None else None
        if verdict is not None:
            verdict.update(checked)
            if memo is not None:
                memo.put(repo, branch, tip, verdict)
            return verdict
        return {**_tracking(repo_root, branch), **checked}
    except (ForgeUnavailableError, GitError):
        cached = memo.get(repo, branch, tip) if memo is not None else None
        if cached is not None:
            if cached.get("state") in _FORGE_STATES:
                cached["offline"] = True
            return {**cached, **checked}
        return {"state": "unknown", "reason": "offline", **checked}
