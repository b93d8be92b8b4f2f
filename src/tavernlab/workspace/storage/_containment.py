"""Containment: a workspace path is walked segment by segment and never leaves the
workspace directory (docs/workspace.md).

Every touched path is walked with ``lstat`` from the canonical workspace directory: a symlink
or special file anywhere fails with ``workspace supports regular files and directories``.
Because no segment can be ``..`` and every existing component must be a real directory, a
path cannot resolve outside the directory; this *is* upstream's "nearest existing ancestor
must resolve inside" check, done without a second ``realpath`` walk.

Two things make the walk cheap without weakening it:

* **what was looked at under the lock** - while the workspace lock is held, a directory found
  valid on the way to a path is remembered (:attr:`ContainedRoot.directories`), so the next
  path through it costs no system call there, and so is the ``lstat`` of every node looked at
  (:attr:`ContainedRoot.nodes`, from walks and directory scans). The storage port forgets a
  node (and its parent's ``lstat``) whenever it changes it, and a directory with everything
  below it when it removes or renames it; everything is forgotten when the lock is released
  (then another process may change the tree). Only the port changes the tree while the lock
  is held (a process that ignores the lock and plants a node *during* a hold is seen at the
  next hold, as with any check-then-use);
* **the lab's own hard links** (:class:`LabLinks`) - a regular file with more than one link
  is refused as planted (it could alias a file outside the run), unless it is one the lab
  made itself when it filled ``persist/`` from a persist state (tavernlab's rules, beyond
  upstream).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable, Collection, Iterable

from tavernlab.errors import FileIo, InvalidData
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage._atomic import open_regular
from tavernlab.workspace.storage._contract import (
    UNSUPPORTED_NODE,
    RefusedNode,
    WorkspaceDirectoryEntry,
    WorkspaceDirectoryScan,
    WorkspaceRefusedEntry,
    metadata_from_stat,
    not_found,
)

__all__ = ["UNSUPPORTED_NODE", "ContainedRoot", "LabLinks", "link_key", "refused_node",
           "supported_node"]

#: What identifies a file the lab linked: its inode, modification time and size. A file the
#: lab linked is never written in place (writes replace it, appends copy it first), so these
#: stay; an inode number reused by another file, or a file changed in place behind the
#: lab's back, no longer matches.
LinkKey = tuple[int, int, int]


def link_key(st: os.stat_result) -> LinkKey:
    """The :data:`LinkKey` of a regular file's ``lstat``."""
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class LabLinks:
    """The hard links the lab made in one workspace: a run's ``persist/`` is filled with
    links to the files of its base persist state.

    A regular file with several links is the lab's own when the lab made it (:meth:`add_all`,
    when the run starts) or, for a run reopened later, when its bytes are those of a file of
    the run's base state (``base()`` gives their ``(sha256, size)``; each inode is checked
    once): such an alias can only show what the run was given, and the port never writes a
    linked file in place. Any other file with several links is planted (it could alias a
    file outside the run) and refused. Nothing is recorded on disk, so replays stay
    byte-identical."""

    def __init__(self, device: int,
                 base: Callable[[], Iterable[tuple[str, int]]] | None = None) -> None:
        self.device = device
        self._base = base
        self._contents: set[tuple[str, int]] | None = None
        #: ``(sha256, size)`` of each link known to be the lab's, by key.
        self._known: dict[LinkKey, tuple[str, int]] = {}
        self._planted: set[LinkKey] = set()

    def add_all(self, links: Iterable[tuple[LinkKey, tuple[str, int]]]) -> None:
        """Links the lab just made: ``(key, content)`` each, ``content`` being the file's
        ``(sha256, size)``."""
        self._known.update(links)

    def content(self, st: os.stat_result) -> tuple[str, int] | None:
        """``(sha256, size)`` of the file ``st`` if it is a link known to be the lab's."""
        return self._known.get(link_key(st))

    def known(self) -> dict[LinkKey, tuple[str, int]]:
        """Every link known to be the lab's, with its ``(sha256, size)``."""
        return dict(self._known)

    def owns(self, st: os.stat_result, host: str | None) -> bool:
        """Whether the regular file ``st`` (an ``lstat`` of ``host``) is one of the lab's."""
        key = link_key(st)
        if key in self._known:
            return True
        if st.st_dev != self.device or key in self._planted or host is None:
            return False
        content = self._content_of(host, key)
        if content is None:
            self._planted.add(key)
            return False
        self._known[key] = content
        return True

    def _content_of(self, host: str, key: LinkKey) -> tuple[str, int] | None:
        """``(sha256, size)`` of ``host`` if it is still ``key`` and a base file's bytes."""
        if self._base is None:
            return None
        if self._contents is None:
            self._contents = set(self._base())
        if not any(size == key[2] for _, size in self._contents):
            return None
        try:
            fd = open_regular(host)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as handle:
            if link_key(os.fstat(handle.fileno())) != key:
                return None
            content = (hashlib.file_digest(handle, "sha256").hexdigest(), key[2])
        return content if content in self._contents else None


def refused_node(st: os.stat_result, links: LabLinks | None = None,
                 host: str | None = None) -> RefusedNode | None:
    """What a node (its ``lstat``) is when the workspace refuses it, ``None`` when it is
    served: the one rule for what may exist in a workspace. A directory and a regular file
    with one name are served, and so is a regular file that is one of the lab's own links
    (``links``); symlinks, FIFOs, sockets, devices and planted hard links (any other regular
    file with ``st_nlink > 1``, which could alias a file outside the run) are refused
    alike. ``host`` is where the node is (a reopened run's links are recognised by their
    bytes, see :class:`LabLinks`)."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return None
    if stat.S_ISREG(mode):
        if st.st_nlink == 1 or (links is not None and links.owns(st, host)):
            return None
        return "hard_link"
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


def supported_node(st: os.stat_result, links: LabLinks | None = None,
                   host: str | None = None) -> bool:
    """Whether the workspace serves this node (see :func:`refused_node`)."""
    return refused_node(st, links, host) is None


class ContainedRoot:
    """The canonical workspace directory ``root``, the walk that keeps paths inside it, and
    the lab's own links in it."""

    def __init__(self, root: str, links: LabLinks | None = None) -> None:
        self.root = root
        self.links = links if links is not None else LabLinks(os.lstat(root).st_dev)
        #: Host paths of directories validated while the lock is held (module docstring).
        self.directories: set[str] = set()
        #: ``lstat`` of served nodes looked at while the lock is held, by host path.
        self.nodes: dict[str, os.stat_result] = {}
        #: Counts the changes and releases: what was learnt at one generation holds until
        #: the next (callers above the port cache by it, see the shell bridge).
        self.generation = 0

    def refused(self, st: os.stat_result, host: str) -> RefusedNode | None:
        """:func:`refused_node` of the node at ``host`` with this workspace's own links."""
        return refused_node(st, self.links, host)

    def host(self, path: WorkspacePath | None) -> str:
        """The host path of a workspace path (plain string joins: a ``WorkspacePath`` is
        already normalized, with no ``.``, ``..`` or ``//``)."""
        return self.root if path is None else f"{self.root}/{path.text}"

    def check(self, path: WorkspacePath | None) -> os.stat_result | None:
        """Walk ``path`` with ``lstat``; return the target's stat or ``None`` if it is missing.

        A symlink or special file on the way fails with ``workspace supports regular files
        and directories``; a file used as a directory fails with a not-a-directory I/O error.
        """
        if path is None:
            return os.lstat(self.root)
        known = self.directories
        if self.root not in known:
            self._directory(os.lstat(self.root), path, self.root)
        parts = path.parts
        last = len(parts) - 1
        current = self.root
        # One pass from the root, one step per segment (the path's length and segment count
        # are bounded when it is parsed): a directory validated under this lock, or a node
        # whose ``lstat`` is remembered, costs no system call.
        for index, part in enumerate(parts):
            current = f"{current}/{part}"
            if index < last and current in known:
                continue
            st = self.nodes.get(current)
            if st is None:
                try:
                    st = os.lstat(current)
                except FileNotFoundError:
                    return None
                except OSError as exc:  # a name over NAME_MAX, a permission problem...
                    raise FileIo("resolve", path.text, exc) from None
                if refused_node(st, self.links, current) is not None:
                    raise InvalidData(UNSUPPORTED_NODE)
                self.nodes[current] = st
            if index < last:
                self._directory(st, path, current)
        return st

    def _directory(self, st: os.stat_result, path: WorkspacePath, host: str) -> None:
        """``host`` (on the way to ``path``) must be a directory; remember it."""
        if not stat.S_ISDIR(st.st_mode):
            raise FileIo("resolve", path.text, OSError(errno.ENOTDIR, "Not a directory"))
        self.directories.add(host)

    def changed(self, path: WorkspacePath) -> None:
        """The node ``path`` was created, written or removed: forget its ``lstat`` and its
        parent directory's (its entries, size and times changed)."""
        host = self.host(path)
        self.generation += 1
        self.nodes.pop(host, None)
        self.nodes.pop(host.rpartition("/")[0], None)

    def forget(self, path: WorkspacePath | None = None) -> None:
        """Forget the node ``path`` and everything below it (it is being removed or
        renamed), or everything (``None``: the lock is being released)."""
        if path is None:
            self.generation += 1
            self.directories.clear()
            self.nodes.clear()
            return
        self.changed(path)
        host = self.host(path)
        if host in self.directories:  # only then can anything below it be remembered
            below = host + "/"
            self.directories.difference_update(
                [d for d in self.directories if d == host or d.startswith(below)])
            for node in [n for n in self.nodes if n.startswith(below)]:
                del self.nodes[node]

    def scan(self, path: WorkspacePath | None, *, hidden: Collection[str] = ()
             ) -> WorkspaceDirectoryScan:
        """The children of the directory ``path`` (already checked), each sorted by path:
        regular files and directories as entries, anything else as refused entries; the names
        in ``hidden`` are left out. A name that is not UTF-8 fails (docs/workspace.md); OS errors
        propagate as ``OSError``."""
        entries: list[WorkspaceDirectoryEntry] = []
        refused: list[WorkspaceRefusedEntry] = []
        with os.scandir(self.host(path)) as it:
            for item in it:
                if item.name in hidden:
                    continue
                try:
                    item.name.encode("utf-8")
                except UnicodeEncodeError:
                    raise InvalidData(
                        f"Workspace entry name is not UTF-8 in {path.text if path else '/'}"
                    ) from None
                child_st = item.stat(follow_symlinks=False)
                child = item.name if path is None else f"{path.text}/{item.name}"
                node = refused_node(child_st, self.links, item.path)
                if node is not None:
                    refused.append(WorkspaceRefusedEntry(child, node))
                else:
                    self.nodes[item.path] = child_st
                    if stat.S_ISDIR(child_st.st_mode):
                        self.directories.add(item.path)
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
                host = os.path.join(dirpath, name)
                if refused_node(os.lstat(host), self.links, host) is not None:
                    raise InvalidData(UNSUPPORTED_NODE)
