"""The worktree tools (docs/worktrees.md): run-gate, cleanup and run-script."""

from __future__ import annotations

from pathlib import Path

import pytest

from tavernlab.worktree import (
    ConfigError,
    ToolError,
    WorktreeNotRemovableError,
    call_tool,
)

from .conftest import Repo


def new_worktree(repo: Repo, slug: str) -> Path:
    return Path(call_tool("worktree.provision", {"repoRoot": repo.root, "slug": slug})["cwd"])


def cleanup(repo: Repo, cwd: Path, **flags: object) -> object:
    return call_tool("worktree.cleanup", {"repoRoot": repo.root, "cwd": str(cwd), **flags})


def listed(repo: Repo, cwd: Path) -> bool:
    return f"worktree {cwd}\n" in repo.worktree_list()


def test_gate_pass_and_fail(tmp_path: Path) -> None:
    assert call_tool("worktree.run-gate", {"cwd": str(tmp_path), "cmd": "exit 0"}) == {
        "passed": True, "exitCode": 0, "stdout": "", "stderr": ""}
    failed = call_tool("worktree.run-gate", {"cwd": str(tmp_path),
                                             "cmd": "echo boom 1>&2; exit 1"})
    assert failed["passed"] is False and failed["exitCode"] == 1
    assert "boom" in failed["stderr"]


def test_gate_has_no_agentproto_variables(tmp_path: Path) -> None:
    out = call_tool("worktree.run-gate", {"cwd": str(tmp_path),
                                          "cmd": "env | grep -c '^AGENTPROTO_' || true"})
    assert out["stdout"].strip() == "0"


def test_clean_tree_removed_without_flags(repo: Repo) -> None:
    cwd = new_worktree(repo, "clean")
    assert cleanup(repo, cwd) == {"removed": True}
    assert not cwd.exists() and not listed(repo, cwd)


def test_ignored_node_modules_does_not_block(repo: Repo) -> None:
    cwd = new_worktree(repo, "ignored")
    (cwd / "node_modules" / "x").mkdir(parents=True)
    assert cleanup(repo, cwd) == {"removed": True}
    assert not listed(repo, cwd)


def test_untracked_file_without_flags_is_refused(repo: Repo) -> None:
    cwd = new_worktree(repo, "untracked")
    (cwd / "scratch.txt").write_text("x")
    with pytest.raises(WorktreeNotRemovableError) as caught:
        cleanup(repo, cwd)
    assert caught.value.blocked == []
    assert caught.value.message.startswith(
        f"worktree at {cwd} is not clean; git refused to remove it: ")
    assert caught.value.message.endswith(
        ". Pass discardUntracked/discardModified to authorize discarding, or use "
        "'worktree archive' to salvage first.")
    assert listed(repo, cwd) and (cwd / "scratch.txt").exists()


def test_modified_file_without_flags_is_refused(repo: Repo) -> None:
    cwd = new_worktree(repo, "modified")
    (cwd / "README.md").write_text("edited\n")
    with pytest.raises(WorktreeNotRemovableError):
        cleanup(repo, cwd)
    assert listed(repo, cwd)


def test_modified_and_untracked_with_only_discard_untracked(repo: Repo) -> None:
    cwd = new_worktree(repo, "both-one-flag")
    (cwd / "README.md").write_text("edited\n")
    (cwd / "scratch.txt").write_text("x")
    with pytest.raises(WorktreeNotRemovableError) as caught:
        cleanup(repo, cwd, discardUntracked=True)
    assert caught.value.blocked == ["modified"]
    assert caught.value.message == (
        f"worktree at {cwd} has modified changes; refusing to remove. Pass discardModified "
        "to authorize discarding it, or use 'worktree archive' to salvage first.")
    assert listed(repo, cwd)


def test_untracked_only_flags(repo: Repo) -> None:
    cwd = new_worktree(repo, "untracked-flags")
    (cwd / "scratch.txt").write_text("x")
    with pytest.raises(WorktreeNotRemovableError) as caught:
        cleanup(repo, cwd, discardModified=True)
    assert caught.value.blocked == ["untracked"]
    assert cleanup(repo, cwd, discardUntracked=True) == {"removed": True}
    assert not listed(repo, cwd)


def test_staged_counts_as_modified(repo: Repo) -> None:
    cwd = new_worktree(repo, "staged")
    (cwd / "new.txt").write_text("x")
    repo.git("-C", str(cwd), "add", "new.txt")
    (cwd / "other.txt").write_text("y")
    with pytest.raises(WorktreeNotRemovableError) as caught:
        cleanup(repo, cwd, discardUntracked=True)
    assert caught.value.blocked == ["modified"]


def test_two_blocked_kinds_message() -> None:
    error = WorktreeNotRemovableError("/wt", ["untracked", "modified"])
    assert error.message == (
        "worktree at /wt has untracked and modified changes; refusing to remove. Pass "
        "discardUntracked and discardModified to authorize discarding them, or use "
        "'worktree archive' to salvage first.")


def test_modified_only_with_discard_modified_and_both(repo: Repo) -> None:
    cwd = new_worktree(repo, "mod-flag")
    (cwd / "README.md").write_text("edited\n")
    assert cleanup(repo, cwd, discardModified=True) == {"removed": True}
    cwd = new_worktree(repo, "both-flags")
    (cwd / "README.md").write_text("edited\n")
    (cwd / "scratch.txt").write_text("x")
    assert cleanup(repo, cwd, discardModified=True, discardUntracked=True) == {"removed": True}
    assert not listed(repo, cwd)


def test_delete_branch(repo: Repo) -> None:
    cwd = new_worktree(repo, "gone")
    assert cleanup(repo, cwd, branch="wt/gone", deleteBranch=True) == {"removed": True}
    assert repo.branches("wt/gone") == ""
    assert str(cwd) not in repo.worktree_list()


def test_branch_kept_without_delete_flag(repo: Repo) -> None:
    cwd = new_worktree(repo, "kept")
    cleanup(repo, cwd, branch="wt/kept")
    assert repo.branches("wt/kept") != ""


def test_teardown_runs_and_never_blocks(repo: Repo, capfd: pytest.CaptureFixture[str]) -> None:
    repo.commit_config({"worktree": {"teardown": [
        'echo "$AGENTPROTO_BRANCH_NAME" > "$AGENTPROTO_SOURCE_CHECKOUT_PATH/teardown-ran.txt"',
        "echo nope 1>&2; exit 7"]}})
    cwd = new_worktree(repo, "torn")
    assert cleanup(repo, cwd, branch="wt/torn") == {"removed": True}
    assert (repo.path / "teardown-ran.txt").read_text() == "wt/torn\n"
    err = capfd.readouterr().err
    assert "worktree.cleanup: teardown 'echo nope 1>&2; exit 7' exited 7 (ignored): nope" in err
    cwd = new_worktree(repo, "torn-nobranch")
    cleanup(repo, cwd)
    assert (repo.path / "teardown-ran.txt").read_text() == "\n"


def test_run_teardown_false_and_broken_config(repo: Repo) -> None:
    repo.commit_config({"worktree": {"teardown": "touch $AGENTPROTO_SOURCE_CHECKOUT_PATH/t"}})
    cwd = new_worktree(repo, "no-teardown")
    cleanup(repo, cwd, runTeardown=False)
    assert not (repo.path / "t").exists()
    repo.commit({"agentproto.json": "{broken"})
    cwd = Path(call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "broken-cfg",
                                                "runSetup": False})["cwd"])
    assert cleanup(repo, cwd) == {"removed": True}


def test_run_script(repo: Repo) -> None:
    repo.commit_config({"scripts": {
        "hello": {"command": 'printf "%s %s" "$AGENTPROTO_BRANCH_NAME" "$PWD"'},
        "web": {"command": "echo one-shot", "type": "service"}}})
    cwd = new_worktree(repo, "scripted")
    base = {"repoRoot": repo.root, "worktreePath": str(cwd), "branch": "wt/scripted"}
    out = call_tool("worktree.run-script", {**base, "script": "hello"})
    assert out == {"passed": True, "exitCode": 0, "stdout": f"wt/scripted {cwd}", "stderr": ""}
    assert call_tool("worktree.run-script", {**base, "script": "web"})["stdout"] == "one-shot\n"
    with pytest.raises(ToolError) as caught:
        call_tool("worktree.run-script", {**base, "script": "absent"})
    assert caught.value.code == "not_found"
    assert caught.value.message == 'no script "absent" in origin/main:agentproto.json'


def test_run_script_without_config_and_with_bad_config(repo: Repo) -> None:
    base = {"repoRoot": repo.root, "worktreePath": repo.root, "branch": "main"}
    with pytest.raises(ToolError, match=r'no script "x" in main:agentproto\.json'):
        call_tool("worktree.run-script", {**base, "script": "x", "base": "main"})
    repo.commit({"agentproto.json": "{broken"})
    with pytest.raises(ConfigError, match=r"agentproto\.json is not valid JSON"):
        call_tool("worktree.run-script", {**base, "script": "x"})


def test_signal_death_reports_minus_one(tmp_path: Path) -> None:
    out = call_tool("worktree.run-gate", {"cwd": str(tmp_path), "cmd": "kill -9 $$"})
    assert out["exitCode"] == -1 and out["passed"] is False


def test_inherited_environment_with_caller_variables_on_top(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    from tavernlab.worktree._process import run_shell

    monkeypatch.setenv("TAVERNLAB_PARENT", "parent")
    monkeypatch.setenv("TAVERNLAB_BOTH", "parent")
    result = run_shell('printf "%s %s" "$TAVERNLAB_PARENT" "$TAVERNLAB_BOTH"', cwd=tmp_path,
                       env={"TAVERNLAB_BOTH": "caller"})
    assert result.stdout == "parent caller"
