"""The workspace as a tree, with what the model may do at every node.

:func:`build_tree` walks a run's workspace through an agent's scoped view: every node carries
its :class:`~tavernlab.workspace.roots.Access` (hidden, read-only or writable, and whether it
takes new children), ``skills/`` shows the projected view the model reads, and with
``include_hidden`` the run's own files (``input/``, ``run.json``, ``events.jsonl`` …) appear
marked hidden. A node the workspace refuses (a planted symlink, FIFO, socket, device or hard
link) is listed with kind ``refused`` instead of failing the whole listing. A node's
``sha256`` is computed on demand, through the same view.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from tavernlab.errors import AccessDenied, InvalidData
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.roots import SKILLS_ROOT, Access
from tavernlab.workspace.scope._scope import ScopedWorkspaceFs
from tavernlab.workspace.storage import INTERNAL_NAMES, TEMP_PREFIX, not_found, sha256_hex

NodeKind = Literal["file", "directory", "refused"]


@dataclass(frozen=True, slots=True)
class TreeNode:
    """One node of :func:`build_tree`: ``path`` is ``""`` for the workspace root;
    ``children`` is ``None`` for a file, a refused node, or a directory below the depth;
    ``reason`` says what a refused node is (``symlink``, ``fifo``, ``socket``, ``hard_link``…)."""

    name: str
    path: str
    kind: NodeKind
    size: int | None
    access: Access
    children: list[TreeNode] | None = None
    reason: str | None = None
    _read: Callable[[str], bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def sha256(self) -> str | None:
        """The file's SHA-256, read now (``None`` for directories and refused nodes)."""
        if self.kind != "file" or self._read is None:
            return None
        return sha256_hex(self._read(self.path))

    def walk(self) -> Iterator[TreeNode]:
        """This node and every node below it, depth first."""
        yield self
        for child in self.children or ():
            yield from child.walk()

    def find(self, path: str) -> TreeNode | None:
        """The node at ``path`` (``""`` is this root), if the tree has it."""
        return next((node for node in self.walk() if node.path == path), None)


def build_tree(scope: ScopedWorkspaceFs, path: str = "", *, depth: int | None = None,
               include_hidden: bool = False) -> TreeNode:
    """The tree below ``path`` (``""``: the whole workspace) as the scope's agent sees it;
    ``depth`` levels below it (``None``: all)."""
    start = WorkspacePath.parse_optional(path or None)
    if not include_hidden and not scope.policy.is_visible(start):
        raise AccessDenied(path, "read")
    if depth is not None and depth < 0:
        raise InvalidData("depth must be a non-negative integer")
    return _Walker(scope, include_hidden).node(start, depth)


class _Walker:
    def __init__(self, scope: ScopedWorkspaceFs, include_hidden: bool) -> None:
        self.scope = scope
        self.policy = scope.policy
        self.root = str(scope.fs.directory)
        self.include_hidden = include_hidden

    def _read(self, path: str) -> bytes:
        return self.scope.read_file(WorkspacePath(path), None)

    def node(self, path: WorkspacePath | None, depth: int | None) -> TreeNode:
        name = path.name if path is not None else ""
        text = path.text if path is not None else ""
        if path is not None and path.root == SKILLS_ROOT:
            return self._skills_node(path, depth)
        host = f"{self.root}/{text}" if text else self.root
        try:
            st = os.lstat(host)
        except FileNotFoundError:
            raise not_found(text) from None
        directory = stat.S_ISDIR(st.st_mode)
        access = self.policy.access(path, directory=directory)
        refused = self.scope.fs.containment.refused(st, host)
        if refused is not None:
            return TreeNode(name, text, "refused", None, access, reason=refused)
        if not directory:
            return TreeNode(name, text, "file", st.st_size, access, _read=self._read)
        children = None
        if depth is None or depth > 0:
            children = [self.node(child, None if depth is None else depth - 1)
                        for child in self._children(path, host)]
        return TreeNode(name, text, "directory", None, access, children)

    def _children(self, path: WorkspacePath | None, host: str) -> list[WorkspacePath]:
        names = sorted(os.listdir(host))
        if path is None and SKILLS_ROOT in self.policy.visible_roots \
                and SKILLS_ROOT not in names:
            names = sorted([*names, SKILLS_ROOT])
        out = []
        for name in names:
            if name in INTERNAL_NAMES or name.startswith(TEMP_PREFIX):
                continue
            child = WorkspacePath(name) if path is None else path.join(name)
            if self.include_hidden or self.policy.is_visible(child):
                out.append(child)
        return out

    def _skills_node(self, path: WorkspacePath, depth: int | None) -> TreeNode:
        """``skills/`` as the model reads it: the bound packages, macro-projected."""
        metadata = self.scope.metadata(path)
        access = self.policy.access(path, directory=metadata.is_dir)
        if not metadata.is_dir:
            return TreeNode(path.name, path.text, "file", metadata.bytes, access,
                            _read=self._read)
        children = None
        if depth is None or depth > 0:
            children = [self._skills_node(WorkspacePath(entry.path),
                                          None if depth is None else depth - 1)
                        for entry in self.scope.read_dir(path, None)]
        return TreeNode(path.name, path.text, "directory", None, access, children)
