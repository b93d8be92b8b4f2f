"""The code forge behind a repository (docs/worktrees.md): GitHub pull requests by branch and
by commit, plus the memo of forge verdicts (``~/.agentproto/worktree-verdicts.json``).

The status engine only needs two questions answered: which pull requests came from this
branch, and which contain this commit. :class:`Forge` is that protocol; :class:`GitHubForge`
answers it over the REST API (``GITHUB_TOKEN``). Any failure raises
:class:`ForgeUnavailableError` and the engine falls back to its offline path.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Protocol, TypedDict

from tavernlab.clock import SYSTEM_CLOCK, Clock, rfc3339_millis
from tavernlab.worktree._errors import ForgeUnavailableError
from tavernlab.worktree._git import END_OF_OPTIONS, git_run


class PullRequest(TypedDict):
    """A normalized pull request: ``{number, state, merged, mergedAt, headRefName, headRefOid}``."""

    number: int
    state: str
    merged: bool
    mergedAt: str | None
    headRefName: str
    headRefOid: str


class Forge(Protocol):
    """What the status engine asks a forge."""

    def pulls_for_branch(self, branch: str) -> list[PullRequest]:
        """Pull requests whose head is ``branch`` (any state)."""
        ...

    def pulls_for_commit(self, sha: str) -> list[PullRequest]:
        """Pull requests that contain commit ``sha``."""
        ...


def parse_github_remote(url: str) -> tuple[str, str] | None:
    """``git@github.com:o/r.git`` or ``https://github.com/o/r(.git)`` → ``(o, r)``; else None."""
    match = re.match(r"^(?:git@github\.com:|https://github\.com/)([^/]+)/([^/]+?)(?:\.git)?/?$",
                     url.strip())
    return (match.group(1), match.group(2)) if match else None


def normalize_pull(raw: dict[str, Any]) -> PullRequest:
    """GitHub's ``{number, state, merged_at, head: {ref, sha}}`` → :class:`PullRequest`."""
    head = raw.get("head") or {}
    return {
        "number": int(raw["number"]),
        "state": str(raw.get("state", "")),
        "merged": raw.get("merged_at") is not None,
        "mergedAt": raw.get("merged_at"),
        "headRefName": str(head.get("ref", "")),
        "headRefOid": str(head.get("sha", "")),
    }


class GitHubForge:
    """GitHub's REST API for one repository; ``api_url`` can point at any compatible server."""

    def __init__(self, owner: str, repo: str, token: str | None = None,
                 api_url: str = "https://api.github.com", timeout: float = 10.0) -> None:
        self.owner, self.repo = owner, repo
        self.token = token if token is not None else os.environ.get("GITHUB_TOKEN")
        self.api_url = api_url.rstrip("/")
        self.timeout = timeout

    def _get(self, path: str, missing_ok: bool = False) -> list[dict[str, Any]]:
        request = urllib.request.Request(f"{self.api_url}{path}", headers={
            "Accept": "application/vnd.github+json", "User-Agent": "tavernlab-worktree"})
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                data = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            if missing_ok and exc.code in (404, 422):
                return []
            raise ForgeUnavailableError(f"GitHub API {path} failed: HTTP {exc.code}") from exc
        except (OSError, ValueError) as exc:
            raise ForgeUnavailableError(f"GitHub API {path} failed: {exc}") from exc
        if not isinstance(data, list):
            raise ForgeUnavailableError(f"GitHub API {path} returned an unexpected body")
        return data

    def pulls_for_branch(self, branch: str) -> list[PullRequest]:
        """``GET /repos/{o}/{r}/pulls?head=o:branch&state=all``."""
        query = urllib.parse.urlencode({"head": f"{self.owner}:{branch}", "state": "all"})
        return [normalize_pull(raw)
                for raw in self._get(f"/repos/{self.owner}/{self.repo}/pulls?{query}")]

    def pulls_for_commit(self, sha: str) -> list[PullRequest]:
        """``GET /repos/{o}/{r}/commits/{sha}/pulls``; 404/422 mean none."""
        path = f"/repos/{self.owner}/{self.repo}/commits/{sha}/pulls"
        return [normalize_pull(raw) for raw in self._get(path, missing_ok=True)]


class UnreachableForge:
    """A forge that can never be asked (always raises :class:`ForgeUnavailableError`)."""

    def pulls_for_branch(self, branch: str) -> list[PullRequest]:
        """Always raises."""
        raise ForgeUnavailableError("forge unreachable")

    def pulls_for_commit(self, sha: str) -> list[PullRequest]:
        """Always raises."""
        raise ForgeUnavailableError("forge unreachable")


def forge_for_repo(repo_root: str, remote: str = "origin") -> Forge | None:
    """A :class:`GitHubForge` for ``remote`` when it is a GitHub URL, else ``None``."""
    result = git_run(repo_root, ["remote", "get-url", END_OF_OPTIONS, remote])
    parsed = parse_github_remote(result.stdout) if result.exit_code == 0 else None
    return GitHubForge(*parsed) if parsed else None


class VerdictMemo:
    """Forge verdicts keyed by (repo, branch, tip), persisted as ``{entries: [...]}``.

    Entries have upstream's shape ``{repo, branch, tipSha, verdict, checkedAt}`` (the verdict
    carries its own ``checkedAt`` too), so upstream and tavernlab share one file. Entries
    that earlier tavernlab versions wrote as ``{repo, branch, tip, verdict}`` are read as
    well and rewritten in upstream's shape on the next save, stamped with the time of that
    rewrite (their check time was never recorded). A corrupt or missing file is an empty
    memo; saving is best effort.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.path = Path(path) if path is not None else \
            Path.home() / ".agentproto" / "worktree-verdicts.json"
        self.clock = clock
        self._entries: list[dict[str, Any]] = []
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        entries = data.get("entries") if isinstance(data, dict) else None
        if isinstance(entries, list):
            self._entries = [entry for raw in entries if (entry := self._read(raw)) is not None]

    def _read(self, raw: Any) -> dict[str, Any] | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("verdict"), dict):
            return None
        tip = raw.get("tipSha", raw.get("tip"))
        if not all(isinstance(v, str) for v in (raw.get("repo"), raw.get("branch"), tip)):
            return None
        verdict = dict(raw["verdict"])
        checked = raw.get("checkedAt")
        if not isinstance(checked, str):
            checked = verdict.get("checkedAt")
        if not isinstance(checked, str):
            checked = rfc3339_millis(self.clock.now())
        verdict.setdefault("checkedAt", checked)
        return {"repo": raw["repo"], "branch": raw["branch"], "tipSha": tip,
                "verdict": verdict, "checkedAt": checked}

    def get(self, repo: str, branch: str, tip: str) -> dict[str, Any] | None:
        """The remembered verdict, or ``None``."""
        for entry in self._entries:
            if (entry["repo"], entry["branch"], entry["tipSha"]) == (repo, branch, tip):
                return dict(entry["verdict"])
        return None

    def put(self, repo: str, branch: str, tip: str, verdict: dict[str, Any]) -> None:
        """Remember a verdict (it carries its ``checkedAt``) and save the file."""
        checked = verdict.get("checkedAt")
        if not isinstance(checked, str):
            checked = rfc3339_millis(self.clock.now())
        self._entries = [e for e in self._entries
                         if (e["repo"], e["branch"], e["tipSha"]) != (repo, branch, tip)]
        self._entries.append({"repo": repo, "branch": branch, "tipSha": tip,
                              "verdict": {**verdict, "checkedAt": checked},
                              "checkedAt": checked})
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({"entries": self._entries}, indent=2) + "\n",
                                 encoding="utf-8")
