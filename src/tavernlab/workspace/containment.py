"""Containment: a workspace path is walked segment by segment and never leaves the
workspace directory (spec/workspace.md section 5.4).

Every touched path is walked with ``lstat`` from the canonical workspace directory: a symlink
or special file anywhere fails with ``workspace supports regular files and directories``.
Because no segment can be ``..`` and every existing component must be a real directory, a
path cannot resolve outside the directory; this *is* upstream's "nearest existing ancestor
must resolve inside" check, done without a second ``realpath`` walk.
"""

from __future__ import annotations

import errno
import os
import stat

from tavernlab.errors import FileIo, InvalidData
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.contract import (
    UNSUPPORTED_NODE,
    RefusedNode,
    WorkspaceDirectoryEntry,
    WorkspaceDirectoryScan,
    WorkspaceRefusedEntry,
    metadata_from_stat,
    not_found,
)

__all__ = ["UNSUPPORTED_NODE", "ContainedRoot", "refused_node", "supported_node"]


def refused_node(st: os.stat_result) -> RefusedNode | None:
    """What a node (its ``lstat``) is when the workspace refuses it, ``None`` when it is
    served: the one rule for what may exist in a workspace. A directory and a regular file
    with one name are served; symlinks, FIFOs, sockets, devices and planted hard links (a
    regular file with ``st_nlink > 1``, which could alias a file outside the run; this rule is
    tavernlab's, beyond upstream) are refused alike."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return None
    if stat.S_ISREG(mode):
        return None if st.st_nlink == 1 else "hard_link"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISBLK(mode):
        return "block_device"
    if stat.S_ISCHR(mode):
        return "char_device"
    return "unknown"


def supported_node(st: os.stat_result) -> bool:
    """Whether the workspace serves this node (see :func:`refused_node`)."""
    return refused_node(st) is None


class ContainedRoot:
    """The canonical workspace directory ``root`` and the walk that keeps paths inside it."""

    def __init__(self, root: str) -> None:
        self.root = root

    def host(self, path: WorkspacePath | None) -> str:
        """The host path of a workspace path (plain string joins: a ``WorkspacePath`` is
        already normalized, with no ``.``, ``..`` or ``//``)."""
        return self.root if path is None else f"{self.root}/{path.text}"

    def check(self, path: WorkspacePath | None) -> os.stat_result | None:
        """Walk ``path`` with ``lstat``; return the target's stat or ``None`` if it is missing.

        A symlink or special file on the way fails with ``workspace supports regular files
        and directories``; a file used as a directory fails with a not-a-directory I/O error.
        """
        current = self.root
        st = os.lstat(current)
        if path is None:
            return st
        for part in path.parts:
            if not stat.S_ISDIR(st.st_mode):
                raise FileIo("resolve", path.text, OSError(errno.ENOTDIR, "Not a directory"))
            current = f"{current}/{part}"
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                return None
            except OSError as exc:  # a name over NAME_MAX, a permission problem...
                raise FileIo("resolve", path.text, exc) from None
            if not supported_node(st):
                raise InvalidData(UNSUPPORTED_NODE)
        return st

    def scan(self, path: WorkspacePath | None, *, hidden: str | None = None
             ) -> WorkspaceDirectoryScan:
        """The children of the directory ``path`` (already checked), each sorted by path:
        regular files and directories as entries, anything else as refused entries; the name
        ``hidden`` is left out. A name that is not UTF-8 fails (spec 5.2); OS errors
        propagate as ``OSError``."""
        entries: list[WorkspaceDirectoryEntry] = []
        refused: list[WorkspaceRefusedEntry] = []
        with os.scandir(self.host(path)) as it:
            for item in it:
                if item.name == hidden:
                    continue
                try:
                    item.name.encode("utf-8")
                except UnicodeEncodeError:
                    raise InvalidData(
                        f"Workspace entry name is not UTF-8 in {path.text if path else '/'}"
                    ) from None
                child_st = item.stat(follow_symlinks=False)
                child = item.name if path is None else f"{path.text}/{item.name}"
                node = refused_node(child_st)
                if node is not None:
                    refused.append(WorkspaceRefusedEntry(child, node))
                else:
                    entries.append(WorkspaceDirectoryEntry(child, metadata_from_stat(child_st)))
        entries.sort(key=lambda e: e.path)
        refused.sort(key=lambda e: e.path)
        return WorkspaceDirectoryScan(entries, refused)

    def require_parent_dir(self, path: WorkspacePath) -> None:
        """The parent of ``path`` exists and is a directory."""
        parent = path.parent
        st = self.check(parent)
        if st is None:
            raise not_found(parent if parent is not None else path)
        if not stat.S_ISDIR(st.st_mode):
            raise FileIo("write", path.text, OSError(errno.ENOTDIR, "Not a directory"))

    def check_tree(self, host: str) -> None:
        """Every node below the host directory ``host`` is a regular file or directory."""
        for dirpath, dirnames, filenames in os.walk(host):
            for name in (*dirnames, *filenames):
                if not supported_node(os.lstat(os.path.join(dirpath, name))):
                    raise InvalidData(UNSUPPORTED_NODE)
