"""``worktree.provision`` (docs/worktrees.md) on real repositories."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tavernlab.worktree import (
    ProvisionContext,
    ToolError,
    call_tool,
    invoke_tool,
    provision,
    provision_scheduler,
    run_with_provision_context,
)
from tavernlab.worktree._errors import BaseRefNotFoundError
from tavernlab.worktree._marker import git_dir_of, read_creation_marker

from .conftest import Repo, run_git


def test_defaults_with_explicit_base(repo: Repo) -> None:
    out = call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "test-feature",
                                           "base": "main"})
    assert out["branch"] == "wt/test-feature"
    assert out["cwd"].endswith("_worktrees/test-feature")
    assert out["cwd"] == str(repo.path.parent / "_worktrees" / "test-feature")
    assert repo.branches("wt/test-feature")


def test_default_base_is_origin_main(repo: Repo) -> None:
    repo.commit({"local-only.txt": "x"}, push=False)
    out = call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "from-origin"})
    assert not Path(out["cwd"], "local-only.txt").exists()
    assert Path(out["cwd"], "README.md").read_text() == "hello\n"


def test_custom_branch_and_dir_returned_verbatim(repo: Repo, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "wt"
    out = call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "custom",
                                           "base": "main", "branch": "feat/custom",
                                           "dir": str(target)})
    assert out == {"cwd": str(target), "branch": "feat/custom"}


def test_missing_base_has_no_fallback(repo: Repo) -> None:
    with pytest.raises(BaseRefNotFoundError) as caught:
        call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "nobase",
                                         "base": "nope"})
    assert caught.value.message == 'base ref `nope` not found; pass base (for example "main")'
    assert caught.value.code == "worktree.base_not_found"
    assert "nope" in caught.value.stderr and caught.value.exit_code != 0
    assert not (repo.path.parent / "_worktrees" / "nobase").exists()
    assert repo.branches("wt/nobase") == ""


def test_repository_without_origin_gets_one_clear_line(tmp_path: Path) -> None:
    local = tmp_path / "local"
    run_git(tmp_path, "init", "-q", "-b", "main", str(local))
    (local / "README.md").write_text("hi\n")
    run_git(local, "add", "-A")
    run_git(local, "commit", "-q", "-m", "initial")
    envelope = invoke_tool("worktree.provision", {"repoRoot": str(local), "slug": "x"})
    assert envelope == {"ok": False, "error": {
        "code": "not_found",
        "message": 'base ref `origin/main` not found; pass base (for example "main")'}}
    out = call_tool("worktree.provision", {"repoRoot": str(local), "slug": "x", "base": "main"})
    assert out["branch"] == "wt/x"


def test_creation_marker(repo: Repo) -> None:
    out = call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "marked"})
    git_dir = git_dir_of(out["cwd"])
    assert git_dir is not None
    marker = json.loads((git_dir / "agentproto-worktree.json").read_text())
    assert re.match(r"^wt_[0-9a-f]{8}$", marker["worktreeId"])
    assert re.match(r"^\d{4}-\d{2}-\d{2}T", marker["createdAt"])
    assert "createdBySessionId" not in marker
    assert read_creation_marker(out["cwd"]) == marker
    assert repo.git("-C", out["cwd"], "status", "--porcelain") == ""


def test_creation_marker_of_a_main_checkout(repo: Repo) -> None:
    assert read_creation_marker(repo.root) is None
    (repo.path / ".git" / "agentproto-worktree.json").write_text(
        '{"worktreeId": "wt_0000abcd", "createdAt": "2026-01-01T00:00:00.000Z"}')
    assert read_creation_marker(repo.root) == {"worktreeId": "wt_0000abcd",
                                               "createdAt": "2026-01-01T00:00:00.000Z"}
    (repo.path / ".git" / "agentproto-worktree.json").write_text('{"worktreeId": 7}')
    assert read_creation_marker(repo.root) is None


@pytest.mark.parametrize("slug", ["Bad", "-x", "a/b", "", "ok\n", "ok\nmore"])
def test_bad_slugs_are_rejected_before_anything_changes(repo: Repo, slug: str) -> None:
    before = repo.worktree_list()
    with pytest.raises(ToolError) as caught:
        call_tool("worktree.provision", {"repoRoot": repo.root, "slug": slug})
    assert caught.value.code == "input_invalid"
    assert "slug must be lowercase kebab-case" in caught.value.message
    assert repo.worktree_list() == before
    assert not (repo.path.parent / "_worktrees").exists()
    envelope = invoke_tool("worktree.provision", {"repoRoot": repo.root, "slug": slug})
    assert envelope["ok"] is False and envelope["error"]["code"] == "input_invalid"


def test_unknown_and_relative_inputs_rejected(repo: Repo) -> None:
    with pytest.raises(ToolError, match="depsCMD"):
        call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "x", "depsCMD": "x"})
    with pytest.raises(ToolError, match="repoRoot must be an absolute path"):
        call_tool("worktree.provision", {"repoRoot": "relative", "slug": "x"})
    with pytest.raises(ToolError, match=r"unknown tool: worktree\.nope"):
        call_tool("worktree.nope", {})


def test_link_paths_exist_before_deps_and_never_clobber(repo: Repo) -> None:
    (repo.path / "shared-cache").mkdir()
    (repo.path / "keep-me").mkdir()
    repo.commit({"keep-me/tracked.txt": "tracked"})
    out = call_tool("worktree.provision", {
        "repoRoot": repo.root, "slug": "links", "linkPaths": ["shared-cache", "keep-me"],
        "depsCmd": "test -L shared-cache && echo linked > deps.txt"})
    cwd = Path(out["cwd"])
    assert (cwd / "deps.txt").read_text() == "linked\n"
    assert (cwd / "shared-cache").resolve() == (repo.path / "shared-cache").resolve()
    assert str((cwd / "shared-cache").readlink()) == str(repo.path / "shared-cache")
    assert not (cwd / "keep-me").is_symlink()




def test_copy_globs_copy_secret(repo: Repo) -> None:
    repo.write(".env", "TOKEN=secret\n")
    out = call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "copied",
                                           "copyGlobs": [".env"]})
    assert Path(out["cwd"], ".env").read_text() == "TOKEN=secret\n"


def test_copy_globs_overwrite(repo: Repo) -> None:
    repo.write("README.md", "local edit\n")
    out = call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "overwrite",
                                           "copyGlobs": ["README.md"]})
    assert Path(out["cwd"], "README.md").read_text() == "local edit\n"


def test_write_files_create_and_append(repo: Repo) -> None:
    out = call_tool("worktree.provision", {
        "repoRoot": repo.root, "slug": "written",
        "writeFiles": [{"path": "README.md", "content": "clobbered\n"},
                       {"path": "gen/new.txt", "content": "new\n"}],
        "depsCmd": "cat gen/new.txt > deps-saw.txt"})
    cwd = Path(out["cwd"])
    assert (cwd / "README.md").read_text() == "hello\n"
    assert (cwd / "deps-saw.txt").read_text() == "new\n"
    out = call_tool("worktree.provision", {
        "repoRoot": repo.root, "slug": "appended",
        "writeFiles": [{"path": "README.md", "content": "appended\n", "mode": "append"}]})
    cwd = Path(out["cwd"])
    assert (cwd / "README.md").read_text() == "hello\nappended\n"
    assert repo.git("-C", str(cwd), "status", "--porcelain", "README.md") == ""
    assert repo.git("-C", str(cwd), "ls-files", "-v", "README.md").startswith("S")


def test_clone_globs_real_directory_before_deps(repo: Repo) -> None:
    (repo.path / "node_modules" / "pkg").mkdir(parents=True)
    (repo.path / "node_modules" / "pkg" / "index.js").write_text("source")
    out = call_tool("worktree.provision", {
        "repoRoot": repo.root, "slug": "cloned", "cloneGlobs": ["node_modules"],
        "depsCmd": "test -d node_modules && ! test -L node_modules && echo ok > deps.txt"})
    cwd = Path(out["cwd"])
    assert (cwd / "deps.txt").read_text() == "ok\n"
    (cwd / "node_modules/pkg/index.js").write_text("changed")
    assert (repo.path / "node_modules/pkg/index.js").read_text() == "source"


@pytest.mark.parametrize("pattern", ["../escape", "/etc", "node_modules/../../etc"])
def test_clone_glob_traversal_rejected_before_anything(repo: Repo, pattern: str) -> None:
    with pytest.raises(ToolError) as caught:
        call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "escape",
                                         "cloneGlobs": [pattern]})
    assert caught.value.code == "input_invalid"
    assert re.search("escapes the repo root|traversal", caught.value.message)
    assert caught.value.message == (
        f"cloneGlobs.0: '{pattern}' escapes the repo root (path traversal): absolute paths "
        "and '..' segments are not allowed")
    assert not (repo.path.parent / "_worktrees").exists()
    assert repo.branches("wt/escape") == ""


def test_clone_glob_double_star_rejected(repo: Repo) -> None:
    with pytest.raises(ToolError, match=r"cloneGlobs failed: .*\*\*.*not supported"):
        call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "starstar",
                                         "cloneGlobs": ["**/node_modules"]})


def test_failing_deps_cmd_keeps_worktree(repo: Repo) -> None:
    events: list[dict[str, object]] = []
    with pytest.raises(ToolError) as caught:
        run_with_provision_context(
            ProvisionContext(on_progress=events.append),
            lambda: call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "deps-fail",
                                                     "depsCmd": "echo oops 1>&2; exit 3"}))
    assert caught.value.code == "execution_failed"
    assert re.search(r"depsCmd .* failed \(exit 3\)", caught.value.message)
    assert caught.value.message == "depsCmd 'echo oops 1>&2; exit 3' failed (exit 3): oops\n"
    assert (repo.path.parent / "_worktrees" / "deps-fail").is_dir()
    assert provision_scheduler().snapshot()["running"] == 0
    assert events[-1] == {"kind": "done", "outcome": "failed"}


def test_setup_hooks_run_with_log_and_errors(repo: Repo, tmp_path: Path) -> None:
    repo.commit_config({"worktree": {"setup": ["echo $AGENTPROTO_BRANCH_NAME > setup-ran.txt",
                                               "echo broken; exit 5"]}})
    log = tmp_path / "setup.log"
    with pytest.raises(ToolError) as caught:
        provision(repo.root, "hooked", setup_log_path=str(log))
    assert caught.value.code == "execution_failed"
    assert caught.value.message.startswith(
        "worktree setup hook failed (exit 5): echo broken; exit 5\nbroken")
    cwd = repo.path.parent / "_worktrees" / "hooked"
    assert (cwd / "setup-ran.txt").read_text() == "wt/hooked\n"
    assert "(exit 5)" in log.read_text()


def test_snake_case_function_matches_tool(repo: Repo) -> None:
    out = provision(repo.root, "snake", base="main", deps_cmd="true")
    assert out == {"cwd": str(repo.path.parent / "_worktrees" / "snake"), "branch": "wt/snake"}


def test_host_envelope_codes(repo: Repo) -> None:
    from tavernlab.worktree import ProvisionCancelledError, WorktreeNotRemovableError
    from tavernlab.worktree._tools import error_envelope

    assert error_envelope(ToolError("not_found", "gone")) == {
        "ok": False, "error": {"code": "not_found", "message": "gone"}}
    assert error_envelope(ProvisionCancelledError()) == {
        "ok": False, "error": {"code": "cancelled", "message": "worktree provisioning cancelled",
                               "retryable": True}}
    refused = error_envelope(WorktreeNotRemovableError("/wt", ["modified"]))
    assert refused["error"]["code"] == "internal"
    assert refused["error"]["cause"]["name"] == "WorktreeNotRemovableError"
    ok = invoke_tool("worktree.run-gate", {"cwd": repo.root, "cmd": "true"})
    assert ok == {"ok": True, "output": {"passed": True, "exitCode": 0, "stdout": "",
                                         "stderr": ""}}
