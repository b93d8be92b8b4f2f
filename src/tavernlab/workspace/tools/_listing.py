"""``workspace.list_files`` (docs/workspace.md)."""

from __future__ import annotations

from tavernlab.errors import (
    ToolError,
    WorkspaceError,
)
from tavernlab.workspace.tools._common import (
    optional_path,
    refused_note,
    refused_structured,
    require_visible,
)
from tavernlab.workspace.tools._tooling import (
    Arguments,
    ToolContext,
    ToolResult,
    invalid_arguments,
    tool_error_from_storage,
)

LIST_MAX_ENTRIES = 200
LIST_DEFAULT_DEPTH = 2
LIST_MAX_DEPTH = 4


def list_files(ctx: ToolContext, args: Arguments) -> ToolResult:
    """``workspace.list_files``: entries below a path (or the visible roots), depth <= 4.

    ``path`` is trimmed; absent, ``null``, empty, ``.`` or ``./`` list the root. ``depth``
    follows the common integer rule (a negative value is ``depth must be a non-negative
    integer``); upstream does not say what ``depth: 0`` does, and tavernlab refuses it with
    ``tool.invalid_arguments`` ``depth must be >= 1``. A symlink or special file below the
    path is skipped and reported (:func:`~tavernlab.workspace.tools._common.refused_note`,
    ``structured.refusedEntries``); it takes one of the 200 places.
    """
    depth = args.integer("depth", default=LIST_DEFAULT_DEPTH)
    if depth > LIST_MAX_DEPTH:
        raise ToolError("workspace.list_depth_too_large", f"depth must be <= {LIST_MAX_DEPTH}")
    if depth < 1:
        raise invalid_arguments("depth must be >= 1")
    path = optional_path(args)
    require_visible(ctx, path)
    display = path.text if path else ""
    try:
        listing = ctx.scope.list_files(path, depth, LIST_MAX_ENTRIES)
    except WorkspaceError as exc:
        raise tool_error_from_storage(exc, display, not_found_code="workspace.path_not_found"
                                      ) from None
    lines = [e.path + ("/" if e.kind == "directory" else "") for e in listing.entries]
    if listing.truncated:
        lines.append(f"... truncated at {LIST_MAX_ENTRIES} entries")
    content = "\n".join(lines) if lines else "No visible workspace files found."
    return ToolResult(
        content=content + refused_note(listing.refused),
        structured={"entries": [{"path": e.path, "kind": e.kind} for e in listing.entries],
                    "truncated": listing.truncated, **refused_structured(listing.refused)},
        resource_refs=[e.path for e in listing.entries],
    )
