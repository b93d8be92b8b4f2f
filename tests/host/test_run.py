"""``Run``'s members: the user's verbs and facts on the run, the host's side behind
``run.internals``."""

from __future__ import annotations

import pytest

from tavernlab.host import Run
from tavernlab.host._run import RunInternals
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage._fs import WriteGuard

USER_MEMBERS = [
    "call_tool", "cancel", "chat", "dir", "events", "export", "files", "finish", "id",
    "internals", "js", "next_round", "persist_state_id", "read", "record", "resume", "round",
    "shell", "show", "skills", "start_subagent", "status", "subagents", "subscribe",
    "system_prompt", "tool_results", "tools", "tree", "workspace_dir",
]
INTERNAL_MEMBERS = [
    "context", "explicit_commits", "fs", "is_chat", "main", "output_target",
    "persist_snapshot", "profile", "scope", "shell_deadline_s", "tracker",
]


def public(cls: type) -> list[str]:
    return sorted(name for name in dir(cls) if not name.startswith("_"))


def test_run_has_the_users_verbs_and_facts_only() -> None:
    assert public(Run) == USER_MEMBERS
    assert public(RunInternals) == INTERNAL_MEMBERS
    assert not set(USER_MEMBERS) & set(INTERNAL_MEMBERS)


def test_the_internals_read_and_set_the_runs_live_state(run: Run) -> None:
    inner = run.internals
    assert inner is run.internals
    assert inner.main.id.startswith("inv_") and inner.scope is inner.main.scope
    assert inner.is_chat and inner.profile.id == "default"
    assert (inner.explicit_commits, inner.output_target) == (0, None)

    inner.scope.write_text(WorkspacePath.parse("output/main.md"), "hello\n",
                           WriteGuard.unchecked())
    assert run.read("output/main.md") == "hello\n"
    assert inner.fs.read_file(WorkspacePath.parse("output/main.md"), None) == b"hello\n"

    result = run.call_tool("workspace.commit", {"path": "output/main.md"})
    assert not result.is_error, result.content
    assert inner.explicit_commits == 1 and inner.output_target is not None

    inner.shell_deadline_s = 12.5
    assert run.internals.shell_deadline_s == 12.5
    with pytest.raises(ValueError, match="shell_deadline_s must be positive"):
        inner.shell_deadline_s = 0
    assert inner.shell_deadline_s == 12.5
