"""Work that must not be lost: upstream's ``classifyTip`` ladder on real
branches, and cleanliness checks that ``status.showUntrackedFiles=no`` cannot fool."""

from __future__ import annotations

from pathlib import Path

import pytest

from tavernlab.worktree import WorktreeNotRemovableError, apply_gc, call_tool, plan_gc
from tavernlab.worktree._errors import GitError
from tavernlab.worktree._gc import GcOptions
from tavernlab.worktree._ladder import classify_tip
from tavernlab.worktree._removal import remove_worktree_fast
from tavernlab.worktree._tree import tree_status

from .conftest import Repo
from .forges import ListForge


def branch_with(repo: Repo, name: str, files: dict[str, str | None]) -> str:
    """Commit ``files`` (``None`` deletes) on a new branch cut from main; back to main."""
    repo.git("checkout", "-q", "-b", name, "main")
    for rel, content in files.items():
        if content is None:
            repo.git("rm", "-q", rel)
        else:
            repo.write(rel, content)
            repo.git("add", "-f", rel)
    repo.git("commit", "-q", "-m", f"{name} work")
    tip = repo.git("rev-parse", "HEAD").strip()
    repo.git("checkout", "-q", "main")
    return tip


def on_main(repo: Repo, files: dict[str, str], message: str) -> None:
    repo.commit(files, message, push=False)


def test_cherry_picked_then_reverted_is_unmerged_and_held(repo: Repo) -> None:
    cwd = Path(call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "reverted",
                                                "base": "main"})["cwd"])
    (cwd / "feature.txt").write_text("the only copy\n")
    repo.git("-C", str(cwd), "add", "feature.txt")
    repo.git("-C", str(cwd), "commit", "-q", "-m", "feat: the work")
    tip = repo.git("-C", str(cwd), "rev-parse", "HEAD").strip()
    on_main(repo, {"other.txt": "o\n"}, "unrelated")
    repo.git("cherry-pick", tip)
    repo.git("revert", "--no-edit", "HEAD")
    assert repo.git("cherry", "main", tip).startswith("-")  # the old ladder said patch-merged
    assert classify_tip(repo.root, tip, "main") == "unmerged"
    options = GcOptions(forge=ListForge(), sessions=[], default_ref="main")
    plan = plan_gc(repo.root, options)
    assert [(e["path"], e["class"]) for e in plan] == [(str(cwd), "hold")]
    assert apply_gc(repo.root, plan, options)[0]["result"] == "held"
    assert repo.branches("wt/reverted") != "" and (cwd / "feature.txt").exists()


def test_ladder_rungs_on_real_branches(repo: Repo) -> None:
    ff = branch_with(repo, "feat/ff", {"a.txt": "a\n"})
    repo.git("merge", "-q", "--ff-only", "feat/ff")
    assert classify_tip(repo.root, ff, "main") == "merged"

    squash = branch_with(repo, "feat/squash", {"s.txt": "s\n"})
    on_main(repo, {"s.txt": "s\n"}, "squash of feat/squash")
    on_main(repo, {"later.txt": "later\n"}, "later work")
    assert classify_tip(repo.root, squash, "main") == "squash-merged"

    on_main(repo, {"conf.txt": "line1\nvalue=1\nline3\n"}, "conf")
    picked = branch_with(repo, "feat/picked", {"conf.txt": "line1\nvalue=2\nline3\n"})
    on_main(repo, {"unrelated.txt": "u\n"}, "diverge first")
    repo.git("cherry-pick", picked)
    on_main(repo, {"conf.txt": "line1\nvalue=3\nline3\n"}, "base keeps editing")
    assert classify_tip(repo.root, picked, "main") == "patch-merged"


def test_moved_file_squash_is_content_merged(repo: Repo) -> None:
    tip = branch_with(repo, "feat/reorg", {"src/x.ts": "export const x = 1\n",
                                           "src/y.ts": "export const y = 2\n"})
    on_main(repo, {"src/x.ts": "export const x = 1\n", "src/y.ts": "export const y = 2\n"},
            "squash feat/reorg")
    repo.git("mv", "src", "lib")
    repo.git("commit", "-q", "-m", "reorg: src -> lib")
    assert classify_tip(repo.root, tip, "main") == "content-merged"


def test_ignored_residual_is_content_merged_and_evolved_is_not(repo: Repo) -> None:
    on_main(repo, {".gitignore": "node_modules/\n.agentproto/\ndist/\n"}, "ignore dist")
    built = branch_with(repo, "feat/build", {"dist/out.js": "built\n"})
    assert classify_tip(repo.root, built, "main") == "content-merged"
    on_main(repo, {"docs/NOTES.md": "base version\n"}, "notes")
    evolved = branch_with(repo, "feat/evolved", {"other/NOTES.md": "branch version\n"})
    on_main(repo, {"later.txt": "x\n"}, "later")
    assert classify_tip(repo.root, evolved, "main") == "unmerged"
    deleter = branch_with(repo, "feat/deleter", {"docs/NOTES.md": None})
    on_main(repo, {"later2.txt": "x\n"}, "later")
    assert classify_tip(repo.root, deleter, "main") == "unmerged"


def test_unresolvable_base_raises(repo: Repo) -> None:
    with pytest.raises(GitError):
        classify_tip(repo.root, "HEAD", "origin/nope")


@pytest.fixture
def hidden_untracked(repo: Repo) -> Path:
    """A worktree with one untracked file, in a repository configured to hide them."""
    repo.git("config", "status.showUntrackedFiles", "no")
    cwd = Path(call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "hidden"})["cwd"])
    (cwd / "notes.txt").write_text("uncommitted work\n")
    assert repo.git("-C", str(cwd), "status", "--porcelain") == ""  # what git shows by default
    return cwd


def test_cleanup_sees_untracked_files_despite_the_config(repo: Repo,
                                                         hidden_untracked: Path) -> None:
    with pytest.raises(WorktreeNotRemovableError) as caught:
        call_tool("worktree.cleanup", {"repoRoot": repo.root, "cwd": str(hidden_untracked)})
    assert "contains modified or untracked files" in caught.value.message
    assert (hidden_untracked / "notes.txt").read_text() == "uncommitted work\n"
    with pytest.raises(WorktreeNotRemovableError) as flagged:
        call_tool("worktree.cleanup", {"repoRoot": repo.root, "cwd": str(hidden_untracked),
                                       "discardModified": True})
    assert flagged.value.blocked == ["untracked"]


def test_status_and_fast_removal_see_untracked_files(repo: Repo,
                                                     hidden_untracked: Path) -> None:
    state = tree_status(hidden_untracked, repo_root=repo.root)
    assert (state["state"], state["untracked"]) == ("dirty", 1)
    with pytest.raises(GitError, match="contains modified or untracked files"):
        remove_worktree_fast(repo.root, hidden_untracked)
    assert hidden_untracked.exists()
