"""The file tree's data: the nodes of a run's workspace, kept current from the journal.

:class:`TreeState` starts from :meth:`Run.tree <tavernlab.host.Run.tree>` (name, size, access
and refusal reason of every node) and then changes only through
:class:`~tavernlab.events.FileChange` records (``created``, ``modified``, ``moved`` with its
``fromPath``, ``removed``), so the widget never polls the disk. Applying a record is
idempotent, which lets the widget subscribe *before* it reads the initial tree: a record that
the initial tree already reflects changes nothing when applied again.

Rows are the nodes in display order: depth first, directories before files, each group by
name (tavernlab choice, where ``run.tree`` sorts by name only). The run's own hidden files
are a snapshot taken when the tree is built: the host writes them without ``file_changed``
records, so only the model-visible workspace is live.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tavernlab.events import FileChange
from tavernlab.workspace.roots import Access
from tavernlab.workspace.scope import NodeKind, TreeNode

#: ``access_of(path, directory)``: what the model may do with a path (the run's policy).
AccessOf = Callable[[str, bool], Access]


@dataclass(slots=True)
class Entry:
    """One node as the tree shows it; ``sha256`` is known once a record reported it."""

    path: str
    name: str
    kind: NodeKind
    size: int | None
    access: Access
    reason: str | None = None
    sha256: str | None = None

    def row(self, depth: int) -> dict[str, Any]:
        """The node as the widget's front end receives it."""
        return {"path": self.path, "name": self.name, "kind": self.kind, "size": self.size,
                "access": self.access.level, "creates": self.access.creates_children,
                "reason": self.reason, "depth": depth}


def parent_of(path: str) -> str:
    """``a/b/c`` -> ``a/b``; a top-level path -> ``""`` (the workspace root)."""
    return path.rpartition("/")[0]


class TreeState:
    """The nodes below ``root`` (``""``: the whole workspace)."""

    def __init__(self, tree: TreeNode, access_of: AccessOf, *, include_hidden: bool) -> None:
        self.root = tree.path
        self.access_of = access_of
        self.include_hidden = include_hidden
        self.entries: dict[str, Entry] = {}
        self.children: dict[str, set[str]] = {self.root: set()}
        for node in tree.walk():
            if node.path != self.root:
                self._put(Entry(node.path, node.name, node.kind, node.size, node.access,
                                node.reason))

    # -- changing -----------------------------------------------------------------------------

    def _inside(self, path: str) -> bool:
        return self.root == "" or path.startswith(self.root + "/")

    def _put(self, entry: Entry) -> None:
        self.entries[entry.path] = entry
        self.children.setdefault(parent_of(entry.path), set()).add(entry.path)
        if entry.kind == "directory":
            self.children.setdefault(entry.path, set())

    def _ensure_parents(self, path: str) -> None:
        parent = parent_of(path)
        if parent == self.root or parent in self.entries:
            return
        self._ensure_parents(parent)
        self._put(Entry(parent, parent.rpartition("/")[2], "directory", None,
                        self.access_of(parent, True)))

    def _drop(self, path: str) -> list[Entry]:
        """Remove ``path`` and everything below it; returns the removed entries, top first."""
        entry = self.entries.pop(path, None)
        if entry is None:
            return []
        self.children.get(parent_of(path), set()).discard(path)
        removed = [entry]
        for child in sorted(self.children.pop(path, set())):
            removed.extend(self._drop(child))
        return removed

    def apply(self, change: FileChange) -> list[str]:
        """Apply one ``file_changed`` record; returns the paths to flash (the node for a
        creation, change or move, its parent for a removal)."""
        if change.change == "removed":
            if not self._inside(change.path) or not self._drop(change.path):
                return []
            return [parent_of(change.path)]
        moved = self._drop(change.from_path) if change.from_path else []
        if not self._inside(change.path):
            return []
        directory = change.node == "directory"
        access = self.access_of(change.path, directory)
        if not access.visible and not self.include_hidden:
            self._drop(change.path)
            return []
        self._ensure_parents(change.path)
        self._put(Entry(change.path, change.path.rpartition("/")[2], change.node, change.size,
                        access, sha256=change.sha256))
        self._move_below(moved, change.from_path, change.path)
        return [change.path]

    def _move_below(self, moved: list[Entry], source: str | None, target: str) -> None:
        """Re-create what was below a moved directory under its new path."""
        for entry in moved[1:]:
            path = target + entry.path[len(source or ""):]
            self._put(Entry(path, entry.name, entry.kind, entry.size,
                            self.access_of(path, entry.kind == "directory"), entry.reason,
                            entry.sha256))

    # -- reading ------------------------------------------------------------------------------

    def get(self, path: str) -> Entry | None:
        """The node at ``path``, if the tree has it."""
        return self.entries.get(path)

    def walk(self, path: str | None = None, depth: int = 0) -> Iterator[tuple[Entry, int]]:
        """``(entry, depth)`` in display order below ``path`` (default: the root)."""
        kids = [self.entries[p] for p in self.children.get(self.root if path is None else path,
                                                             ())]
        kids.sort(key=lambda e: (e.kind != "directory", e.name))
        for entry in kids:
            yield entry, depth
            if entry.kind == "directory":
                yield from self.walk(entry.path, depth + 1)

    def rows(self) -> list[dict[str, Any]]:
        """Every node in display order, as the front end receives them."""
        return [entry.row(depth) for entry, depth in self.walk()]

    def count_below(self, path: str) -> int:
        """How many direct children a directory has."""
        return len(self.children.get(path, ()))
