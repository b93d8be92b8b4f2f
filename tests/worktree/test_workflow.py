"""The worktree-agent workflow with a Python callable as the agent host (the command line and
the daemon host are tested in ``test_worktree_agent_cli.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tavernlab.worktree import WorktreeNotRemovableError, run_worktree_agent
from tavernlab.worktree._workflow import APPROVAL_PROMPT, CallableAgentHost

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
