"""What the file tree's side pane shows for the selected node.

A text file shows its first lines (200 by default, more on request) out of its total; a binary
file its size and SHA-256; a directory how many entries it has; a refused node why it is
refused. A file counts as text when it decodes as UTF-8 and holds no NUL byte (tavernlab
choice). Visible files are read through the main agent's view (so ``skills/`` shows the
projected text the model reads); the run's hidden files through the run's storage port.
"""

from __future__ import annotations

from typing import Any

from tavernlab.errors import TavernlabError
from tavernlab.notebook.widgets._tree_state import Entry
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.storage import WorkspaceFs, sha256_hex

#: Lines the pane shows at first and adds per "more".
PREVIEW_LINES = 200


def read_node(scope: ScopedWorkspaceFs, fs: WorkspaceFs, entry: Entry) -> bytes:
    """The bytes of a file node, as the tree shows it: a visible node through the main
    agent's view ``scope``, a hidden one through the run's storage port ``fs``."""
    path = WorkspacePath.parse(entry.path)
    if entry.access.visible:
        return scope.read_file(path, None)
    return fs.read_file(path, None)


def decode_text(data: bytes) -> str | None:
    """The text of ``data``, or ``None`` when it is binary (see the module docstring)."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def node_preview(scope: ScopedWorkspaceFs, fs: WorkspaceFs, entry: Entry | None, path: str,
                 lines: int, entries_below: int = 0) -> dict[str, Any]:
    """The side pane's content for ``path`` (``entry`` is its node, ``None`` once gone),
    read through ``scope`` (visible files) or ``fs`` (the run's hidden files)."""
    if not path:
        return {}
    if entry is None:
        return {"path": path, "kind": "missing", "message": "no longer in the workspace"}
    head: dict[str, Any] = {"path": path, "name": entry.name, "access": entry.access.level,
                            "creates": entry.access.creates_children, "size": entry.size}
    if entry.kind == "directory":
        return {**head, "kind": "directory", "entries": entries_below}
    if entry.kind == "refused":
        return {**head, "kind": "refused", "message": f"refused: {entry.reason}"}
    try:
        data = read_node(scope, fs, entry)
    except TavernlabError as exc:
        return {**head, "kind": "error", "message": f"{exc.code}: {exc.message}"}
    head.update(size=len(data), sha256=sha256_hex(data))
    text = decode_text(data)
    if text is None:
        return {**head, "kind": "binary"}
    all_lines = text.splitlines()
    return {**head, "kind": "text", "lines": all_lines[:max(lines, 0)],
            "total_lines": len(all_lines)}
