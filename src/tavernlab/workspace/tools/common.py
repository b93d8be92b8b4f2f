"""What the workspace tools share: storage errors as tool errors, the visibility and
writability checks every path argument goes through, and how listings report the entries
the workspace refused."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tavernlab.errors import (
    FileNotText,
    ToolError,
    WorkspaceError,
)
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.contract import WorkspaceRefusedEntry
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


#: How many refused entries a listing names in its content; ``structured`` has all of them.
REFUSED_NAMED = 20


def refused_note(refused: Sequence[WorkspaceRefusedEntry]) -> str:
    """The content note of ``workspace.list_files`` and ``workspace.search_files`` for the
    symlinks and special files they skipped (tavernlab wording; upstream fails the whole
    listing instead): ``\n\nSkipped 1 entry that is not a regular file or directory:
    scratch/pipe (fifo).``, ``Skipped <K> entries that are not regular files or
    directories: ...`` for K > 1, naming at most 20 and then ``, and <M> more``. Empty when
    nothing was refused."""
    if not refused:
        return ""
    named = ", ".join(f"{entry.path} ({entry.node})" for entry in refused[:REFUSED_NAMED])
    if len(refused) > REFUSED_NAMED:
        named += f", and {len(refused) - REFUSED_NAMED} more"
    if len(refused) == 1:
        return f"\n\nSkipped 1 entry that is not a regular file or directory: {named}."
    return (f"\n\nSkipped {len(refused)} entries that are not regular files or directories: "
            f"{named}.")


def refused_structured(refused: Sequence[WorkspaceRefusedEntry]) -> dict[str, Any]:
    """``{"refusedEntries": [{path, node}, ...]}`` when entries were refused, else ``{}``: the
    key is added to a listing's ``structured`` only when needed, so ordinary results keep
    upstream's shape (tavernlab choice)."""
    return {"refusedEntries": [entry.to_json() for entry in refused]} if refused else {}
