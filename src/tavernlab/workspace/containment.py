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
from tavernlab.workspace.contract import not_found

UNSUPPORTED_NODE = "workspace supports regular files and directories"


def supported_node(st: os.stat_result) -> bool:
    """The one rule for what may exist in a workspace: a directory, or a regular file with
    one name. Symlinks, FIFOs, sockets, devices and planted hard links (a regular file with
    ``st_nlink > 1``, which could alias a file outside the run) are refused alike (the hard
    link rule is tavernlab's, beyond upstream)."""
    mode = st.st_mode
    return stat.S_ISDIR(mode) or (stat.S_ISREG(mode) and st.st_nlink == 1)


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
