"""Injection and escapes: refs are ref names, paths stay inside their root, slugs
are matched in full, and every caller value reaches git after ``--end-of-options``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tavernlab.errors import ToolError
from tavernlab.worktree import ConfigError, apply_gc, call_tool, plan_gc
from tavernlab.worktree._gc import GcOptions
from tavernlab.worktree._names import is_slug, ref_name_problem

from .conftest import Repo
from .forges import ListForge

REF_CORPUS = ["main", "origin/main", "wt/feature-1", "v1.0", "a/b/c", "HEAD", "deadbeef",
              "with space", "tilde~1", "caret^", "colon:x", "quest?", "star*", "bracket[",
              "back\\slash", "double..dot", "/lead", "trail/", "a//b", "end.", ".hidden",
              "a/.hidden", "x.lock", "a/x.lock/b", "@", "at@{1}", "ctl\x01", "del\x7f",
              "ok@", "a@b", "x.lock.y", "-"]


def test_ref_rule_agrees_with_git_check_ref_format() -> None:
    for value in REF_CORPUS:
        verdict = subprocess.run(["git", "check-ref-format", "--allow-onelevel", value],
                                 capture_output=True).returncode == 0
        ours = ref_name_problem(value) is None
        assert ours == verdict or value == "-", value  # "-" is ours to refuse, not git's
    assert ref_name_problem("-x") == "must not start with '-'"
    assert ref_name_problem("") == "must not be empty"


def test_slug_is_matched_in_full() -> None:
    assert is_slug("ok") and is_slug("a-1")
    assert not is_slug("ok\n") and not is_slug("ok\nmore") and not is_slug("Ok")


@pytest.fixture
def pwn(tmp_path: Path) -> Path:
    return tmp_path / "pwned"


def assert_refused(tool: str, tool_input: dict[str, Any], field: str) -> str:
    with pytest.raises(ToolError) as caught:
        call_tool(tool, tool_input)
    assert caught.value.code == "input_invalid"
    assert caught.value.message.startswith(f"{field}: ")
    return caught.value.message


def test_option_shaped_base_never_reaches_git(repo: Repo, pwn: Path) -> None:
    repo.commit_config({"scripts": {"job": {"command": "true"},
                                    "web": {"command": "sleep 1", "type": "service"}}})
    cwd = call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "safe"})["cwd"]
    hostile = f"--output={pwn}"
    common = {"repoRoot": repo.root, "worktreePath": cwd, "branch": "wt/safe",
              "base": hostile}
    message = assert_refused("worktree.run-script", {**common, "script": "job"}, "base")
    assert message == f"base: not a valid ref name (must not start with '-'): '{hostile}'"
    assert_refused("worktree.list-services", common, "base")
    assert_refused("worktree.start-service", {**common, "script": "web"}, "base")
    assert_refused("worktree.cleanup", {"repoRoot": repo.root, "cwd": cwd, "base": hostile},
                   "base")
    assert_refused("worktree.provision", {"repoRoot": repo.root, "slug": "p", "base": hostile},
                   "base")
    assert not pwn.exists() and Path(cwd).is_dir()  # nothing written, nothing removed


@pytest.mark.parametrize("branch", ["-D", "--orphan", "wt/a..b", "wt/x.lock", "wt/sp ace"])
def test_bad_branch_names_are_refused(repo: Repo, branch: str) -> None:
    assert_refused("worktree.provision", {"repoRoot": repo.root, "slug": "b", "branch": branch},
                   "branch")
    assert_refused("worktree.cleanup", {"repoRoot": repo.root, "cwd": repo.root,
                                        "branch": branch, "deleteBranch": True}, "branch")
    assert not (repo.path.parent / "_worktrees").exists()
    assert repo.branches("*") == "* main"


def test_slug_with_a_trailing_newline_and_explicit_branch(repo: Repo) -> None:
    assert_refused("worktree.provision", {"repoRoot": repo.root, "slug": "ok\n",
                                          "branch": "feat/ok"}, "slug")
    assert not (repo.path.parent / "_worktrees").exists()
    assert repo.branches("feat/*") == ""


@pytest.mark.parametrize("field, value, location", [
    ("writeFiles", [{"path": "/etc/evil", "content": "x"}], "writeFiles.0.path"),
    ("writeFiles", [{"path": "ok.txt", "content": "x"},
                    {"path": "../outside.txt", "content": "x", "mode": "append"}],
     "writeFiles.1.path"),
    ("linkPaths", ["/etc"], "linkPaths.0"),
    ("linkPaths", ["node_modules", "../sibling"], "linkPaths.1"),
    ("copyGlobs", ["../secrets/*"], "copyGlobs.0"),
    ("copyGlobs", ["/etc/passwd"], "copyGlobs.0"),
    ("cloneGlobs", ["a/../../b"], "cloneGlobs.0"),
])
def test_escaping_paths_are_refused_and_nothing_is_written(
        repo: Repo, tmp_path: Path, field: str, value: Any, location: str) -> None:
    outside = repo.path.parent / "outside.txt"
    outside.write_text("untouched\n")
    message = assert_refused("worktree.provision", {"repoRoot": repo.root, "slug": "esc",
                                                    field: value}, location)
    assert "escapes the repo root (path traversal)" in message
    assert outside.read_text() == "untouched\n"
    assert not (repo.path.parent / "_worktrees").exists() and repo.branches("wt/*") == ""


def test_escaping_paths_in_the_local_file_are_a_config_error(repo: Repo) -> None:
    repo.write_local_config({"writeFiles": [{"path": "/tmp/x", "content": "x"}],
                             "linkPaths": ["../up"]})
    with pytest.raises(ConfigError) as caught:
        call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "local-esc"})
    assert caught.value.message.startswith(".agentproto/worktree.json failed validation: ")
    assert "writeFiles.0.path: Value error, '/tmp/x' escapes the repo root" in \
        caught.value.message
    assert "linkPaths.0: Value error, '../up' escapes the repo root" in caught.value.message


def test_write_files_never_follow_a_committed_symlink_out(repo: Repo, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, repo.path / "escape-hatch")
    repo.commit({}, "a symlink out of the checkout")
    with pytest.raises(ToolError) as caught:
        call_tool("worktree.provision", {
            "repoRoot": repo.root, "slug": "hatch",
            "writeFiles": [{"path": "escape-hatch/planted.txt", "content": "x"}]})
    assert (caught.value.code, caught.value.message) == (
        "input_invalid", "writeFiles: 'escape-hatch/planted.txt' escapes the worktree through "
                         "a symlink")
    assert list(target.iterdir()) == []


def test_branch_that_looks_like_an_option_is_handled_as_a_value(repo: Repo) -> None:
    cwd = Path(call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "evil"})["cwd"])
    repo.git("update-ref", "refs/heads/-evil", "HEAD")  # git itself allows this ref
    repo.git("-C", str(cwd), "symbolic-ref", "HEAD", "refs/heads/-evil")
    options = GcOptions(forge=ListForge(), sessions=[])
    plan = plan_gc(repo.root, options)
    assert [(entry["branch"], entry["class"]) for entry in plan] == [("-evil", "reclaim")]
    assert apply_gc(repo.root, plan, options)[0]["result"] == "reclaimed"
    assert repo.git("for-each-ref", "--format=%(refname)", "refs/heads/").split() == [
        "refs/heads/main", "refs/heads/wt/evil"]  # '-evil' deleted as a value, not an option
