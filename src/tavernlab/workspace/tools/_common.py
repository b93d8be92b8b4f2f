"""What the workspace tools share: storage errors as tool errors, the visibility and
writability checks every path argument goes through, and how listings report the entries
the workspace refused."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tavernlab.errors import (
    AccessDenied,
    FileNotText,
    ToolError,
    WorkspaceError,
)
from tavernlab.paths import WorkspacePath, display
from tavernlab.workspace.storage import WorkspaceRefusedEntry
from tavernlab.workspace.tools._tooling import (
    Arguments,
    ToolContext,
    access_denied,
    parse_tool_path,
    tool_error_from_storage,
)

#: The arguments of ``workspace.read_file`` (``skill.read`` forwards to it).
READ_FILE_ARGUMENTS = ("path", "start_line", "line_count")


def storage_error(error: WorkspaceError, path: str) -> ToolError:
    """A storage error as the text tools report it (``workspace.file_not_text`` worded with
    the path, the rest through :func:`tool_error_from_storage`)."""
    if isinstance(error, FileNotText):
        return ToolError("workspace.file_not_text", f"workspace file `{path}` is not UTF-8 text")
    return tool_error_from_storage(error, path)


def require_writable(ctx: ToolContext, path: WorkspacePath) -> None:
    """Refuse a path the calling agent may not write (``Permission denied: ...``)."""
    if not ctx.scope.is_writable(path):
        raise access_denied(AccessDenied(path.text, "write"))


def require_visible(ctx: ToolContext, path: WorkspacePath | None) -> None:
    """Refuse a path the calling agent may not read (``Permission denied: ...``)."""
    if not ctx.scope.is_visible(path):
        raise access_denied(AccessDenied(display(path), "read"))


def required_path(args: Arguments) -> WorkspacePath:
    """The required ``path`` of ``read_file``, ``write_file`` and ``apply_patch``: trimmed
    (missing, not a string or empty: ``tool.invalid_arguments`` ``path is required``), then
    parsed (``workspace.invalid_path``)."""
    return parse_tool_path(args.required_text("path"))


#: Optional paths (after trimming) that mean the logical root (docs/workspace.md).
ROOT_SPELLINGS = ("", ".", "./")


def optional_path(args: Arguments) -> WorkspacePath | None:
    """The optional ``path`` of ``list_files`` and ``search_files``: trimmed; absent,
    ``null``, empty, ``.`` or ``./`` mean the logical root (``None``); a non-string is
    ``path must be a string``."""
    raw = args.string("path")
    text = "" if raw is None else raw.strip()
    return None if text in ROOT_SPELLINGS else parse_tool_path(text)


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
