"""Garbage collection (docs/worktrees.md): salvage, fast removal, the GC routine."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tavernlab.clock import FixedClock
from tavernlab.worktree import call_tool
from tavernlab.worktree._errors import GitError
from tavernlab.worktree._removal import (
    ensure_trash_deleter,
    remove_worktree_fast,
    sweep_worktree_trash,
)
from tavernlab.worktree._salvage import salvage_worktree, sanitize
from tavernlab.worktree.routines import routine_front_matter

from .conftest import Repo, make_repo
from .test_scheduler_git import wait_until


def worktree(repo: Repo, slug: str) -> Path:
    return Path(call_tool("worktree.provision", {"repoRoot": repo.root, "slug": slug})["cwd"])


def listed(repo: Repo, path: Path) -> bool:
    return f"worktree {path}\n" in repo.worktree_list()


# -- salvage ---------------------------------------------------------------------------------


def test_salvage_contents(repo: Repo, tmp_path: Path) -> None:
    cwd = worktree(repo, "salvage-me")
    (cwd / "README.md").write_text("edited\n")
    (cwd / "nested").mkdir()
    (cwd / "nested" / "scratch.txt").write_text("scratch")
    (cwd / "node_modules").mkdir()
    (cwd / "node_modules" / "ignored.js").write_text("x")
    root = tmp_path / "salvage-root"
    result = salvage_worktree(repo.root, str(cwd), slug="wt/salvage-me", salvage_root=root)
    tip = repo.git("-C", str(cwd), "rev-parse", "HEAD").strip()
    salvage = Path(result["dir"])
    assert str(salvage).startswith(str(root))
    assert salvage.name.startswith(f"wt-salvage-me-{tip[:7]}-")
    assert salvage.parent.name == "app"
    patch = (salvage / "changes.patch").read_text()
    assert "README.md" in patch and "edited" in patch
    assert (salvage / "untracked" / "nested" / "scratch.txt").read_text() == "scratch"
    manifest_text = (salvage / "MANIFEST.json").read_text()
    assert manifest_text.endswith("}\n") and manifest_text.startswith('{\n  "repo"')
    manifest = json.loads(manifest_text)
    assert manifest == result["manifest"]
    assert manifest["untrackedFiles"] == ["nested/scratch.txt"]
    assert manifest["tipSha"] == tip and manifest["branch"] == "wt/salvage-me"
    assert manifest["createdAt"].startswith(salvage.name[-10:])
    assert call_tool("worktree.cleanup", {"repoRoot": repo.root, "cwd": str(cwd),
                                          "discardUntracked": True,
                                          "discardModified": True}) == {"removed": True}
    assert (salvage / "MANIFEST.json").exists()


def test_salvage_clean_tree(repo: Repo, tmp_path: Path) -> None:
    cwd = worktree(repo, "clean-salvage")
    manifest = salvage_worktree(repo.root, str(cwd), salvage_root=tmp_path / "s")["manifest"]
    assert manifest["hasPatch"] is False and manifest["untrackedFiles"] == []


def test_sanitize() -> None:
    assert sanitize("wt/fix thing!") == "wt-fix-thing-"
    assert sanitize("--x") == "x"
    assert sanitize("///") == "worktree"


def test_default_salvage_root(repo: Repo) -> None:
    cwd = worktree(repo, "home-salvage")
    result = salvage_worktree(repo.root, str(cwd))
    assert result["dir"].startswith(
        os.path.join(os.environ["HOME"], ".agentproto", "worktree-salvage", "app",
                     "home-salvage-"))


# -- fast removal --------------------------------------------------------------------------


def test_clean_worktree_moves_to_trash_and_drains(repo: Repo) -> None:
    cwd = worktree(repo, "clean-one")
    pool = cwd.parent
    handed: list[str] = []
    remove_worktree_fast(repo.root, cwd, spawn_removal=handed.append)
    assert not cwd.exists() and not listed(repo, cwd)
    assert len(handed) == 1
    assert handed[0].startswith(f"{pool}/.trash/") and "clean-one-" in handed[0]
    assert Path(handed[0]).is_dir()
    other = worktree(repo, "clean-two")
    remove_worktree_fast(repo.root, other)
    wait_until(lambda: not any(p.name.startswith("clean-two-")
                               for p in (pool / ".trash").iterdir()), "background delete")


@pytest.mark.parametrize("dirt", ["modified", "untracked"])
def test_dirty_worktree_is_refused(repo: Repo, dirt: str) -> None:
    cwd = worktree(repo, f"dirty-{dirt}")
    if dirt == "modified":
        (cwd / "README.md").write_text("edited\n")
    else:
        (cwd / "new.txt").write_text("x")
    with pytest.raises(GitError, match="contains modified or untracked files") as caught:
        remove_worktree_fast(repo.root, cwd)
    assert caught.value.message == (f"git worktree remove failed (exit 128): '{cwd}' contains "
                                    "modified or untracked files, use --force to delete it")
    assert cwd.exists() and listed(repo, cwd)
    assert not (cwd.parent / ".trash").exists()


def test_ignored_only_is_moved(repo: Repo) -> None:
    cwd = worktree(repo, "ignored-only")
    (cwd / "node_modules").mkdir()
    handed: list[str] = []
    remove_worktree_fast(repo.root, cwd, spawn_removal=handed.append)
    assert len(handed) == 1 and not cwd.exists()


def test_locked_worktree(repo: Repo) -> None:
    cwd = worktree(repo, "locked")
    repo.git("worktree", "lock", str(cwd))
    with pytest.raises(GitError, match=r"^git worktree remove failed \(exit 128\): '.*' is "
                                       r"locked; unlock it first$"):
        remove_worktree_fast(repo.root, cwd)
    assert cwd.exists()


def test_forced_dirty_removal(repo: Repo) -> None:
    cwd = worktree(repo, "forced")
    (cwd / "README.md").write_text("edited\n")
    remove_worktree_fast(repo.root, cwd, force=True, spawn_removal=lambda _: None)
    assert not cwd.exists() and not listed(repo, cwd)


def test_blocked_rename_falls_back_to_git(repo: Repo) -> None:
    cwd = worktree(repo, "fallback")
    blocker = cwd.parent / ".trash" / "fallback-1234567890"
    blocker.mkdir(parents=True)
    (blocker / "occupied").write_text("x")
    handed: list[str] = []
    pinned = FixedClock(datetime.fromtimestamp(1234567.890, UTC), step=timedelta(0))
    remove_worktree_fast(repo.root, cwd, clock=pinned, spawn_removal=handed.append)
    assert handed == []
    assert not cwd.exists() and not listed(repo, cwd)
    assert sorted(p.name for p in (cwd.parent / ".trash").iterdir()) == ["fallback-1234567890"]


def test_other_repository_is_not_a_linked_worktree(repo: Repo, tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    other = make_repo(tmp_path / "other", "other")
    foreign = Path(call_tool("worktree.provision", {"repoRoot": other.root, "slug": "f"})["cwd"])
    with pytest.raises(GitError, match=f"^not a linked worktree of {repo.root}: {foreign}$"):
        remove_worktree_fast(repo.root, foreign)
    with pytest.raises(GitError, match="not a linked worktree"):
        remove_worktree_fast(repo.root, repo.root, force=True)
    assert foreign.exists()


def test_sweep_hands_off_trash_entries(tmp_path: Path) -> None:
    assert sweep_worktree_trash(tmp_path / "missing") == []
    trash = tmp_path / ".trash"
    for name in ("a-1", "b-2"):
        (trash / name).mkdir(parents=True)
        (trash / name / "f").write_text("x")
    handed: list[str] = []
    assert sweep_worktree_trash(tmp_path, spawn_removal=handed.append) == [
        str(trash / "a-1"), str(trash / "b-2")]
    assert handed == [str(trash / "a-1"), str(trash / "b-2")]
    assert (trash / "a-1" / "f").exists()  # never deleted synchronously


def test_trash_deleter_drains_and_leaves_no_pid_file(tmp_path: Path) -> None:
    trash = tmp_path / ".trash"
    for index in range(5):
        (trash / f"entry-{index}" / "deep").mkdir(parents=True)
        (trash / f"entry-{index}" / "deep" / "f").write_text("x")
    (trash / ".hidden-1").mkdir()
    assert ensure_trash_deleter(trash) is True  # upstream's argument: the .trash dir itself
    time.sleep(0.75)  # the parent stalls; the detached drainer keeps going
    wait_until(lambda: list(trash.iterdir()) == [], "trash drained")
    assert not (trash / ".deleting").exists()


def test_trash_deleter_is_serialized(tmp_path: Path) -> None:
    trash = tmp_path / ".trash"
    trash.mkdir()
    (trash / ".deleting").write_text(str(os.getpid()))
    assert ensure_trash_deleter(trash) is False
    (trash / ".deleting").write_text("999999999")
    (trash / "x").mkdir()
    assert ensure_trash_deleter(trash) is True
    wait_until(lambda: list(trash.iterdir()) == [], "stale pid replaced and drained")
    assert ensure_trash_deleter(tmp_path / "none" / ".trash") is False


# -- routine --------------------------------------------------------------------------------


def test_routine_front_matter() -> None:
    assert routine_front_matter("worktree-gc") == {
        "schema": "routine/v1",
        "id": "worktree-gc",
        "version": "1.0.0",
        "schedule": {"kind": "cron", "cron": "0 4 * * *", "timezone": "UTC",
                     "catchup": "skip"},
        "target": {"tool": "worktree_gc",
                   "inputs": {"apply": True, "salvageDirty": False, "wait": True}},
        "retry": {"max_attempts": 1, "backoff": "fixed"},
        "on_failure": {"create_work_item": True, "fire_event": "worktree.gc.failed"},
        "fires_events": ["worktree.gc.completed", "worktree.gc.failed"],
        "enabled": False,
        "tags": ["worktree", "gc", "maintenance"],
    }
    notify = routine_front_matter("worktree-gc-notify")
    assert notify["schedule"]["cron"] == "0 4 * * *"
    assert "workflow" in notify["target"]
    assert notify["fires_events"] == ["worktree.gc-notify.completed",
                                      "worktree.gc-notify.failed"]
    assert notify["tags"] == ["worktree", "gc", "maintenance", "notify"]
