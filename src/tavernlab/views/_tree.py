"""The view of a workspace tree (:class:`~tavernlab.workspace.scope.TreeNode`): every node with
its size and what the model may do with it.

Each node says what the model may do with it: ``writable``, ``read-only``, ``hidden``, or for
a root the model writes in, ``writable root`` (everything inside may be created and changed;
the root itself stays). The text form draws the tree with box characters; the HTML form
nests ``<details>`` per directory, all open for a small tree and only the top level open for
a big one (:data:`OPEN_NODES`), so nothing is ever left out.
"""

from __future__ import annotations

from collections.abc import Callable

from tavernlab.views._markup import COLOURS, badge, code, escape, format_size
from tavernlab.workspace.scope import TreeNode

#: Trees with at most this many nodes show every directory open.
OPEN_NODES = 200

_ACCESS = {"hidden": ("hidden", "muted"), "read_only": ("read-only", "info"),
           "writable": ("writable", "ok")}


def _writable_root(node: TreeNode) -> bool:
    """A root the model may write in: the root itself cannot be renamed or removed (so its
    access level is not ``writable``), but everything may be created inside it."""
    return node.kind == "directory" and node.access.creates_children \
        and not node.access.writable


def _access(node: TreeNode) -> str:
    if _writable_root(node):
        return "writable root"
    return _ACCESS[node.access.level][0]


def _tone(node: TreeNode) -> str:
    return "ok" if _writable_root(node) else _ACCESS[node.access.level][1]


def _label(node: TreeNode) -> str:
    name = node.name or "/"
    if node.kind == "directory" and node.name:
        name += "/"
    parts = [name, format_size(node.size), _access(node)]
    if node.kind == "refused":
        parts.append(f"refused: {node.reason}")
    return "  ".join(p for p in parts if p)


def tree_text(root: TreeNode, *, title: str | None = None, limit: int | None = None,
              left_out: Callable[[int], str] | None = None) -> str:
    """The tree with ``├──``/``└──`` branches, each node with its size and access.

    ``title`` stands in the first line instead of the root's own label (a widget's static
    snapshot names the run). ``limit`` lists at most that many nodes below the root; the
    line ``left_out(shown)`` then says what was left out (nothing is dropped silently)."""
    lines = [_label(root) if title is None else title]
    shown = 0

    def walk(node: TreeNode, prefix: str) -> bool:
        nonlocal shown
        children = node.children or []
        for i, child in enumerate(children):
            if limit is not None and shown >= limit:
                return False
            shown += 1
            last = i == len(children) - 1
            lines.append(f"{prefix}{'└── ' if last else '├── '}{_label(child)}")
            if not walk(child, prefix + ("    " if last else "│   ")):
                return False
        return True

    if not walk(root, "") and left_out is not None:
        lines.append(left_out(shown))
    return "\n".join(lines)


def _head_html(node: TreeNode) -> str:
    tone = _tone(node)
    name = escape((node.name or "/") + ("/" if node.kind == "directory" and node.name else ""))
    badges = badge(_access(node), tone)
    if node.kind == "refused":
        badges += " " + badge(f"refused: {node.reason}", "error")
    muted = COLOURS["muted"]
    size = f' <span style="color:{muted}">{escape(format_size(node.size))}</span>' \
        if node.size is not None else ""
    return f"{code(name) if node.kind == 'file' else name}{size} {badges}"


class _Budget:
    """How many more nodes an HTML tree may list (``None``: all)."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit
        self.shown = 0

    def take(self) -> bool:
        if self.left is not None:
            if self.left <= 0:
                return False
            self.left -= 1
        self.shown += 1
        return True


def _node_html(node: TreeNode, depth: int, open_all: bool, head: str, budget: _Budget) -> str:
    if node.children is None:
        return f"<li>{head}</li>"
    parts = []
    for child in node.children:
        if not budget.take():
            break
        parts.append(_node_html(child, depth + 1, open_all, _head_html(child), budget))
    inner = "".join(parts)
    state = " open" if open_all or depth == 0 else ""
    body = f'<ul style="list-style:none;padding-left:1.2em;margin:0">{inner}</ul>' if inner \
        else ""
    return f"<li><details{state}><summary>{head}</summary>{body}</details></li>"


def tree_html(root: TreeNode, *, title: str | None = None, limit: int | None = None,
              left_out: Callable[[int], str] | None = None) -> str:
    """Nested lists of the tree, directories as ``<details>``; ``title``, ``limit`` and
    ``left_out`` as for :func:`tree_text` (the note follows the lists)."""
    open_all = sum(1 for _ in root.walk()) <= OPEN_NODES
    head = _head_html(root) if title is None else f"<b>{escape(title)}</b>"
    budget = _Budget(limit)
    html = (f'<ul style="list-style:none;padding-left:0;margin:4px 0">'
            f"{_node_html(root, 0, open_all, head, budget)}</ul>")
    total = sum(1 for _ in root.walk()) - 1
    if left_out is not None and budget.shown < total:
        html += f'<div style="color:{COLOURS["muted"]}">{escape(left_out(budget.shown))}</div>'
    return html
