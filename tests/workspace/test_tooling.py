"""The storage floor's tool contract: what a tool handler sees of a call."""

from __future__ import annotations

from tavernlab.workspace.tooling import ToolContext


def test_the_tool_context_carries_only_what_the_storage_and_engine_tools_use() -> None:
    """The list is pinned so that a member added for one tool family is a visible change."""
    members = [name for name in vars(ToolContext) if not name.startswith("_")]
    assert members == ["token", "scope", "records", "profile", "frozen", "skills",
                       "shell_deadline_s", "output", "clock", "ids", "file_written",
                       "patch_applied"]
