"""Status (docs/worktrees.md): tree state, integration, liveness, classification, forge."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tavernlab.clock import FixedClock
from tavernlab.worktree import ForgeUnavailableError, call_tool, list_worktree_statuses
from tavernlab.worktree._errors import GitError
from tavernlab.worktree._forge import GitHubForge, VerdictMemo, parse_github_remote
from tavernlab.worktree._listing import is_within, parse_worktree_list
from tavernlab.worktree._status import (
    base_divergence,
    classify,
    integration_status,
    liveness,
    load_sessions,
    provenance,
)
from tavernlab.worktree._tree import tree_status

from .conftest import Repo
from .forges import ListForge, pull

#: A stopped clock at 2023-11-14T22:13:20.000Z (every reading is the same instant).
CLOCK = FixedClock(datetime.fromtimestamp(1_700_000_000, UTC), step=timedelta(0))
HOUR = 3_600_000


def worktree(repo: Repo, slug: str) -> Path:
    return Path(call_tool("worktree.provision", {"repoRoot": repo.root, "slug": slug})["cwd"])


def commit_in(repo: Repo, cwd: Path, rel: str, content: str, message: str) -> str:
    (cwd / rel).parent.mkdir(parents=True, exist_ok=True)
    (cwd / rel).write_text(content)
    repo.git("-C", str(cwd), "add", "-A")
    repo.git("-C", str(cwd), "commit", "-q", "-m", message)
    return repo.git("-C", str(cwd), "rev-parse", "HEAD").strip()


def test_tree_states(repo: Repo) -> None:
    assert tree_status(repo.root) == {"state": "clean"}
    (repo.path / "README.md").write_text("edited\n")
    repo.write("staged.txt", "s")
    repo.git("add", "staged.txt")
    repo.write("untracked.txt", "u")
    (repo.path / "node_modules" / "x").mkdir(parents=True)
    state = tree_status(repo.root)
    assert {k: state[k] for k in ("state", "modified", "staged", "untracked")} == {
        "state": "dirty", "modified": 1, "staged": 1, "untracked": 1}
    assert isinstance(state["newestMtimeMs"], float)


def test_ignored_directories_read_clean(repo: Repo) -> None:
    (repo.path / "node_modules" / "pkg").mkdir(parents=True)
    (repo.path / "node_modules" / "pkg" / "a.js").write_text("x")
    assert tree_status(repo.root) == {"state": "clean"}


def test_missing_path_raises_git_status_message(repo: Repo) -> None:
    missing = str(repo.path.parent / "missing")
    with pytest.raises(GitError, match=rf"^git status --porcelain=v2 failed in {missing} "
                                       r"\(exit \d+\): "):
        tree_status(missing, repo_root=repo.root)


def test_noise_and_plans(repo: Repo) -> None:
    repo.write(".opencode/package-lock.json", "{}")
    assert tree_status(repo.root, [".opencode/package-lock.json"]) == {
        "state": "clean", "noise": [".opencode/package-lock.json"]}
    repo.write(".plans/today.md", "plan")
    state = tree_status(repo.root, [".opencode/package-lock.json"])
    assert state["untracked"] == 1 and state["onlyUnder"] == ".plans/"


def test_classification_matrix() -> None:
    now = 10 * HOUR
    clean = {"state": "clean"}
    old = {"state": "dirty", "modified": 1, "staged": 0, "untracked": 0,
           "newestMtimeMs": now - HOUR}
    recent = {**old, "newestMtimeMs": now - 60_000}
    idle = {"state": "idle"}
    down = {"state": "daemon-unreachable"}
    live = {"state": "sessions"}
    merged, fresh, opened = {"state": "merged"}, {"state": "fresh"}, {"state": "open"}

    def cls(integration: dict[str, Any], tree: dict[str, Any], live_: dict[str, Any]) -> str:
        return str(classify(integration, tree, live_, now)["class"])

    assert cls(merged, clean, idle) == "reclaim"
    assert cls(merged, clean, down) == "reclaim"
    assert cls(merged, clean, live) == "hold"
    assert cls(merged, old, idle) == "salvage"
    assert cls(merged, old, live) == "hold"
    assert cls(merged, old, down) == "salvage"
    assert cls(merged, recent, idle) == "hold"
    assert cls(opened, clean, idle) == "hold"
    assert cls(fresh, clean, idle) == "reclaim"
    assert cls(fresh, clean, live) == "hold"
    assert cls(fresh, old, idle) == "hold"
    for state in ("partial", "diverged", "unknown", "local-only", "pushed-no-pr", "unpushed",
                  "gone-unexplained", "detached"):
        assert cls({"state": state}, clean, idle) == "hold"


def test_base_divergence(repo: Repo) -> None:
    cwd = worktree(repo, "diverge")
    commit_in(repo, cwd, "a.txt", "a", "a")
    head = commit_in(repo, cwd, "b.txt", "b", "b")
    repo.commit({"main-only.txt": "m"})
    assert base_divergence(repo.root, head) == {"ref": "origin/main", "ahead": 2, "behind": 1}
    assert base_divergence(repo.root, "") is None
    assert base_divergence(repo.root, head, "origin/nope") is None


def test_paths_select_one_worktree_with_one_forge_lookup(repo: Repo) -> None:
    first, second = worktree(repo, "first"), worktree(repo, "second")
    commit_in(repo, first, "f.txt", "f", "f")
    commit_in(repo, second, "s.txt", "s", "s")
    forge = ListForge()
    statuses = list_worktree_statuses(repo.root, [str(first) + "/"], forge=forge, sessions=[],
                                      clock=CLOCK)
    assert [s["path"] for s in statuses] == [str(first)]
    assert forge.branch_calls == ["wt/first"]


def test_statuses_include_the_main_checkout_first(repo: Repo) -> None:
    cwd = worktree(repo, "beside-main")
    statuses = list_worktree_statuses(repo.root, sessions=[], clock=CLOCK)
    assert [(s["path"], s["branch"]) for s in statuses] == [(repo.root, "main"),
                                                            (str(cwd), "wt/beside-main")]
    assert statuses[0]["integration"] == {"state": "fresh",
                                          "checkedAt": "2023-11-14T22:13:20.000Z"}
    assert statuses[0]["provenance"]["confidence"] == "best-effort"


def test_prunable_is_carried_through(repo: Repo) -> None:
    cwd = worktree(repo, "prune-me")
    import shutil

    shutil.rmtree(cwd)
    statuses = list_worktree_statuses(repo.root, sessions=[], clock=CLOCK)
    assert statuses[1]["prunable"].startswith("gitdir file points to non-existent location")
    assert "tree" not in statuses[1]


def test_statuses_are_deterministic(repo: Repo) -> None:
    worktree(repo, "det-a")
    worktree(repo, "det-b")
    one = json.dumps(list_worktree_statuses(repo.root, sessions=[], clock=CLOCK))
    two = json.dumps(list_worktree_statuses(repo.root, sessions=[], clock=CLOCK))
    assert one == two


def test_containment() -> None:
    assert is_within("/a/b", "/a/b")
    assert is_within("/a/b/sub", "/a/b")
    assert not is_within("/a/b-other", "/a/b")


def test_worktree_list_parsing() -> None:
    text = ("worktree /code/app\nHEAD abc\nbranch refs/heads/main\n\n"
            "worktree /code/_worktrees/x\nHEAD def\ndetached\nprunable gitdir gone\n\n"
            "worktree /code/_worktrees/y\nHEAD 123\nbranch refs/heads/wt/y\nlocked\n")
    records = parse_worktree_list(text)
    assert records[0] == {"path": "/code/app", "head": "abc", "branch": "main"}
    assert records[1]["branch"] is None and records[1]["prunable"] == "gitdir gone"
    assert records[2]["branch"] == "wt/y" and records[2]["locked"] == ""


# -- integration --------------------------------------------------------------------------


def integration(repo: Repo, branch: str | None, tip: str, forge: Any,
                memo: VerdictMemo | None = None) -> dict[str, Any]:
    return integration_status(repo.root, "app", branch, tip, forge, memo, clock=CLOCK)


def test_integration_states(repo: Repo) -> None:
    cwd = worktree(repo, "feat")
    main_tip = repo.git("rev-parse", "HEAD").strip()
    assert integration(repo, None, main_tip, None) == {"state": "detached",
                                                       "checkedAt": "2023-11-14T22:13:20.000Z"}
    forge = ListForge()
    assert integration(repo, "wt/feat", main_tip, forge)["state"] == "fresh"
    assert forge.branch_calls == []
    tip = commit_in(repo, cwd, "f.txt", "f", "feat")
    assert integration(repo, "wt/feat", tip, forge) == {
        "state": "unpushed", "aheadBy": 1, "checkedAt": "2023-11-14T22:13:20.000Z"}
    repo.git("-C", str(cwd), "push", "-q", "origin", "wt/feat")
    repo.git("-C", str(cwd), "branch", "-q", "--set-upstream-to", "origin/wt/feat")
    assert integration(repo, "wt/feat", tip, forge)["state"] == "pushed-no-pr"
    repo.git("push", "-q", "origin", "--delete", "wt/feat")
    repo.git("fetch", "-q", "--prune", "origin")
    assert integration(repo, "wt/feat", tip, forge)["state"] == "gone-unexplained"
    repo.git("-C", str(cwd), "branch", "-q", "--unset-upstream")
    assert integration(repo, "wt/feat", tip, forge)["state"] == "local-only"


def test_forge_verdicts_and_memo(repo: Repo) -> None:
    cwd = worktree(repo, "pr")
    first = commit_in(repo, cwd, "a.txt", "a", "a")
    tip = commit_in(repo, cwd, "b.txt", "b", "b")
    memo = VerdictMemo()
    merged = integration(repo, "wt/pr", tip, ListForge([pull(7, "wt/pr", tip)]), memo)
    assert merged == {"state": "merged", "via": "squash", "pr": 7, "offline": False,
                      "checkedAt": "2023-11-14T22:13:20.000Z"}
    partial = integration(repo, "wt/pr", tip, ListForge([pull(271, "wt/pr", first)]))
    assert (partial["state"], partial["pr"], partial["aheadBy"]) == ("partial", 271, 1)
    opened = integration(repo, "wt/pr", tip, ListForge([
        pull(9, "wt/pr", tip, state="open", merged_at=None),
        pull(8, "wt/pr", tip, state="open", merged_at=None)]))
    assert (opened["state"], opened["pr"]) == ("open", 8)
    other = repo.git("rev-parse", "HEAD").strip()
    side = repo.git("commit-tree", "-p", other, "-m", "side", f"{other}^{{tree}}").strip()
    diverged = integration(repo, "wt/pr", tip, ListForge([pull(5, "wt/pr", side)]))
    assert diverged == {"state": "diverged", "offline": False,
                        "checkedAt": "2023-11-14T22:13:20.000Z"}  # no "pr", as upstream
    offline = integration(repo, "wt/pr", tip, ListForge(down=True), VerdictMemo())
    assert {k: offline[k] for k in ("state", "pr", "offline")} == {
        "state": "merged", "pr": 7, "offline": True}
    stored = json.loads((Path(os.environ["HOME"]) / ".agentproto/worktree-verdicts.json")
                        .read_text())
    assert stored == {"entries": [{
        "repo": "app", "branch": "wt/pr", "tipSha": tip,
        "verdict": {"state": "merged", "via": "squash", "pr": 7, "offline": False,
                    "checkedAt": "2023-11-14T22:13:20.000Z"},
        "checkedAt": "2023-11-14T22:13:20.000Z"}]}


def test_memo_reads_upstream_and_legacy_entries(repo: Repo) -> None:
    cwd = worktree(repo, "memo")
    tip = commit_in(repo, cwd, "m.txt", "m", "m")
    memo_file = Path(os.environ["HOME"]) / ".agentproto" / "worktree-verdicts.json"
    memo_file.parent.mkdir(parents=True)
    upstream = {"repo": "app", "branch": "wt/memo", "tipSha": tip, "checkedAt": "t0",
                "verdict": {"state": "open", "pr": 4, "offline": False, "checkedAt": "t0"}}
    legacy = {"repo": "app", "branch": "wt/old", "tip": tip,
              "verdict": {"state": "partial", "pr": 3, "aheadBy": 2, "offline": False}}
    memo_file.write_text(json.dumps({"entries": [upstream, legacy]}))
    down = ListForge(down=True)
    assert integration(repo, "wt/memo", tip, down, VerdictMemo()) == {
        "state": "open", "pr": 4, "offline": True, "checkedAt": "2023-11-14T22:13:20.000Z"}
    assert integration(repo, "wt/old", tip, down, VerdictMemo()) == {
        "state": "partial", "pr": 3, "aheadBy": 2, "offline": True,
        "checkedAt": "2023-11-14T22:13:20.000Z"}
    memo = VerdictMemo(clock=CLOCK)
    memo.put("app", "wt/new", tip, {"state": "merged", "via": "squash", "pr": 9,
                                    "offline": False, "checkedAt": "t1"})
    entries = json.loads(memo_file.read_text())["entries"]
    assert [sorted(entry) for entry in entries] == [
        ["branch", "checkedAt", "repo", "tipSha", "verdict"]] * 3
    assert entries[1] == {"repo": "app", "branch": "wt/old", "tipSha": tip,
                          "checkedAt": "2023-11-14T22:13:20.000Z",
                          "verdict": {**legacy["verdict"],
                                      "checkedAt": "2023-11-14T22:13:20.000Z"}}


def test_offline_without_memo_and_corrupt_memo(repo: Repo) -> None:
    cwd = worktree(repo, "offline")
    tip = commit_in(repo, cwd, "a.txt", "a", "a")
    memo_file = Path(os.environ["HOME"]) / ".agentproto" / "worktree-verdicts.json"
    memo_file.parent.mkdir(parents=True)
    memo_file.write_text("{corrupt")
    assert integration(repo, "wt/offline", tip, ListForge(down=True), VerdictMemo()) == {
        "state": "unknown", "reason": "offline", "checkedAt": "2023-11-14T22:13:20.000Z"}


def test_unknown_pr_head_takes_offline_path(repo: Repo) -> None:
    cwd = worktree(repo, "ghost")
    tip = commit_in(repo, cwd, "a.txt", "a", "a")
    forge = ListForge([pull(3, "wt/ghost", "f" * 40)])
    assert integration(repo, "wt/ghost", tip, forge)["state"] == "unknown"


# -- liveness and provenance -----------------------------------------------------------------


def write_sessions(path: Path, rows: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows))


def row(session_id: str, status: str, cwd: str = "/w", **extra: Any) -> dict[str, Any]:
    return {"id": session_id, "cwd": cwd, "status": status,
            "startedAt": "2024-01-01T00:00:00Z", **extra}


def test_session_registry_merging() -> None:
    home = Path(os.environ["HOME"]) / ".agentproto"
    assert load_sessions() == []
    write_sessions(home / "sessions.json", [row("a", "idle"), row("b", "idle")])
    write_sessions(home / "workspaces/one/sessions.json",
                   {"sessions": [row("a", "running")]})
    (home / "workspaces/two").mkdir(parents=True)
    (home / "workspaces/two/sessions.json").write_text("{corrupt")
    sessions = load_sessions()
    assert sessions is not None
    assert sorted((s["id"], s["status"]) for s in sessions) == [("a", "running"),
                                                                ("b", "idle")]
    only = load_sessions(home / "workspaces/one/sessions.json")
    assert only == [row("a", "running")]
    (home / "sessions.json").write_text("nope")
    (home / "workspaces/one/sessions.json").write_text("nope")
    assert load_sessions() is None


def test_malformed_registry_rows_are_dropped() -> None:
    path = Path(os.environ["HOME"]) / "sessions.json"
    write_sessions(path, {"sessions": [
        row("good", "running", auth={"mode": "subscription"}, costUsd=1, extra="x"),
        {"id": "no-start", "cwd": "/w", "status": "running"},
        {"id": 7, "cwd": "/w", "status": "running", "startedAt": "2024-01-01T00:00:00Z"},
        row("bad-cwd", "running", cwd=None) | {"cwd": 5},
        row("bad-cost", "running", costUsd="lots"),
        "not a row"]})
    assert load_sessions(path) == [
        {"id": "good", "startedAt": "2024-01-01T00:00:00Z", "status": "running", "cwd": "/w",
         "authMode": "subscription", "costUsd": 1}]


def test_liveness_states() -> None:
    sessions = [row("s1", "running", "/wt/app/packages/x"),
                row("s2", "starting", "/wt/app-other"),
                row("s3", "exited", "/wt/app")]
    assert liveness("/wt/app", sessions) == {"state": "sessions", "sessions": [
        {"id": "s1", "startedAt": "2024-01-01T00:00:00Z", "status": "running",
         "cwd": "/wt/app/packages/x"}], "services": []}
    assert liveness("/wt/elsewhere", sessions)["state"] == "idle"
    assert liveness("/wt/app", None)["state"] == "daemon-unreachable"


def test_provenance() -> None:
    sessions = [
        {"id": "late", "cwd": "/wt", "status": "exited", "startedAt": "2024-02-02T00:00:00Z",
         "model": "m", "costUsd": 0.5, "tokensIn": 1, "tokensOut": 2, "auth": {"mode": "key"},
         "adapterSlug": "claude-code", "extra": "dropped"},
        {"id": "early", "cwd": "/wt", "status": "exited", "startedAt": "2024-01-01T00:00:00Z"},
        {"id": 3, "cwd": "/wt"},
    ]
    exact = provenance("/wt", sessions, "2024-01-15T00:00:00.000Z")
    assert exact == {"confidence": "exact", "sessions": [{
        "id": "late", "startedAt": "2024-02-02T00:00:00Z", "status": "exited", "cwd": "/wt",
        "adapterSlug": "claude-code", "model": "m", "authMode": "key", "costUsd": 0.5,
        "tokensIn": 1, "tokensOut": 2}]}
    best = provenance("/wt", sessions, None)
    assert best["confidence"] == "best-effort"
    assert [s["id"] for s in best["sessions"]] == ["early", "late"]


# -- forge client -------------------------------------------------------------------------------


class FakeGitHub(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if "/commits/" in self.path and "missing" in self.path:
            self.send_error(422)
            return
        if "/commits/" in self.path and "broken" in self.path:
            self.send_error(500)
            return
        body = json.dumps([{"number": 4, "state": "closed", "merged_at": "2024-01-01T00:00:00Z",
                            "head": {"ref": "wt/x", "sha": "abc"}, "title": "t"}]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def github() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeGitHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_github_client(github: str) -> None:
    forge = GitHubForge("o", "r", token="t", api_url=github)
    expected = [{"number": 4, "state": "closed", "merged": True,
                 "mergedAt": "2024-01-01T00:00:00Z", "headRefName": "wt/x", "headRefOid": "abc"}]
    assert forge.pulls_for_branch("wt/x") == expected
    assert forge.pulls_for_commit("abc") == expected
    assert forge.pulls_for_commit("missing") == []
    with pytest.raises(ForgeUnavailableError, match="HTTP 500"):
        forge.pulls_for_commit("broken")


def test_unreachable_github_raises() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    forge = GitHubForge("o", "r", api_url=f"http://127.0.0.1:{port}", timeout=5)
    with pytest.raises(ForgeUnavailableError, match=r"GitHub API .* failed: "):
        forge.pulls_for_branch("x")


def test_parse_github_remote() -> None:
    assert parse_github_remote("git@github.com:o/r.git") == ("o", "r")
    assert parse_github_remote("https://github.com/o/r") == ("o", "r")
    assert parse_github_remote("https://github.com/o/r.git") == ("o", "r")
    assert parse_github_remote("https://gitlab.com/o/r.git") is None
    assert parse_github_remote("/srv/git/r.git") is None
