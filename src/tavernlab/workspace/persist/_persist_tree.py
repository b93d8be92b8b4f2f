"""A persist tree on disk: its files with digests, its directories, the exact change list
between two trees, and the hard links that make states cost what changed (docs/persist.md;
tavernlab's change-record format as documented in
:mod:`tavernlab.workspace.persist._persist`).

Storage by changes (tavernlab's own): a state keeps upstream's layout
(``persistent-states/<id>/{manifest.json, persist/...}``), but a file that did not change
since the base state is a hard link to the base state's file. Filling a run's ``persist/``
from a state links every file (:func:`link_tree`), and the run records each link it made
(:class:`~tavernlab.workspace.storage.LabLinks`, so its containment serves them while it
still refuses planted links). Publishing links each file that is still one of those links
(its digest is the base's, nothing is read) and copies every other one
(:func:`scan_tree` then :func:`materialize`). Where the filesystem cannot link (another
device, too many links, no support) the file is copied. Copied state files are made
read-only (``0o444``), which their links share: the storage port never writes a linked file
in place (:mod:`tavernlab.workspace.storage._atomic`), and other writers are warned off.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple, get_args

from pydantic import PlainSerializer, PlainValidator

from tavernlab.errors import InvalidData
from tavernlab.workspace.storage import (
    UNSUPPORTED_NODE,
    LabLinks,
    LinkKey,
    link_key,
    refused_node,
)

#: Errors of ``link()`` that mean "copy instead": another device, too many links, no hard
#: links on this filesystem, not permitted.
_CANNOT_LINK = frozenset({errno.EXDEV, errno.EMLINK, errno.EPERM, errno.ENOTSUP, errno.EACCES})
#: The mode of a file copied into a state (its links share it).
STATE_FILE_MODE = 0o444


class FileEntry(NamedTuple):
    """A file of a persist tree: ``{"path", "sha256", "bytes"}`` on disk. A named tuple, not
    a model: a state's manifest and a run's snapshot list every file, and building tens of
    thousands of models cost more than linking the files (bench/persist.py); :data:`FileList`
    validates and writes a whole list in one pass."""

    path: str
    sha256: str
    bytes: int


_ENTRY_KEYS = frozenset({"path", "sha256", "bytes"})


def _file_list(value: Any) -> list[FileEntry]:
    """A JSON list of file entries, checked exactly (no coercion, no unknown keys)."""
    if not isinstance(value, list):
        raise ValueError("files must be a list")
    try:  # the common case in one pass; any doubt goes through the entry-by-entry check
        entries = [item if type(item) is FileEntry else FileEntry(**item) for item in value]
    except TypeError:
        entries = []
    if len(entries) == len(value) and all(
            type(e.path) is str and type(e.sha256) is str and type(e.bytes) is int
            for e in entries):
        return entries
    return [_file_entry(index, item) for index, item in enumerate(value)]


def _file_entry(index: int, item: Any) -> FileEntry:
    if isinstance(item, FileEntry):
        return item
    if not isinstance(item, dict) or item.keys() != _ENTRY_KEYS:
        raise ValueError(f"files[{index}] must be an object of path, sha256 and bytes")
    path, digest, size = item["path"], item["sha256"], item["bytes"]
    if type(path) is not str or type(digest) is not str or type(size) is not int:
        raise ValueError(f"files[{index}]: path and sha256 must be strings, bytes an integer")
    return FileEntry(path, digest, size)


def _file_dicts(entries: list[FileEntry]) -> list[dict[str, Any]]:
    # unpacking each tuple: a third faster than three attribute lookups per entry
    return [{"path": path, "sha256": digest, "bytes": size} for path, digest, size in entries]


#: A model field holding file entries (validated and dumped in bulk).
FileList = Annotated[list[FileEntry], PlainValidator(_file_list),
                     PlainSerializer(_file_dicts, return_type=list[dict[str, Any]])]


ChangeKind = Literal["added", "modified", "deleted", "directoryAdded", "directoryDeleted"]
_CHANGE_KINDS = frozenset(get_args(ChangeKind))
_CHANGE_KEYS = frozenset({"kind", "path", "sha256", "bytes"})


class PersistChange(NamedTuple):
    """One change of a publication: ``{"kind", "path", "sha256"?, "bytes"?}`` on disk (a
    named tuple, like :class:`FileEntry`; a first state lists every file as ``added``)."""

    kind: ChangeKind
    path: str
    sha256: str | None = None
    bytes: int | None = None


def _change_list(value: Any) -> list[PersistChange]:
    """A JSON list of changes, checked exactly (no coercion, no unknown keys)."""
    if not isinstance(value, list):
        raise ValueError("changes must be a list")
    changes: list[PersistChange] = []
    for index, item in enumerate(value):
        if isinstance(item, PersistChange):
            changes.append(item)
            continue
        if not isinstance(item, dict) or not {"kind", "path"} <= item.keys() <= _CHANGE_KEYS:
            raise ValueError(f"changes[{index}] must be an object of kind, path and optional "
                             "sha256 and bytes")
        kind, path = item["kind"], item["path"]
        digest, size = item.get("sha256"), item.get("bytes")
        if (kind not in _CHANGE_KINDS or type(path) is not str
                or (digest is not None and type(digest) is not str)
                or (size is not None and type(size) is not int)):
            raise ValueError(f"changes[{index}]: kind must be one of "
                             f"{', '.join(sorted(_CHANGE_KINDS))}, path and sha256 strings, "
                             "bytes an integer")
        changes.append(PersistChange(kind, path, digest, size))
    return changes


def _change_dicts(changes: list[PersistChange]) -> list[dict[str, Any]]:
    return [{k: v for k, v in zip(_CHANGE_FIELDS, change, strict=True) if v is not None}
            for change in changes]


_CHANGE_FIELDS = PersistChange._fields
#: A model field holding a change list (validated and dumped in bulk; absent digests and
#: sizes are left out, as upstream-style ``exclude_none`` writes them).
ChangeList = Annotated[list[PersistChange], PlainValidator(_change_list),
                       PlainSerializer(_change_dicts, return_type=list[dict[str, Any]])]


#: ``FileEntry(*values)`` for a ``(path, sha256, bytes)`` tuple, called from C.
_new_entry = partial(tuple.__new__, FileEntry)


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
    """A scanned persist tree: files with digests and sizes, and every directory. ``hosts``
    says where each file is on disk and ``shared`` which of them may be linked into a state
    (the unchanged links of the base state)."""

    files: dict[str, tuple[str, int]]
    directories: frozenset[str]
    hosts: dict[str, str] = field(default_factory=dict)
    shared: frozenset[str] = frozenset()

    def file_entries(self) -> list[FileEntry]:
        """Files sorted by path (the entries made in C: no Python frame per file)."""
        files = self.files
        paths = sorted(files)
        contents = list(map(files.__getitem__, paths))
        return list(map(_new_entry, zip(paths, map(itemgetter(0), contents),
                                        map(itemgetter(1), contents), strict=True)))

    def same_as(self, files: list[FileEntry], directories: set[str]) -> bool:
        """Whether this tree equals a recorded one."""
        return (self.directories == directories and
                self.files == {f.path: (f.sha256, f.bytes) for f in files})


def walk(root: Path, *, links: LabLinks | None = None, state: bool = False
         ) -> Iterator[tuple[str, str, os.stat_result]]:
    """``(relative path, host path, lstat)`` of every node below ``root``, parents first,
    each level sorted by name. A node the workspace refuses fails with ``workspace supports
    regular files and directories``: symlinks and special files always, hard links unless
    they are the run's own (``links``) or the tree is a state's (``state``: its files are
    the lab's links by construction)."""
    pending = [(str(root), "")]
    while pending:
        host, rel = pending.pop()
        with os.scandir(host) as it:
            entries = sorted(it, key=lambda e: e.name)
        below = []
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            st = entry.stat(follow_symlinks=False)
            refused = refused_node(st, links, entry.path)
            if refused is not None and not (state and refused == "hard_link"):
                raise InvalidData(UNSUPPORTED_NODE)
            yield child, entry.path, st
            if stat.S_ISDIR(st.st_mode):
                below.append((entry.path, child))
        pending.extend(reversed(below))


def scan_tree(root: Path, *, links: LabLinks | None = None, state: bool = False) -> Tree:
    """Every file under ``root`` with its digest and size, and every directory (see
    :func:`walk`). A file that is one of the run's ``links`` (a link of the base state the
    run still has) takes the digest known for it, without being read again."""
    files: dict[str, tuple[str, int]] = {}
    hosts: dict[str, str] = {}
    shared: set[str] = set()
    directories: set[str] = set()
    if root.exists():
        walked = list(walk(root, links=links, state=state))  # refusals first, then links
        known = {} if links is None else links.known()
        for rel, host, st in walked:
            if stat.S_ISDIR(st.st_mode):
                directories.add(rel)
                continue
            hosts[rel] = host
            recorded = None if st.st_nlink < 2 else known.get(link_key(st))
            if recorded is not None:
                files[rel] = recorded
                shared.add(rel)
            else:
                files[rel] = _hash_file(host)
    return Tree(files, frozenset(directories), hosts, frozenset(shared))


def materialize(tree: Tree, target: Path) -> None:
    """Create ``target`` holding ``tree``: its directories, a link to each shared file (a
    copy where the filesystem refuses the link), a read-only copy of every other file."""
    target.mkdir(parents=True)
    root = str(target)
    for directory in sorted(tree.directories):
        os.mkdir(f"{root}/{directory}")
    for rel, host in tree.hosts.items():
        if rel in tree.shared:
            link_or_copy(host, f"{root}/{rel}")
        else:
            copy_file(host, f"{root}/{rel}", mode=STATE_FILE_MODE)


def copy_tree(root: Path, target: Path, *, links: LabLinks | None = None) -> Tree:
    """:func:`scan_tree` then :func:`materialize` in one walk, for a publication that needs
    no comparison first: each directory made as it is found, each of the run's ``links``
    linked (its digest the recorded one; a copy where the filesystem refuses the link),
    every other file copied read-only and hashed as it is copied. Returns the tree stored
    (its files and directories). The walk is the one of :func:`walk` (every node checked
    alike, in the same order), done through directory file descriptors as
    :func:`link_tree` does. A refused node fails the walk; the caller removes ``target``."""
    target.mkdir(parents=True)
    files: dict[str, tuple[str, int]] = {}
    directories: set[str] = set()
    if not root.exists():
        return Tree(files, frozenset())
    host_root = str(root)
    hard_link, mkdir = os.link, os.mkdir
    content = None if links is None else links.content

    def fill(src: int, dst: int, rel: str) -> list[tuple[str, str]]:
        """Store the files of one directory and make its subdirectories; returns ``(name,
        relative path)`` of each subdirectory, sorted."""
        with os.scandir(src) as it:
            entries = sorted(it, key=_NAME)
        below = []
        prefix = f"{rel}/" if rel else ""
        for entry in entries:
            name = entry.name
            child = prefix + name
            st = entry.stat(follow_symlinks=False)
            kind = st.st_mode & _FORMAT
            if kind == _DIRECTORY:
                mkdir(name, dir_fd=dst)
                directories.add(child)
                below.append((name, child))
                continue
            if kind != _REGULAR:
                raise InvalidData(UNSUPPORTED_NODE)
            if st.st_nlink < 2:
                digest = hashlib.sha256()
                size = _copy_at(src, dst, name, mode=STATE_FILE_MODE, hasher=digest)
                files[child] = (digest.hexdigest(), size)
                continue
            # refused_node's rule for a file of several links: one of the run's own, or refused
            recorded = None if content is None else content(st)
            if recorded is None:
                if links is None or not links.owns(st, f"{host_root}/{child}"):
                    raise InvalidData(UNSUPPORTED_NODE)
                recorded = links.content(st)
                assert recorded is not None  # owns() knows it now
            try:
                hard_link(name, name, src_dir_fd=src, dst_dir_fd=dst, follow_symlinks=False)
            except OSError as exc:
                if exc.errno not in _CANNOT_LINK:
                    raise
                _copy_at(src, dst, name)
            files[child] = recorded
        return below

    _fill_pairs(root, target, fill)
    return Tree(files, frozenset(directories))


#: How :func:`link_tree` and :func:`copy_tree` open the directories they walk and fill.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
_FORMAT, _REGULAR, _DIRECTORY = 0o170000, stat.S_IFREG, stat.S_IFDIR
_NAME = attrgetter("name")


class NotTheManifest(Exception):
    """A state tree holds a file its manifest does not list, or of another size
    (:func:`link_tree` with ``expected``)."""


class Filled(NamedTuple):
    """What :func:`link_tree` made: how many files, every directory, and ``(key,
    (sha256, size))`` of each link (what :meth:`~tavernlab.workspace.storage.LabLinks.add_all`
    takes)."""

    files: int
    directories: set[str]
    links: list[tuple[LinkKey, tuple[str, int]]]


def link_tree(source: Path, target: Path, *, link: bool = True,
              expected: Mapping[str, tuple[str, int]] | None = None) -> Filled:
    """Fill the empty (missing) ``target`` from the state tree ``source``: directories made,
    files linked (copied where linking is refused, or everywhere unless ``link``). Without
    ``expected`` the links' digests are left empty (sizes only); with it (``(sha256, size)``
    by path, the state's manifest) each file takes its recorded content as it is found, and
    a file the manifest does not list, or of another size, raises :class:`NotTheManifest`
    (what is already filled stays for the caller to remove), so checking the whole tree
    against the manifest is then comparing the number of files.

    The walk is the one of :func:`walk` (every node checked alike, each level in name
    order; a state's files are the lab's links by construction), done through directory
    file descriptors: one ``scandir`` of each source directory, and every ``lstat``,
    ``mkdir`` and ``link`` relative to the open source and target directories, so no path
    is resolved again from the root. Only the directories from the root down to the one
    being filled are open at a time."""
    target.mkdir(parents=True)
    directories: set[str] = set()
    made: list[tuple[LinkKey, tuple[str, int]]] = []
    found = 0
    hard_link, mkdir, append = os.link, os.mkdir, made.append

    def fill(src: int, dst: int, rel: str) -> list[tuple[str, str]]:
        """Link (or copy) the files of one directory and make its subdirectories; returns
        ``(name, relative path)`` of each subdirectory, sorted."""
        nonlocal found
        with os.scandir(src) as it:
            entries = sorted(it, key=_NAME)
        below = []
        prefix = f"{rel}/" if rel else ""
        for entry in entries:
            name = entry.name
            st = entry.stat(follow_symlinks=False)
            kind = st.st_mode & _FORMAT
            # refused_node's rule for a state's tree, inline (50,000 calls at a run's start):
            # a regular file is served whatever its links (the lab's by construction), a
            # directory is, nothing else is
            if kind != _REGULAR:
                if kind != _DIRECTORY:
                    raise InvalidData(UNSUPPORTED_NODE)
                child = prefix + name
                mkdir(name, dir_fd=dst)
                directories.add(child)
                below.append((name, child))
                continue
            size = st.st_size
            content = ("", size) if expected is None else expected.get(prefix + name)
            if content is None or content[1] != size:
                raise NotTheManifest(prefix + name)
            if not link:
                _copy_at(src, dst, name)
                continue
            try:
                hard_link(name, name, src_dir_fd=src, dst_dir_fd=dst, follow_symlinks=False)
            except OSError as exc:
                if exc.errno not in _CANNOT_LINK:
                    raise
                _copy_at(src, dst, name)
            else:
                append(((st.st_ino, st.st_mtime_ns, size), content))  # its link_key
        found += len(entries) - len(below)
        return below

    _fill_pairs(source, target, fill)
    return Filled(found, directories, made)


def _fill_pairs(source: Path, target: Path,
                fill: Callable[[int, int, str], list[tuple[str, str]]]) -> None:
    """Walk the directory ``source`` and the existing ``target`` side by side through
    directory file descriptors: ``fill(source_fd, target_fd, relative path)`` handles one
    directory (``""`` for the top) and returns ``(name, relative path)`` of the
    subdirectories it made in the target, in the order to visit them (parents first, so the
    order of :func:`walk`). Only the directories from the top down to the one being filled
    are open at a time; every descriptor is closed, whatever ``fill`` raises."""
    src = os.open(source, _DIR_FLAGS)
    try:
        dst = os.open(target, _DIR_FLAGS)
    except BaseException:
        os.close(src)
        raise
    # each frame: the open source and target directory and the subdirectories still to fill
    stack: list[tuple[int, int, Iterator[tuple[str, str]]]] = [(src, dst, iter(()))]
    try:
        stack[-1] = (src, dst, iter(fill(src, dst, "")))
        while stack:
            src, dst, pending = stack[-1]
            nxt = next(pending, None)
            if nxt is None:
                stack.pop()
                os.close(src)
                os.close(dst)
                continue
            name, child = nxt
            sub_src = os.open(name, _DIR_FLAGS, dir_fd=src)
            try:
                sub_dst = os.open(name, _DIR_FLAGS, dir_fd=dst)
            except BaseException:
                os.close(sub_src)
                raise
            stack.append((sub_src, sub_dst, iter(())))  # so a failing fill closes them too
            stack[-1] = (sub_src, sub_dst, iter(fill(sub_src, sub_dst, child)))
    finally:
        for src, dst, _ in stack:
            os.close(src)
            os.close(dst)


def _copy_at(src_dir: int, dst_dir: int, name: str, *, mode: int = 0o644,
             hasher: Any = None) -> int:
    """:func:`copy_file` of ``name`` from one open directory to the other; returns the
    size."""
    reader = os.open(name, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=src_dir)
    try:
        writer = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644,
                         dir_fd=dst_dir)
        try:
            size = 0
            while chunk := os.read(reader, 1 << 20):
                if hasher is not None:
                    hasher.update(chunk)
                size += len(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(writer, view):]
            if mode != 0o644:
                os.fchmod(writer, mode)
            return size
        finally:
            os.close(writer)
    finally:
        os.close(reader)


def link_or_copy(source: str, target: str | Path) -> bool:
    """Hard-link ``source`` at ``target``, or copy it where the filesystem refuses; returns
    whether it linked."""
    try:
        os.link(source, target)
        return True
    except OSError as exc:
        if exc.errno not in _CANNOT_LINK:
            raise
    copy_file(source, target)
    return False


def copy_file(source: str, target: str | Path, *, mode: int = 0o644,
              hasher: Any = None) -> int:
    """Copy the bytes of ``source`` to the new file ``target`` (created with ``mode``);
    returns their size. ``hasher`` (a ``hashlib`` object), when given, is fed the bytes as
    they are copied."""
    size = 0
    with open(source, "rb") as reader:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            while chunk := reader.read(1 << 20):
                if hasher is not None:
                    hasher.update(chunk)
                size += len(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
            if mode != 0o644:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
    return size


def _hash_file(source: str) -> tuple[str, int]:
    with open(source, "rb") as reader:
        digest = hashlib.file_digest(reader, "sha256")
        return digest.hexdigest(), reader.tell()


def diff_trees(base_files: dict[str, tuple[str, int]], base_dirs: set[str], tree: Tree
               ) -> list[PersistChange]:
    """The change list from a base inventory to ``tree`` (see the module docstring)."""
    changes: list[PersistChange] = []
    files, directories = tree.files, tree.directories
    # Only paths that differ can change (an unchanged file keeps its digest, an unchanged
    # directory stays): a publication that changed one file of 50,000 sorts a handful.
    differing = {path for path, now in files.items() if base_files.get(path) != now}
    differing.update(path for path in base_files if path not in files)
    differing.update(directories.symmetric_difference(base_dirs))
    for path in sorted(differing):
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
