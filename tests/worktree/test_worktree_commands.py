"""The worktree commands both surfaces share: one rule for ``--worktree PATH|SLUG`` and one
``rm PATH|SLUG``, seen through :mod:`tavernlab.worktree.commands` and through the command
line (the notebook's side is in ``tests/notebook/test_worktree_magic.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tavernlab.cli import main
from tavernlab.errors import ToolError
from tavernlab.worktree.commands import Target, find_linked, resolve_target
from tavernlab.worktree.tools import call_tool

from .conftest import Repo


def provision(repo: Repo, slug: str) -> str:
    return str(call_tool("worktree.provision", {"repoRoot": repo.root, "slug": slug,
                                                "runSetup": False})["cwd"])


def test_a_worktree_is_named_by_its_directory_or_its_slug(repo: Repo,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    cwd = provision(repo, "named")
    linked = Target(repo.root, cwd, "wt/named")
    assert resolve_target(cwd) == linked
    assert resolve_target("named", repo=repo.root) == linked
    assert resolve_target("wt/named", repo=repo.root) == linked
    assert resolve_target(repo.root) == Target(repo.root, repo.root, "main")  # the main checkout
    assert resolve_target(cwd, branch="other") == Target(repo.root, cwd, "other")
    monkeypatch.chdir(cwd)
    assert resolve_target(None) == Target(repo.root, cwd, "wt/named")  # the current directory
    fixed = Target("r", "p", "b")
    assert resolve_target(None, current=lambda: fixed) == fixed
    assert resolve_target(None, branch="x", current=lambda: fixed) == Target("r", "p", "x")


def test_unknown_names_are_not_found_and_a_path_is_never_a_slug(repo: Repo) -> None:
    provision(repo, "worktree")
    with pytest.raises(ToolError) as caught:
        resolve_target("nope", repo=repo.root)
    assert (caught.value.code, caught.value.message) == (
        "not_found", f"not a linked worktree of {repo.root}: nope")
    with pytest.raises(ToolError) as caught:
        find_linked(repo.root, "/no/such/worktree")  # its last part is a slug, it is a path
    assert caught.value.message == f"not a linked worktree of {repo.root}: /no/such/worktree"
    with pytest.raises(ToolError) as caught:
        find_linked(repo.root, repo.root)  # the main checkout is not a linked worktree
    assert caught.value.code == "not_found"


def test_the_command_line_takes_slugs_too(repo: Repo, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit_config({"scripts": {"hello": {"command": "echo hello from $PWD"}}})
    cwd = provision(repo, "by-slug")
    monkeypatch.chdir(repo.path)
    assert main(["worktree", "run", "hello", "--worktree", "by-slug"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("hello from ") and said.endswith("/_worktrees/by-slug\n")
    assert main(["worktree", "services", "--worktree", "by-slug", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["services"] == []
    assert main(["worktree", "rm", "by-slug", "--delete-branch", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"removed": True}
    assert not Path(cwd).exists() and repo.branches("wt/by-slug") == ""
