"""The model-facing workspace tools (docs/workspace.md).

``workspace.list_files``, ``workspace.search_files``, ``workspace.read_file``,
``workspace.write_file``, ``workspace.apply_patch``, ``workspace.commit`` and
``workspace.finish`` (the shell lives in :mod:`tavernlab.shell`). Each handler validates its
allow-listed arguments, works through the calling Invocation's scoped view and returns a
:class:`~tavernlab.workspace.tooling.ToolResult`; recoverable failures raise
:class:`~tavernlab.workspace.tooling.ToolError` with the upstream code.

Messages upstream does not fix are tavernlab's choices, documented next to each constant.
"""

from __future__ import annotations

from tavernlab.workspace.tooling import ToolSpec
from tavernlab.workspace.tools.control import (
    commit,
    finish,
    only_main_chat,
    return_only,
    task_return,
)
from tavernlab.workspace.tools.listing import list_files
from tavernlab.workspace.tools.reading import READ_FILE_ARGUMENTS, read_file
from tavernlab.workspace.tools.search import search_files
from tavernlab.workspace.tools.writing import (
    PATCH_EMPTY,
    PATCH_NO_CHANGE,
    PATCH_NOT_FOUND,
    PATCH_REQUIRES_FULL_READ,
    PATCH_REQUIRES_READ,
    PATCH_STALE,
    apply_patch,
    write_file,
)

#: The workspace tools (docs/workspace.md), in the order the model is offered them.
WORKSPACE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("workspace.list_files", list_files, False,
             "List visible workspace files and directories (depth <= 4, at most 200 entries).",
             ("path", "depth")),
    ToolSpec("workspace.search_files", search_files, False,
             "Search visible workspace text files for the words of a query.",
             ("query", "path", "limit", "context_lines")),
    ToolSpec("workspace.read_file", read_file, False,
             "Read a workspace file with line numbers (whole, or a window of lines).",
             READ_FILE_ARGUMENTS),
    ToolSpec("workspace.write_file", write_file, True,
             "Create, replace (after reading) or append to a workspace file.",
             ("path", "content", "mode")),
    ToolSpec("workspace.apply_patch", apply_patch, True,
             "Replace an exact string in a file you have read.",
             ("path", "old_string", "new_string", "replace_all")),
    ToolSpec("workspace.commit", commit, True,
             "Save a workspace file as this run's chat message (replace or append).",
             ("path", "mode", "reason"), available=only_main_chat("commit")),
    ToolSpec("workspace.finish", finish, True, "Finish the agent run.", ("reason",),
             available=only_main_chat("finish")),
    ToolSpec("task.return", task_return, True,
             "Return-mode sub-agents: hand the result back to the parent and end.",
             ("result",), available=return_only),
)

__all__ = [
    "PATCH_EMPTY", "PATCH_NOT_FOUND", "PATCH_NO_CHANGE", "PATCH_REQUIRES_FULL_READ",
    "PATCH_REQUIRES_READ", "PATCH_STALE", "READ_FILE_ARGUMENTS", "WORKSPACE_TOOLS",
    "apply_patch", "commit", "finish", "list_files", "read_file", "search_files",
    "task_return", "write_file",
]
