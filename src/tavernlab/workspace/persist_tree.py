"""A persist tree on disk: its files with digests, its directories, and the exact change
list between two trees (spec/workspace.md section 9, tavernlab's change-record format as
documented in :mod:`tavernlab.workspace.persist`)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tavernlab.errors import InvalidData
from tavernlab.events import Model
from tavernlab.workspace.containment import UNSUPPORTED_NODE, supported_node


class FileEntry(Model):
    """A file of a persist tree."""

    path: str
    sha256: str
    bytes: int


class PersistChange(Model):
    """One change of a publication."""

    kind: Literal["added", "modified", "deleted", "directoryAdded", "directoryDeleted"]
    path: str
    sha256: str | None = None
    bytes: int | None = None


def implied_directories(paths: Iterable[str]) -> set[str]:
    """Every ancestor directory of the given file paths."""
    out: set[str] = set()
    for path in paths:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            out.add("/".join(parts[:depth]))
    return out


@dataclass(frozen=True, slots=True)
class Tree:
    """A scanned persist tree: files with digests and sizes, and every directory."""

    files: dict[str, tuple[str, int]]
    directories: frozenset[str]

    def file_entries(self) -> list[FileEntry]:
        """Files sorted by path."""
        return [FileEntry(path=p, sha256=h, bytes=n) for p, (h, n) in sorted(self.files.items())]

    def same_as(self, files: list[FileEntry], directories: set[str]) -> bool:
        """Whether this tree equals a recorded one."""
        return (self.directories == directories and
                self.files == {f.path: (f.sha256, f.bytes) for f in files})


def scan_tree(root: Path, copy_to: Path | None = None) -> Tree:
    """Hash every file under ``root`` (optionally copying it to ``copy_to`` in the same pass).

    Symlinks, special files and hard links are refused, as everywhere in the workspace
    (:func:`~tavernlab.workspace.containment.supported_node`).
    """
    files: dict[str, tuple[str, int]] = {}
    directories: set[str] = set()
    if copy_to is not None:
        copy_to.mkdir(parents=True)

    def visit(host: str, rel: str) -> None:
        with os.scandir(host) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            child_rel = f"{rel}/{entry.name}" if rel else entry.name
            st = entry.stat(follow_symlinks=False)
            if not supported_node(st):
                raise InvalidData(UNSUPPORTED_NODE)
            if stat.S_ISDIR(st.st_mode):
                directories.add(child_rel)
                if copy_to is not None:
                    os.mkdir(copy_to / child_rel)
                visit(entry.path, child_rel)
            else:
                files[child_rel] = _hash_file(entry.path, None if copy_to is None
                                              else copy_to / child_rel)

    if root.exists():
        visit(str(root), "")
    return Tree(files, frozenset(directories))


def _hash_file(source: str, target: Path | None) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(source, "rb") as reader:
        if target is None:
            while chunk := reader.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
        else:
            with open(target, "wb") as writer:
                while chunk := reader.read(1 << 20):
                    digest.update(chunk)
                    writer.write(chunk)
                    size += len(chunk)
    return digest.hexdigest(), size


def diff_trees(base_files: dict[str, tuple[str, int]], base_dirs: set[str], tree: Tree
               ) -> list[PersistChange]:
    """The change list from a base inventory to ``tree`` (see the module docstring)."""
    changes: list[PersistChange] = []
    for path in sorted(set(base_files) | base_dirs | set(tree.files) | tree.directories):
        was_file, was_dir = path in base_files, path in base_dirs
        new = tree.files.get(path)
        is_dir = path in tree.directories
        if was_file and new is not None:
            if base_files[path][0] != new[0]:
                changes.append(PersistChange(kind="modified", path=path, sha256=new[0],
                                             bytes=new[1]))
        elif was_file:
            changes.append(PersistChange(kind="deleted", path=path))
            if is_dir:
                changes.append(PersistChange(kind="directoryAdded", path=path))
        elif was_dir and not is_dir:
            changes.append(PersistChange(kind="directoryDeleted", path=path))
            if new is not None:
                changes.append(PersistChange(kind="added", path=path, sha256=new[0],
                                             bytes=new[1]))
        elif not was_dir and is_dir:
            changes.append(PersistChange(kind="directoryAdded", path=path))
        elif not was_dir and new is not None:
            changes.append(PersistChange(kind="added", path=path, sha256=new[0], bytes=new[1]))
    return changes
