"""What the workspace tools share: storage errors as tool errors, and the visibility and
writability checks every path argument goes through."""

from __future__ import annotations

from tavernlab.errors import (
    FileNotText,
    ToolError,
    WorkspaceError,
)
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.tooling import (
    ToolContext,
    tool_error_from_storage,
)


def storage_error(error: WorkspaceError, path: str) -> ToolError:
    """A storage error as the text tools report it (``workspace.file_not_text`` worded with
    the path, the rest through :func:`tool_error_from_storage`)."""
    if isinstance(error, FileNotText):
        return ToolError("workspace.file_not_text", f"workspace file `{path}` is not UTF-8 text")
    return tool_error_from_storage(error, path)


def require_writable(ctx: ToolContext, path: WorkspacePath) -> None:
    """Refuse a path the calling agent may not write."""
    if not ctx.scope.is_writable(path):
        raise ToolError("workspace.path_not_writable",
                        f"`{path.text}` is not writable for this task.")


def require_visible(ctx: ToolContext, path: WorkspacePath | None) -> None:
    """Refuse a path the calling agent may not read."""
    if not ctx.scope.is_visible(path):
        raise ToolError("workspace.path_not_visible",
                        f"`{path.text if path else ''}` is not readable for this task.")
