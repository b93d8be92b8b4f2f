"""Garbage collection (docs/worktrees.md): GC plans and their application."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from tavernlab.worktree import apply_gc, call_tool, plan_gc
from tavernlab.worktree._cleanup import fast_remover
from tavernlab.worktree._gc import GcOptions, reclaim_one_worktree

from .conftest import Repo
from .forges import ListForge, pull


class RecordingRemover:
    """Fast removal that also records the ``force`` flag of every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []

    def __call__(self, repo_root: str, path: str, force: bool) -> None:
        self.calls.append((path, force))
        fast_remover(repo_root, path, force)


def options(**overrides: Any) -> GcOptions:
    return GcOptions(**{"forge": ListForge(), "sessions": [], **overrides})


def worktree(repo: Repo, slug: str, **fields: Any) -> Path:
    return Path(call_tool("worktree.provision", {"repoRoot": repo.root, "slug": slug,
                                                 **fields})["cwd"])


def commit_in(repo: Repo, cwd: Path, files: dict[str, str], message: str) -> str:
    for rel, content in files.items():
        (cwd / rel).parent.mkdir(parents=True, exist_ok=True)
        (cwd / rel).write_text(content)
    repo.git("-C", str(cwd), "add", "-A")
    repo.git("-C", str(cwd), "commit", "-q", "-m", message)
    return repo.git("-C", str(cwd), "rev-parse", "HEAD").strip()


def backdate(path: Path, seconds: int = 3600) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past))


def only(plan: list[dict[str, Any]], path: Path) -> dict[str, Any]:
    return next(entry for entry in plan if entry["path"] == str(path))


def test_detached_worktrees(repo: Repo) -> None:
    cwd = worktree(repo, "detached")
    repo.git("-C", str(cwd), "checkout", "-q", "--detach")
    assert only(plan_gc(repo.root, options()), cwd)["class"] == "hold"
    entry = only(plan_gc(repo.root, options(include_detached=True)), cwd)
    assert (entry["class"], entry["reclaimReason"]) == ("reclaim", "detached")
    (cwd / "dirt.txt").write_text("x")
    assert only(plan_gc(repo.root, options(include_detached=True)), cwd)["class"] == "hold"


def test_partial_pr_is_held(repo: Repo) -> None:
    cwd = worktree(repo, "partial")
    head = commit_in(repo, cwd, {"a.txt": "a"}, "feat: a")
    tip = commit_in(repo, cwd, {"b.txt": "b"}, "feat: b")
    forge = ListForge([pull(271, "wt/partial", head)])
    remover = RecordingRemover()
    plan = plan_gc(repo.root, options(forge=forge, remover=remover))
    entry = only(plan, cwd)
    assert entry["integration"]["state"] == "partial"
    assert (entry["integration"]["pr"], entry["integration"]["aheadBy"]) == (271, 1)
    assert entry["class"] == "hold"
    for salvage_dirty in (False, True):
        records = apply_gc(repo.root, plan, options(forge=forge, remover=remover,
                                                    salvage_dirty=salvage_dirty))
        assert records == [{"path": str(cwd), "branch": "wt/partial", "result": "held"}]
    assert remover.calls == []
    assert repo.git("-C", str(cwd), "rev-parse", "HEAD").strip() == tip


def test_fresh_with_uncommitted_file_is_held(repo: Repo) -> None:
    cwd = worktree(repo, "fresh-incident")
    (cwd / "notes.txt").write_text("investigating")
    forge = ListForge()
    plan = plan_gc(repo.root, options(forge=forge))
    entry = only(plan, cwd)
    assert (entry["integration"]["state"], entry["class"]) == ("fresh", "hold")
    assert forge.branch_calls == [] and forge.commit_calls == []
    assert apply_gc(repo.root, plan, options(forge=forge))[0]["result"] == "held"
    assert (cwd / "notes.txt").read_text() == "investigating"


def test_ff_merged_branch_is_reclaimed_without_force(repo: Repo) -> None:
    cwd = worktree(repo, "ff")
    tip = commit_in(repo, cwd, {"ff.txt": "ff"}, "feat: ff")
    repo.git("push", "-q", "origin", f"{tip}:main")
    repo.git("fetch", "-q", "origin")
    ignored = worktree(repo, "ignored-only")
    (ignored / "node_modules" / "pkg").mkdir(parents=True)
    remover = RecordingRemover()
    opts = options(remover=remover)
    plan = plan_gc(repo.root, opts)
    assert only(plan, cwd)["class"] == "reclaim"
    assert only(plan, ignored)["tree"] == {"state": "clean"}
    records = apply_gc(repo.root, plan, opts)
    assert [r["result"] for r in records] == ["reclaimed", "reclaimed"]
    assert remover.calls and all(force is False for _, force in remover.calls)
    assert repo.branches("wt/ff") == "" and repo.branches("wt/ignored-only") == ""
    assert not cwd.exists() and not ignored.exists()


def test_squash_merged_dirty_worktree_salvage(repo: Repo, tmp_path: Path) -> None:
    cwd = worktree(repo, "squashy")
    tip = commit_in(repo, cwd, {"feature.txt": "feature"}, "feat: squashy")
    repo.commit({"feature.txt": "feature"}, "feat: squashy (#12)")
    (cwd / "README.md").write_text("edited\n")
    (cwd / "scratch.txt").write_text("scratch")
    backdate(cwd / "README.md")
    backdate(cwd / "scratch.txt")
    forge = ListForge([pull(12, "wt/squashy", tip)])
    salvage_root = tmp_path / "salvage"
    opts = options(forge=forge, salvage_root=str(salvage_root))
    plan = plan_gc(repo.root, opts)
    entry = only(plan, cwd)
    assert entry["integration"]["state"] == "merged" and entry["class"] == "salvage"
    assert apply_gc(repo.root, plan, opts)[0]["result"] == "skipped-dirty"
    assert (cwd / "scratch.txt").exists()
    records = apply_gc(repo.root, plan, replace(opts, salvage_dirty=True))
    assert records[0]["result"] == "salvaged"
    salvage = Path(records[0]["salvageDir"])
    manifest = json.loads((salvage / "MANIFEST.json").read_text())
    assert manifest["hasPatch"] is True and manifest["untrackedFiles"] == ["scratch.txt"]
    assert "edited" in (salvage / "changes.patch").read_text()
    assert (salvage / "untracked" / "scratch.txt").read_text() == "scratch"
    assert not cwd.exists() and repo.branches("wt/squashy") == ""


def test_recent_write_holds_merged_dirty(repo: Repo) -> None:
    cwd = worktree(repo, "busy")
    tip = commit_in(repo, cwd, {"b.txt": "b"}, "feat: busy")
    (cwd / "scratch.txt").write_text("just now")
    forge = ListForge([pull(13, "wt/busy", tip)])
    plan = plan_gc(repo.root, options(forge=forge))
    assert only(plan, cwd)["class"] == "hold"
    records = apply_gc(repo.root, plan, options(forge=forge, salvage_dirty=True))
    assert records[0]["result"] == "held"


def test_offline_forge_without_memo_holds(repo: Repo) -> None:
    cwd = worktree(repo, "offline")
    commit_in(repo, cwd, {"o.txt": "o"}, "feat: o")
    forge = ListForge(down=True)
    plan = plan_gc(repo.root, options(forge=forge))
    entry = only(plan, cwd)
    assert entry["integration"]["state"] == "unknown"
    assert entry["integration"]["reason"] == "offline"
    assert entry["class"] == "hold"
    assert apply_gc(repo.root, plan, options(forge=forge, salvage_dirty=True))[0]["result"] \
        == "held"


def test_branch_switch_between_plan_and_apply(repo: Repo) -> None:
    cwd = worktree(repo, "switchy")
    opts = options()
    plan = plan_gc(repo.root, opts)
    assert only(plan, cwd)["class"] == "reclaim"
    assert all(entry["path"] != repo.root for entry in plan)
    repo.git("-C", str(cwd), "checkout", "-q", "-b", "other-work")
    commit_in(repo, cwd, {"w.txt": "w"}, "feat: work")
    records = apply_gc(repo.root, plan, opts)
    assert records[0]["result"] == "aborted-reclassified"
    assert (records[0]["from"], records[0]["to"]) == ("reclaim", "hold")
    assert cwd.exists()


def test_vanished_between_plan_and_apply(repo: Repo) -> None:
    cwd = worktree(repo, "vanish")
    plan = plan_gc(repo.root, options())
    call_tool("worktree.cleanup", {"repoRoot": repo.root, "cwd": str(cwd)})
    assert apply_gc(repo.root, plan, options())[0]["result"] == "aborted-vanished"


def dep_bump(repo: Repo, slug: str, commits: list[tuple[dict[str, str], str]]) -> Path:
    cwd = worktree(repo, slug)
    for files, message in commits:
        unique = {rel: f"{content}# {slug}\n" if rel.endswith(".yaml") else content
                  for rel, content in files.items()}
        commit_in(repo, cwd, unique, message)
    return cwd


def test_dep_bumps(repo: Repo) -> None:
    repo.commit({"package.json": "{}\n", "pnpm-lock.yaml": "v1\n"})
    bump = ({"pnpm-lock.yaml": "v2\n", "package.json": '{"x": 2}\n'}, "chore(deps): bump x")
    dev = ({"package.json": '{"x": 3}\n'}, "fix(deps-dev): bump y")
    simple = dep_bump(repo, "bump-simple", [bump])
    two = dep_bump(repo, "bump-two", [bump, dev])
    sneaky = dep_bump(repo, "bump-sneaky", [({"pnpm-lock.yaml": "v3\n", "src/sneaky.ts": "x"},
                                             "chore(deps): bump z")])
    feat = dep_bump(repo, "bump-feat", [bump, ({"src/a.ts": "a"}, "feat: a")])
    dirty = dep_bump(repo, "bump-dirty", [bump])
    (dirty / "scratch.txt").write_text("x")
    opened = dep_bump(repo, "bump-open", [bump])
    plain = dep_bump(repo, "plain-feat", [({"src/b.ts": "b"}, "feat: b")])
    open_tip = repo.git("-C", str(opened), "rev-parse", "HEAD").strip()
    forge = ListForge([pull(40, "wt/bump-open", open_tip, state="open", merged_at=None)])
    remover = RecordingRemover()
    opts = options(forge=forge, remover=remover)
    plan = plan_gc(repo.root, opts)
    entry = only(plan, simple)
    assert entry["integration"]["state"] == "unpushed"
    assert entry["integration"]["aheadBy"] == 1
    assert (entry["class"], entry["reclaimReason"]) == ("reclaim", "dep-bump")
    assert only(plan, two)["reclaimReason"] == "dep-bump"
    assert only(plan, opened)["integration"]["state"] == "open"
    for held in (sneaky, feat, dirty, opened, plain):
        assert only(plan, held)["class"] == "hold", held
    records = {r["path"]: r for r in apply_gc(repo.root, plan, opts)}
    assert records[str(simple)] == {"path": str(simple), "branch": "wt/bump-simple",
                                    "result": "reclaimed", "reclaimReason": "dep-bump"}
    assert records[str(two)]["reclaimReason"] == "dep-bump"
    assert all(force is False for _, force in remover.calls)


def test_in_base_ladder_promotes_cherry_picked_branch(repo: Repo) -> None:
    cwd = worktree(repo, "picked")
    tip = commit_in(repo, cwd, {"picked.txt": "p"}, "feat: picked")
    repo.commit({"unrelated.txt": "u"}, push=False)
    repo.git("cherry-pick", tip)
    repo.git("push", "-q", "origin", "HEAD:main")
    repo.git("fetch", "-q", "origin")
    entry = only(plan_gc(repo.root, options()), cwd)
    assert entry["class"] == "reclaim"
    assert entry["reclaimReason"] in ("squash-merged", "patch-merged", "content-merged")
    assert only(plan_gc(repo.root, options(in_base_check=False)), cwd)["class"] == "hold"


def test_orphans(repo: Repo, tmp_path: Path) -> None:
    pool = repo.path.parent / "_worktrees"
    orphan = worktree(repo, "orphan")
    dirty = worktree(repo, "registered-dirty")
    (dirty / "scratch.txt").write_text("x")
    shutil.rmtree(repo.path / ".git" / "worktrees" / "orphan")
    (pool / "plain-dir").mkdir()
    from .conftest import make_repo

    (tmp_path / "elsewhere").mkdir()
    other = make_repo(tmp_path / "elsewhere", "other")
    foreign = Path(call_tool("worktree.provision", {"repoRoot": other.root, "slug": "foreign",
                                                    "dir": str(pool / "foreign")})["cwd"])
    shutil.rmtree(other.path / ".git" / "worktrees" / "foreign")

    assert all(entry["path"] != str(orphan) for entry in plan_gc(repo.root, options()))
    opts = options(worktrees_root=str(pool))
    plan = plan_gc(repo.root, opts)
    entry = only(plan, orphan)
    assert entry == {"path": str(orphan), "branch": None, "head": "", "class": "reclaim",
                     "reclaimReason": "orphan", "orphan": True}
    assert {e["path"] for e in plan}.isdisjoint({str(pool / "plain-dir"), str(foreign)})
    assert orphan.exists()  # the dry run keeps it
    records = {r["path"]: r for r in apply_gc(repo.root, plan, opts)}
    assert records[str(orphan)] == {"path": str(orphan), "branch": None,
                                    "result": "reclaimed", "reclaimReason": "orphan"}
    assert records[str(dirty)]["result"] == "held"
    assert not orphan.exists() and foreign.exists() and (pool / "plain-dir").exists()
    assert apply_gc(repo.root, [entry], opts)[0] == records[str(orphan)]


def test_prunable_entries(repo: Repo) -> None:
    cwd = worktree(repo, "prunable")
    shutil.rmtree(cwd)
    plan = plan_gc(repo.root, options())
    entry = only(plan, cwd)
    assert entry == {"path": str(cwd), "branch": "wt/prunable", "head": entry["head"],
                     "class": "reclaim", "reclaimReason": "prunable", "prunable": True}
    assert apply_gc(repo.root, plan, options())[0] == {
        "path": str(cwd), "branch": "wt/prunable", "result": "reclaimed",
        "reclaimReason": "prunable"}
    assert str(cwd) not in repo.worktree_list()
    assert repo.branches("wt/prunable") != ""  # the branch is never deleted


def test_reclaim_one_worktree(repo: Repo) -> None:
    merged = worktree(repo, "one-merged")
    busy = worktree(repo, "one-busy")
    commit_in(repo, busy, {"x.txt": "x"}, "feat: x")
    (busy / "scratch.txt").write_text("x")
    untouched = worktree(repo, "one-untouched")
    assert reclaim_one_worktree(repo.root, str(merged), options())["result"] == "reclaimed"
    assert reclaim_one_worktree(repo.root, str(busy), options())["result"] == "held"
    assert untouched.exists() and busy.exists() and not merged.exists()
    assert reclaim_one_worktree(repo.root, "/no/such/worktree", options()) is None


def test_protected_paths(repo: Repo) -> None:
    pool = repo.path.parent / "_worktrees"
    exact = worktree(repo, "prot")
    nested = worktree(repo, "prot-nested")
    sibling = worktree(repo, "prot-nested-other")
    orphan = worktree(repo, "prot-orphan")
    shutil.rmtree(repo.path / ".git" / "worktrees" / "prot-orphan")
    protected = [str(exact), str(nested / "packages" / "app"), str(orphan)]
    plan = plan_gc(repo.root, options(protected_paths=protected, worktrees_root=str(pool)))
    for held in (exact, nested, orphan):
        assert only(plan, held)["class"] == "hold"
        assert only(plan, held)["holdReason"] == "live-session-cwd"
    assert only(plan, sibling)["class"] == "reclaim"
    late = worktree(repo, "late")
    plan = plan_gc(repo.root, options(), paths=[str(late)])
    assert plan[0]["class"] == "reclaim"
    records = apply_gc(repo.root, plan, options(protected_paths=[str(late)]))
    assert records == [{"path": str(late), "branch": "wt/late",
                        "result": "aborted-reclassified", "from": "reclaim", "to": "hold",
                        "holdReason": "live-session-cwd"}]
    assert late.exists()
    held = plan_gc(repo.root, options(protected_paths=[str(late)]), paths=[str(late)])
    assert apply_gc(repo.root, held, options(protected_paths=[str(late)])) == [
        {"path": str(late), "branch": "wt/late", "result": "held",
         "holdReason": "live-session-cwd"}]




def test_git_refusing_at_the_last_moment_is_failed_with_a_message(repo: Repo) -> None:
    cwd = worktree(repo, "last-moment")

    def dirtying_remover(repo_root: str, path: str, force: bool) -> None:
        Path(path, "appeared.txt").write_text("written just before removal")
        fast_remover(repo_root, path, force)

    opts = options(remover=dirtying_remover)
    records = apply_gc(repo.root, plan_gc(repo.root, opts), opts)
    assert [sorted(r) for r in records] == [["branch", "message", "path", "result"]]
    assert records[0]["result"] == "failed"
    assert records[0]["message"].startswith(f"worktree at {cwd} is not clean; git refused")
    assert (cwd / "appeared.txt").exists() and repo.branches("wt/last-moment") != ""
