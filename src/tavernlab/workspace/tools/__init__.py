"""The model-facing workspace tools (docs/workspace.md).

``workspace.list_files``, ``workspace.search_files``, ``workspace.read_file``,
``workspace.write_file`` and ``workspace.apply_patch`` (the shell lives in
:mod:`tavernlab.shell`; ``workspace.commit``, ``workspace.finish`` and ``task.return`` are run
control, the host's own tools in :mod:`tavernlab.host._run_control`). Each handler validates its
allow-listed arguments, works through the calling Invocation's scoped view and returns a
:class:`~tavernlab.workspace.tools.ToolResult`; recoverable failures raise
:class:`~tavernlab.workspace.tools._tooling.ToolError` with the upstream code.

Messages upstream does not fix are tavernlab's choices, documented next to each constant.

The handlers of the reading tools (``list_files``, ``search_files``, ``read_file``) are
imported when a call first runs one (or when the name is first asked of this face): a process
that only writes never loads them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from tavernlab.lazy import lazy_names
from tavernlab.workspace.tools._common import READ_FILE_ARGUMENTS, require_visible, storage_error
from tavernlab.workspace.tools._tooling import (
    Arguments,
    ToolContext,
    ToolHandler,
    ToolResult,
    ToolSpec,
    compact_json,
    file_not_found,
    integer_property,
    invalid_arguments,
    object_schema,
    parse_tool_path,
    string_property,
)
from tavernlab.workspace.tools._writing import (
    PATCH_EMPTY,
    PATCH_NO_CHANGE,
    PATCH_NOT_FOUND,
    PATCH_REQUIRES_FULL_READ,
    PATCH_REQUIRES_READ,
    PATCH_STALE,
    apply_patch,
    write_file,
)

if TYPE_CHECKING:
    from tavernlab.workspace.tools._listing import list_files
    from tavernlab.workspace.tools._reading import read_file
    from tavernlab.workspace.tools._search import search_files

_HOMES = {
    "list_files": "tavernlab.workspace.tools._listing",
    "read_file": "tavernlab.workspace.tools._reading",
    "search_files": "tavernlab.workspace.tools._search",
}
__getattr__ = lazy_names(__name__, _HOMES)


def _on_first_call(name: str) -> ToolHandler:
    """The handler ``name`` of :data:`_HOMES`, its module imported on the first call."""
    found: list[ToolHandler] = []

    def handler(ctx: ToolContext, args: Arguments) -> ToolResult:
        if not found:
            found.append(getattr(importlib.import_module(_HOMES[name]), name))
        return found[0](ctx, args)

    handler.__name__ = handler.__qualname__ = name
    return handler


READ_ONLY = {"readOnly": True}
MUTATING = {"mutating": True}
_S, _I = string_property, integer_property

#: The workspace tools (docs/workspace.md), in the order the model is offered them,
#: each with upstream's title, base description, argument schema and annotations (what a
#: Profile's context then rewrites is the agent loop's, see :mod:`tavernlab.agent`).
WORKSPACE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("workspace.list_files", _on_first_call("list_files"), False,
             "List workspace files and directories. Use this to find paths before reading "
             "files.", ("path", "depth"), title="Workspace List Files",
             input_schema=object_schema({
                 "path": _S("Optional workspace directory or file path. Omit to list from "
                            "the workspace root."),
                 "depth": _I("Directory depth to list. Defaults to 2; maximum is 4."),
             }, []), annotations=READ_ONLY),
    ToolSpec("workspace.search_files", _on_first_call("search_files"), False,
             "Find text in workspace files. Results include snippets; use workspace_read_file "
             "for the full text or exact lines.", ("query", "path", "limit", "context_lines"),
             title="Workspace Search Files", input_schema=object_schema({
                 "query": _S("Plain text to search for in visible workspace files."),
                 "path": _S("Optional workspace file or directory path. Omit to search all "
                            "readable directories."),
                 "limit": _I("Maximum hits to return. Defaults to 20; maximum is 50."),
                 "context_lines": _I("Context lines before and after each match. Defaults "
                                     "to 2; maximum is 5."),
             }, ["query"]), annotations=READ_ONLY),
    ToolSpec("workspace.read_file", _on_first_call("read_file"), False,
             "Read a UTF-8 workspace file with line numbers. Use this to inspect text before "
             "editing. Large results include a preview and the next line to read.",
             READ_FILE_ARGUMENTS, title="Workspace Read File", input_schema=object_schema({
                 "path": _S("Workspace file path, such as output/main.md."),
                 "start_line": _I("1-based starting line. Omit to start at line 1.",
                                  minimum=1),
                 "line_count": _I("Number of lines to read. Omit to read through the end; "
                                  "oversized results return a shorter preview.", minimum=1),
             }, ["path"]), annotations=READ_ONLY),
    ToolSpec("workspace.write_file", write_file, True,
             "Create a UTF-8 text file, append text, or replace its full contents. Use "
             "workspace_apply_patch for local edits. Before replacing an existing file, read "
             "it with workspace_read_file unless you created or replaced its current contents "
             "with the text tools.", ("path", "content", "mode"), title="Workspace Write File",
             input_schema=object_schema({
                 "path": _S("Workspace file path in a writable directory."),
                 "content": _S("Complete file content for replace, or the exact text to add "
                               "for append. Include any needed newlines."),
                 "mode": _S("replace writes the complete file; append adds content to the "
                            "end, creating the file if missing. Defaults to replace.",
                            enum=["replace", "append"]),
             }, ["path", "content"]), annotations=MUTATING),
    ToolSpec("workspace.apply_patch", apply_patch, True,
             "Replace exact text in one file. Read the text with workspace_read_file first, "
             "unless you created or replaced the file with the text tools. old_string must "
             "match exactly and be unique unless replace_all is true. After a failed patch, "
             "read the full file before retrying.",
             ("path", "old_string", "new_string", "replace_all"), title="Workspace Apply Patch",
             input_schema=object_schema({
                 "path": _S("Workspace file path in a writable directory."),
                 "old_string": _S("Exact text to replace. Do not include line number prefixes "
                                  "from read output."),
                 "new_string": _S("Replacement text without line number prefixes."),
                 "replace_all": {"type": "boolean", "description": (
                     "Replace every occurrence of old_string. Requires a full read or a file "
                     "created/replaced with the text tools. Defaults to false.")},
             }, ["path", "old_string", "new_string"]), annotations=MUTATING),
)

__all__ = [
    "PATCH_EMPTY",
    "PATCH_NOT_FOUND",
    "PATCH_NO_CHANGE",
    "PATCH_REQUIRES_FULL_READ",
    "PATCH_REQUIRES_READ",
    "PATCH_STALE",
    "READ_FILE_ARGUMENTS",
    "WORKSPACE_TOOLS",
    "Arguments",
    "ToolContext",
    "ToolResult",
    "ToolSpec",
    "apply_patch",
    "compact_json",
    "file_not_found",
    "integer_property",
    "invalid_arguments",
    "list_files",
    "object_schema",
    "parse_tool_path",
    "read_file",
    "require_visible",
    "search_files",
    "storage_error",
    "string_property",
    "write_file",
]
