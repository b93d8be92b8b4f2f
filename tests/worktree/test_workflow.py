"""spec/worktree.md 7.1 and 7.2: the worktree-agent workflow, its flags and approval."""

from __future__ import annotations

import io
import os
import select
from pathlib import Path

import pytest

from tavernlab.worktree import WorktreeNotRemovableError
from tavernlab.worktree.errors import UsageError
from tavernlab.worktree.workflow import (
    APPROVAL_PROMPT,
    USAGE,
    CallableAgentHost,
    approve_cleanup,
    parse_agent_args,
    run_worktree_agent,
)

from .conftest import Repo


def agent_writes_commit(cwd: str, task: str) -> None:
    Path(cwd, "agent.txt").write_text(task)
    os.system(f"git -C {cwd} add agent.txt && git -C {cwd} commit -q -m agent")


def inputs(repo: Repo, slug: str, gate: str) -> dict[str, object]:
    return {"repoRoot": repo.root, "slug": slug, "task": "write agent.txt", "gateCmd": gate,
            "deleteBranch": True}


def test_gate_passes_and_cleanup_runs(repo: Repo) -> None:
    host = CallableAgentHost(agent_writes_commit)
    prompts: list[str] = []
    out = run_worktree_agent(inputs(repo, "agent-ok", "test -f agent.txt"), host,
                             lambda prompt: prompts.append(prompt) is None)
    assert out["gate"]["passed"] is True
    assert out["cleanup"] == {"removed": True}
    assert not Path(out["cwd"]).exists() and repo.branches("wt/agent-ok") == ""
    assert host.spawned == [("claude-code", {"cwd": out["cwd"], "workspaceSlug": None,
                                             "stepId": "code"})]
    assert prompts == [APPROVAL_PROMPT] == ["Gate passed. Approve worktree cleanup?"]


def test_gate_failure_keeps_worktree(repo: Repo) -> None:
    out = run_worktree_agent(inputs(repo, "agent-fail", "exit 1"),
                             CallableAgentHost(agent_writes_commit), lambda _: True)
    assert out["cleanup"] == {"removed": False, "reason": "gate_failed"}
    assert Path(out["cwd"]).exists()


def test_rejected_approval_keeps_worktree(repo: Repo) -> None:
    out = run_worktree_agent(inputs(repo, "agent-no", "exit 0"),
                             CallableAgentHost(agent_writes_commit), lambda _: False)
    assert out["cleanup"] == {"removed": False, "reason": "cleanup_rejected"}
    assert Path(out["cwd"]).exists()


def test_uncommitted_agent_output_blocks_cleanup(repo: Repo) -> None:
    host = CallableAgentHost(lambda cwd, task: Path(cwd, "left-behind.txt").write_text(task))
    with pytest.raises(WorktreeNotRemovableError):
        run_worktree_agent(inputs(repo, "agent-messy", "exit 0"), host, lambda _: True)
    assert (repo.path.parent / "_worktrees" / "agent-messy" / "left-behind.txt").exists()


def test_required_flags_only() -> None:
    parsed, yes = parse_agent_args(["run", "--repo", "rel/repo", "--slug", "s", "--task", "t",
                                    "--gate", "g"])
    assert parsed == {"repoRoot": os.path.abspath("rel/repo"), "slug": "s", "task": "t",
                      "gateCmd": "g", "deleteBranch": True}
    assert yes is False


def test_all_flags() -> None:
    parsed, yes = parse_agent_args([
        "run", "--repo", "/r", "--slug", "s", "--task", "t", "--gate", "g", "--base", "main",
        "--adapter", "codex", "--deps-cmd", "pnpm i", "--copy-glob", "envs/**/.env.local",
        "--copy-glob", "secrets/*.json", "--link", "node_modules", "--link",
        "projects/agentproto/ts", "--write-file",
        '{"path": "pnpm-workspace.yaml", "content": "virtualStoreDir: /abs/vstore\\n", '
        '"mode": "append"}', "--no-cleanup", "--yes"])
    assert parsed["copyGlobs"] == ["envs/**/.env.local", "secrets/*.json"]
    assert parsed["linkPaths"] == ["node_modules", "projects/agentproto/ts"]
    assert parsed["writeFiles"] == [{"path": "pnpm-workspace.yaml",
                                     "content": "virtualStoreDir: /abs/vstore\n",
                                     "mode": "append"}]
    assert parsed["deleteBranch"] is False and yes is True
    assert (parsed["base"], parsed["adapter"], parsed["depsCmd"]) == ("main", "codex", "pnpm i")


@pytest.mark.parametrize("argv, message", [
    ([], USAGE),
    (["go"], f"unknown command 'go'\n{USAGE}"),
    (["run", "--repo"], "flag '--repo' requires a value"),
    (["run", "--frobnicate"], "unrecognized flag '--frobnicate'"),
    (["run", "--slug", "s"], "missing required flag(s): --repo, --task, --gate"),
    (["run"], "missing required flag(s): --repo, --slug, --task, --gate"),
    (["run", "--write-file", "{nope"], "--write-file value is not valid JSON: {nope"),
    (["run", "--write-file", '{"path": 1}'],
     '--write-file requires {"path": string, "content": string, "mode"?: "create"|"append"}: '
     '{"path": 1}'),
])
def test_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_agent_args(argv)
    assert caught.value.message == message


@pytest.mark.parametrize("answer, approved", [
    ("n", False), ("no", False), ("", False), ("nah", False), ("y", True), ("YES", True),
    ("  yes ", True)])
def test_tty_answers(answer: str, approved: bool) -> None:
    master, slave = os.openpty()
    try:
        os.write(master, answer.encode() + b"\n")
        tty_path = f"/proc/self/fd/{slave}"  # the slave itself, whatever /dev/pts shows
        assert approve_cleanup("Approve?", yes=False, tty_path=tty_path) is approved
        shown = b""
        while b"Approve? [y/N] " not in shown and select.select([master], [], [], 10)[0]:
            shown += os.read(master, 4096)
        assert b"Approve? [y/N] " in shown
    finally:
        os.close(master)
        os.close(slave)


def test_yes_and_no_tty() -> None:
    err = io.StringIO()
    assert approve_cleanup("Approve?", yes=True, stderr=err) is True
    assert err.getvalue() == "Approve? — auto-approved (--yes)\n"
    err = io.StringIO()
    assert approve_cleanup("Approve?", yes=False, tty_path="/nonexistent/tty", stderr=err) \
        is False
    assert err.getvalue() == ("Approve? — no TTY attached, not approving "
                              "(worktree left in place)\n")
