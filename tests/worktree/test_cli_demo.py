"""The ``tavernlab worktree`` command line and the worktree section of ``tavernlab demo``."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tavernlab.cli import main
from tavernlab.demo import SECTIONS
from tavernlab.demo import _worktree as demo_worktree

from .conftest import Repo


def tavernlab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tavernlab.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_new_ls_gate_rm(repo: Repo) -> None:
    done = tavernlab("worktree", "new", "cli-one", "--deps-cmd", "true", "--json",
                     cwd=repo.path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out == {"cwd": str(repo.path.parent / "_worktrees" / "cli-one"),
                   "branch": "wt/cli-one"}
    assert "phase deps" in done.stderr and "done: ok" in done.stderr
    listed = json.loads(tavernlab("worktree", "ls", "--json", cwd=repo.path).stdout)
    assert [r["branch"] for r in listed] == ["main", "wt/cli-one"]
    gate = tavernlab("worktree", "gate", out["cwd"], "echo hi; exit 4", cwd=repo.path)
    assert gate.returncode == 1 and gate.stdout == "hi\n" and "failed (exit 4)" in gate.stderr
    Path(out["cwd"], "dirt.txt").write_text("x")
    refused = tavernlab("worktree", "rm", out["cwd"], cwd=repo.path)
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: worktree.not_removable: worktree at ")
    assert "Traceback" not in refused.stderr and refused.stderr.count("\n") == 1
    removed = tavernlab("worktree", "rm", out["cwd"], "--discard-untracked", "--delete-branch",
                        cwd=repo.path)
    assert removed.returncode == 0, removed.stderr
    assert repo.branches("wt/cli-one") == ""


@pytest.mark.parametrize("args, message", [
    (["worktree", "new", "Bad"], "error: input_invalid: slug: slug must be lowercase kebab-case"),
    (["worktree", "new", "a/b"], "error: input_invalid: slug: slug must be lowercase kebab-case"),
    (["worktree", "new", "esc", "--clone-glob", "../x"],
     "error: input_invalid: cloneGlobs.0: '../x' escapes the repo root (path traversal): "
     "absolute paths and '..' segments are not allowed"),
    (["worktree", "new", "pwn", "--base=--output=/tmp/pwn"],
     "error: input_invalid: base: not a valid ref name (must not start with '-'): "
     "'--output=/tmp/pwn'"),
    (["worktree", "new", "nobase", "--base", "nope"],
     'error: worktree.base_not_found: base ref `nope` not found; pass base (for example '
     '"main")'),
    (["worktree", "rm", "/no/such/worktree"], "error: not_found: not a linked worktree of "),
])
def test_bad_input_is_one_line(repo: Repo, args: list[str], message: str) -> None:
    done = tavernlab(*args, cwd=repo.path)
    assert done.returncode == 1
    assert message in done.stderr and "Traceback" not in done.stderr


def test_bad_usage_prints_the_usage_line_and_exits_2(repo: Repo) -> None:
    done = tavernlab("worktree", "new", "wf", "--write-file", "{bad", cwd=repo.path)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: tavernlab ")
    assert "tavernlab: error: --write-file value is not valid JSON: {bad" in done.stderr
    assert "Traceback" not in done.stderr
    done = tavernlab("worktree", "new", "wf", "--write-file", '{"path": 1}', cwd=repo.path)
    assert done.returncode == 2
    assert ('tavernlab: error: --write-file requires {"path": string, "content": string, '
            '"mode"?: "create"|"append"}: {"path": 1}') in done.stderr


def test_outside_a_repository(tmp_path: Path) -> None:
    done = tavernlab("worktree", "ls", cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.startswith("error: ")
    assert "not a git repository" in done.stderr and "Traceback" not in done.stderr
    missing = tmp_path / "nowhere"
    done = tavernlab("worktree", "ls", "--repo", str(missing), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        1, f"error: worktree.spawn_failed: the repository directory {missing} does not exist\n")


def test_services_archive_and_gc_in_process(repo: Repo, capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    repo.commit_config({"scripts": {"web": {"command": "exec sleep 30", "type": "service"},
                                    "hello": {"command": "echo hello"}}})
    os.chdir(repo.path)
    assert main(["worktree", "new", "cli-svc", "--json"]) == 0
    cwd = json.loads(capsys.readouterr().out)["cwd"]
    assert main(["worktree", "services", "--worktree", cwd, "--json"]) == 0
    services = json.loads(capsys.readouterr().out)["services"]
    assert [(s["name"], s["status"]) for s in services] == [("web", "exited")]
    assert main(["worktree", "run", "hello", "--worktree", cwd]) == 0
    assert capsys.readouterr().out == "hello\n"
    assert main(["worktree", "start", "web", "--worktree", cwd, "--proxy-port", "0",
                 "--seconds", "0.1", "--json"]) == 0
    started = json.loads(capsys.readouterr().out)
    assert started["services"][0]["status"] == "running"
    assert main(["worktree", "stop", "web", "--worktree", cwd, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"stopped": False}
    assert main(["worktree", "gc", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert [(e["class"], e["reclaimReason"]) for e in plan] == [("reclaim", "fresh")]
    Path(cwd, "notes.txt").write_text("keep me")
    salvage_root = tmp_path / "salvage"
    assert main(["worktree", "archive", cwd, "--salvage-root", str(salvage_root), "--json"]) == 0
    archived = json.loads(capsys.readouterr().out)
    assert archived["manifest"]["untrackedFiles"] == ["notes.txt"]
    assert Path(archived["salvageDir"], "untracked", "notes.txt").read_text() == "keep me"
    assert not Path(cwd).exists() and repo.branches("wt/cli-svc") == ""
    assert main(["worktree", "gc", "--apply"]) == 0
    assert capsys.readouterr().out.strip() == "no linked worktrees"


def test_demo_section_is_last_and_plays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert SECTIONS[-1] == "tavernlab.demo._worktree"
    for role in ("AUTHOR", "COMMITTER"):  # the demo must not need a git identity
        monkeypatch.delenv(f"GIT_{role}_NAME")
        monkeypatch.delenv(f"GIT_{role}_EMAIL")
    out = io.StringIO()
    demo_worktree.run(tmp_path, out)
    demo_worktree.run(tmp_path, out)  # replaying in the same directory works
    text = out.getvalue()
    assert "phase deps" in text and "done: ok" in text
    assert "setup hook wrote: set up for wt/add-search" in text
    assert "gate 'test -f README.md': passed=True exit=0" in text
    assert "through the proxy: 200 '# shop'" in text
    assert "GC class reclaim" in text
    assert "cleanup: {'removed': True}; worktree gone: True" in text


def test_gc_asks_github_when_origin_is_github_and_says_so_when_not(repo: Repo) -> None:
    from tavernlab.cli._worktree import _gc_forge
    from tavernlab.worktree import UnreachableForge
    from tavernlab.worktree._forge import GitHubForge

    done = tavernlab("worktree", "gc", "--json", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ("worktree gc: origin is not a GitHub remote, so pull requests "
                           "cannot be checked; worktrees whose branch is not in the base are "
                           "held\n")
    assert isinstance(_gc_forge(repo.root), UnreachableForge)
    repo.git("remote", "set-url", "origin", "git@github.com:tavern/app.git")
    forge = _gc_forge(repo.root)
    assert isinstance(forge, GitHubForge) and (forge.owner, forge.repo) == ("tavern", "app")
