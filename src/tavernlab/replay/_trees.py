"""Directories as bundles see them: scanned into a :class:`~.manifest.Tree`, written back.

Scanning refuses anything but regular files and directories (a planted symlink, FIFO or
device makes the run unexportable rather than silently skipped). Writing checks every target
against the directory it writes into, so a tree can never put a byte outside it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from tavernlab.replay._bundle import sha256_of
from tavernlab.replay._errors import BundleInvalid, RunNotExportable
from tavernlab.replay._manifest import Tree


def scan_tree(top: Path, *, add: Callable[[bytes], str] = sha256_of,
              skip: frozenset[str] = frozenset()) -> Tree:
    """Every file and directory below ``top`` (entries named in ``skip`` left out at any
    depth); ``add(bytes)`` receives each file's content and returns its digest."""
    tree = Tree()
    pending = [top]
    while pending:
        folder = pending.pop()
        with os.scandir(folder) as entries:
            listed = sorted(entries, key=lambda e: e.name)
        for entry in listed:
            if entry.name in skip:
                continue
            path = Path(entry.path)
            relative = path.relative_to(top).as_posix()
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                tree.directories.append(relative)
                pending.append(path)
            elif stat.S_ISREG(mode):
                tree.files[relative] = add(path.read_bytes())
            else:
                raise RunNotExportable(f"{path} is not a regular file or directory")
    tree.directories.sort()
    tree.files = dict(sorted(tree.files.items()))
    return tree


def inside(top: Path, relative: str) -> Path:
    """``top / relative``, refused when it would resolve outside ``top``."""
    base = top.resolve()
    target = (base / relative).resolve()
    if target != base and not target.is_relative_to(base):
        raise BundleInvalid(f"`{relative}` would be written outside {base}")
    return target


def write_tree(top: Path, tree: Tree, blob: Callable[[str], bytes]) -> None:
    """Create ``top`` holding ``tree`` (bytes from ``blob(digest)``); ``top`` must not exist."""
    top.mkdir(parents=True)
    for directory in tree.directories:
        inside(top, directory).mkdir(parents=True, exist_ok=True)
    for path, digest in tree.files.items():
        target = inside(top, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob(digest))
