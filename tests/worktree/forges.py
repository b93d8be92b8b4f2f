"""A forge that answers from a fixed list of pull requests (GitHub cannot run here).

It implements the same two-question protocol as :class:`GitHubForge` and counts calls, so
tests can pin how often the status engine asks.
"""

from __future__ import annotations

from tavernlab.worktree._errors import ForgeUnavailableError
from tavernlab.worktree._forge import PullRequest


class ListForge:
    def __init__(self, pulls: list[PullRequest] | None = None, *, down: bool = False) -> None:
        self.pulls = pulls or []
        self.down = down
        self.branch_calls: list[str] = []
        self.commit_calls: list[str] = []

    def pulls_for_branch(self, branch: str) -> list[PullRequest]:
        self.branch_calls.append(branch)
        if self.down:
            raise ForgeUnavailableError("forge down")
        return [p for p in self.pulls if p["headRefName"] == branch]

    def pulls_for_commit(self, sha: str) -> list[PullRequest]:
        self.commit_calls.append(sha)
        if self.down:
            raise ForgeUnavailableError("forge down")
        return [p for p in self.pulls if p["headRefOid"] == sha]


def pull(number: int, branch: str, sha: str, *, state: str = "closed",
         merged_at: str | None = "2024-01-01T00:00:00Z") -> PullRequest:
    return {"number": number, "state": state, "merged": merged_at is not None,
            "mergedAt": merged_at, "headRefName": branch, "headRefOid": sha}
