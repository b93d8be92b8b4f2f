"""The storage floor's tool contract: what a tool handler sees of a call."""

from __future__ import annotations

from tavernlab.workspace.tools import Arguments, ToolContext, ToolResult, ToolSpec


def test_the_tool_context_carries_only_what_the_storage_and_engine_tools_use() -> None:
    """The list is pinned so that a member added for one tool family is a visible change."""
    members = [name for name in vars(ToolContext) if not name.startswith("_")]
    assert members == ["token", "scope", "records", "profile", "frozen", "skills",
                       "shell_deadline_s", "output", "clock", "ids", "file_written",
                       "patch_applied"]


def _nothing(ctx: ToolContext, args: Arguments) -> ToolResult:
    return ToolResult(content="")


def test_a_builtin_is_shown_as_builtin_and_its_id_with_underscores() -> None:
    spec = ToolSpec("workspace.read_file", _nothing, False, "Read.", ("path",))
    assert (spec.full_id, spec.model_name) == ("builtin:workspace.read_file",
                                               "workspace_read_file")
    assert spec.descriptor() == {
        "id": "builtin:workspace.read_file", "title": "workspace.read_file",
        "description": "Read.", "outputSchema": None, "annotations": {},
        "inputSchema": {"type": "object", "additionalProperties": False,
                        "properties": {"path": {}}, "required": []}}


def test_an_external_tool_keeps_its_id_and_declares_its_alias() -> None:
    spec = ToolSpec("mcp/s/a.b", _nothing, False, "A dot.", ("x",),
                    input_schema={"type": "object", "properties": {"x": {"type": "string"}}},
                    annotations={"readOnlyHint": True}, alias="mcp__s__a_b", builtin=False,
                    title="a.b")
    assert (spec.full_id, spec.model_name) == ("mcp/s/a.b", "mcp__s__a_b")
    assert spec.descriptor() == {
        "id": "mcp/s/a.b", "title": "a.b", "description": "A dot.", "outputSchema": None,
        "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}
