"""The filesystem bridge between a shell call and the Invocation's ``ScopedWorkspaceFs``.

See docs/shell.md. bashkit mounts one :class:`WorkspaceBridge` at ``/`` (through
:mod:`tavernlab.shell._vfs_abi`), so **every** file operation of the call - redirections,
coreutils, ``find``, the embedded ``python3`` - reaches the scoped view, where visibility,
writability, the ``skills/`` projection, locking and mutation tracking live:

* shell paths are POSIX and absolute; ``.``/``..`` are resolved lexically (``..`` above ``/``
  stays at ``/``), then parsed with the workspace path rules; a backslash fails with
  ``use / in workspace paths``; ``/`` is the logical root and lists exactly the visible roots;
* reads are capped at 8 MiB per file and listings at 4096 entries; file bytes read are charged
  to the call's input budget (:class:`tavernlab.js.InputBudget`, 8 MiB, shared with
  the call's ``js`` runs), whose overflow the command sees as an I/O error naming the budget;
* hidden run internals (``/input``, ``/run.json``...) and every path outside the visible
  roots behave as if they did not exist for reads: ``cat``, ``ls`` and ``stat`` fail with
  ``ENOENT`` and ``workspace path `<path>` was not found.`` (what a missing file says), ``test
  -e`` is false; writes fail with ``... is not writable for this task.``;
* writes are unchecked (no guard, no read records);
* ``symlink``, ``readlink`` and ``chmod`` fail with ``<op> is not supported in the workspace``
  (a ``chmod`` to the mode a node already has is a no-op, see :meth:`WorkspaceBridge.chmod`);
* storage errors become POSIX-style errors carrying the storage message;
  ``Cancelled`` has no ABI kind of its own, so it is reported as ``Other`` with its message;
* a fault that is not an ordinary storage error is remembered
  (:attr:`WorkspaceBridge.internal_fault`)
  and the interpreter is stopped; the tool call then aborts with it;
* mutations run one at a time and always to completion: the cancel/deadline check happens
  before an operation starts, never in the middle of one;
* one call parses each path text once (the answer, or the refusal, is kept for the call: it
  depends on the text alone), and holds the workspace lock once: the shell engine leases the
  workspace for the call (:meth:`~tavernlab.workspace.storage._fs.WorkspaceFs.lease`), under which
  the storage port walks each directory once and forgets what any mutation changes
  (:mod:`tavernlab.workspace.storage._containment`).
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable

from tavernlab.errors import (
    AccessDenied,
    FileIo,
    InvalidData,
    NotFound,
    PathIsDirectory,
    WorkspaceError,
)
from tavernlab.js import InputBudget
from tavernlab.paths import MAX_PATH_BYTES, MAX_PATH_SEGMENTS, WorkspacePath, display
from tavernlab.shell._limits import MAX_DIR_ENTRIES, MAX_FILE_READ_BYTES
from tavernlab.shell._vfs import VfsError, VfsErrorKind, VfsStat
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.storage import WorkspaceMetadata, WriteGuard, not_found

ROOT_NOT_A_FILE = "workspace root is not a file entry"
_UNSEEN = object()
BACKSLASH_IN_PATH = "use / in workspace paths"
#: A path text of at most this many characters is within the byte bound whatever they are.
_SURELY_SHORT = MAX_PATH_BYTES // 4

_ERRNO_KINDS: dict[int, VfsErrorKind] = {
    errno.ENOENT: VfsErrorKind.NOT_FOUND,
    errno.EEXIST: VfsErrorKind.ALREADY_EXISTS,
    errno.EACCES: VfsErrorKind.PERMISSION_DENIED,
    errno.EPERM: VfsErrorKind.PERMISSION_DENIED,
    errno.EINVAL: VfsErrorKind.INVALID_INPUT,
    errno.EISDIR: VfsErrorKind.IS_A_DIRECTORY,
    errno.ENOTDIR: VfsErrorKind.NOT_A_DIRECTORY,
    errno.ENOTEMPTY: VfsErrorKind.DIRECTORY_NOT_EMPTY,
}


def unsupported(operation: str) -> VfsError:
    """``<op> is not supported in the workspace`` (symlinks and permissions do not exist)."""
    return VfsError(VfsErrorKind.UNSUPPORTED, f"{operation} is not supported in the workspace")


def posix_error(error: WorkspaceError) -> VfsError:
    """Map a storage error to the POSIX-style error the command sees (docs/shell.md)."""
    if isinstance(error, NotFound):
        kind = VfsErrorKind.NOT_FOUND
    elif isinstance(error, InvalidData):
        kind = VfsErrorKind.INVALID_INPUT
    elif isinstance(error, PathIsDirectory):
        kind = VfsErrorKind.IS_A_DIRECTORY
    elif isinstance(error, AccessDenied):
        kind = VfsErrorKind.PERMISSION_DENIED
    elif isinstance(error, FileIo):
        kind = _ERRNO_KINDS.get(error.errno or 0, VfsErrorKind.OTHER)
    else:  # Cancelled (EINTR has no ABI kind), FileNotText, WriteConflict, ...
        kind = VfsErrorKind.OTHER
    return VfsError(kind, error.message)


def read_error(error: WorkspaceError) -> VfsError:
    """:func:`posix_error` for a read: a path the Invocation may not read does not exist for
    it, so it fails as a missing path does (a shell never learns that a hidden file is
    there)."""
    if isinstance(error, AccessDenied) and error.operation == "read":
        return posix_error(not_found(error.path))
    return posix_error(error)


def parse_shell_path(text: str, cwd: str = "/") -> WorkspacePath | None:
    """Resolve a shell path against ``cwd`` lexically and parse it; ``None`` is ``/``.

    Raises :class:`~tavernlab.errors.InvalidData` for a backslash or a path the workspace
    rules reject.
    """
    if "\\" in text:
        raise InvalidData(BACKSLASH_IN_PATH)
    joined = text if text.startswith("/") else f"{cwd.rstrip('/')}/{text}"
    parts: list[str] = []
    for segment in joined.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if parts:
                parts.pop()
            continue
        parts.append(segment)
    if not parts:
        return None
    return WorkspacePath.parse("/".join(parts))


def shell_path(path: WorkspacePath | None) -> str:
    """The shell form of a workspace path (``output/main.md`` -> ``/output/main.md``)."""
    return "/" if path is None else f"/{path.text}"


class WorkspaceBridge:
    """The :class:`~tavernlab.shell._vfs_abi.VirtualFilesystem` of one shell call."""

    def __init__(self, scope: ScopedWorkspaceFs, budget: InputBudget, *,
                 on_fault: Callable[[], None] | None = None,
                 file_time: float | None = None) -> None:
        self.scope = scope
        self.budget = budget
        #: Under a deterministic clock every node shows this time (``ls -l``, ``stat``).
        self.file_time = file_time
        self.internal_fault: BaseException | None = None
        self._on_fault = on_fault
        self._mutation = threading.Lock()
        #: Each path text's parse (or the refusal) in this call.
        self._parsed: dict[str, WorkspacePath | InvalidData | None] = {}
        #: What ``stat`` answered, by path, while the storage port changed nothing (its
        #: generation); everything is forgotten at the port's next change or lock release.
        self._stats: dict[WorkspacePath | None, VfsStat] = {}
        #: The mode bits by (root, below the root, directory) (see :meth:`_mode`).
        self._modes: dict[tuple[str | None, bool, bool], int] = {}
        self._generation = -1

    # -- plumbing ---------------------------------------------------------------------------

    def _parse(self, text: str) -> WorkspacePath | None:
        """:func:`parse_shell_path` of ``text``, once per call."""
        parsed = self._parsed.get(text, _UNSEEN)
        if parsed is _UNSEEN:
            try:
                parsed = parse_shell_path(text)
            except InvalidData as error:
                parsed = error
            self._parsed[text] = parsed
        if isinstance(parsed, InvalidData):  # a fresh error each time (no growing traceback)
            raise type(parsed)(parsed.message)
        return parsed  # type: ignore[return-value]

    def _path(self, text: str) -> WorkspacePath | None:
        try:
            return self._parse(text)
        except InvalidData as error:
            raise posix_error(error) from None

    def _mode(self, path: WorkspacePath | None, is_dir: bool) -> int:
        """Mode bits show the policy (they are informational; bashkit does not enforce
        them): a directory is ``rwx`` when entries may be created in it (a writable
        directory or a writable root), a file ``rw`` when it may be written. The policy's
        answer depends on the path's root, whether the path is a root itself, and the
        node's kind only, so it is asked once per such kind in a call."""
        key = (None, False, is_dir) if path is None else (
            path.text.partition("/")[0], "/" in path.text, is_dir)
        mode = self._modes.get(key)
        if mode is None:
            access = self.scope.policy.access(path, directory=is_dir)
            if is_dir:
                mode = 0o755 if access.creates_children else 0o555
            else:
                mode = 0o644 if access.writable else 0o444
            self._modes[key] = mode
        return mode

    def _stat(self, path: WorkspacePath | None, metadata: WorkspaceMetadata) -> VfsStat:
        """What ``stat`` reports for a node of ``metadata`` (its mode: :meth:`_mode`)."""
        return self._vfs_stat(metadata, self._mode(path, metadata.is_dir))

    def _vfs_stat(self, metadata: WorkspaceMetadata, mode: int) -> VfsStat:
        """The :class:`VfsStat` of a node of ``metadata`` shown with ``mode``."""
        if self.file_time is not None:
            return VfsStat(metadata.is_dir, metadata.bytes, mode, self.file_time,
                           self.file_time)
        modified = metadata.modified.timestamp() if metadata.modified else 0.0
        created = metadata.created.timestamp() if metadata.created else modified
        return VfsStat(metadata.is_dir, metadata.bytes, mode, modified, created)

    def _mutate(self, operation: Callable[[], object]) -> None:
        """Run one mutation after the previous one finished (never two at once)."""
        with self._mutation:
            try:
                operation()
            except WorkspaceError as error:
                raise posix_error(error) from None

    # -- queries ------------------------------------------------------------------------------

    def read_file(self, path: str) -> bytes:
        """The bytes of a visible file (projected under ``skills/``), budgeted."""
        target = self._path(path)
        if target is None:
            raise VfsError(VfsErrorKind.INVALID_INPUT, ROOT_NOT_A_FILE)
        try:
            data = self.scope.read_file(target, MAX_FILE_READ_BYTES)
            self.budget.charge(len(data))
            return data
        except WorkspaceError as error:
            raise read_error(error) from None

    def stat(self, path: str) -> VfsStat:
        """Metadata of ``/`` or of a visible node (a node stated or listed since the port's
        last change is answered from memory, after the call's cancel check)."""
        target = self._path(path)
        try:
            known = self._known(target)
            if known is not None:
                return known
            result = self._stat(target, self.scope.metadata(target))
        except WorkspaceError as error:
            raise read_error(error) from None
        self._stats[target] = result
        return result

    def _known(self, path: WorkspacePath | None) -> VfsStat | None:
        """The remembered ``stat`` of ``path`` if the port changed nothing since (the
        scope's check still runs: a cancelled call starts no operation)."""
        generation = self.scope.fs.containment.generation
        if generation != self._generation:
            self._stats.clear()
            self._generation = generation
            return None
        known = self._stats.get(path)
        if known is not None and self.scope.check is not None:
            self.scope.check()
        return known

    def read_dir(self, path: str) -> list[tuple[str, VfsStat]]:
        """One level of a visible directory (``/`` lists exactly the visible roots)."""
        target = self._path(path)
        try:
            self._known(target)  # forget what a change made stale
            generation = self._generation
            entries = self.scope.read_dir(target, MAX_DIR_ENTRIES)
        except WorkspaceError as error:
            raise read_error(error) from None
        children = []
        remember = self.scope.fs.containment.generation == generation
        parsed = self._parsed
        # below a root every child has the same mode for its kind (see _mode)
        modes = None if target is None else {kind: self._mode(target.join("x"), kind)
                                             for kind in (False, True)}
        for entry in entries:
            text = entry.path
            child = WorkspacePath(text)
            metadata = entry.metadata
            result = (self._stat(child, metadata) if modes is None
                      else self._vfs_stat(metadata, modes[metadata.is_dir]))
            if remember:
                self._stats[child] = result
            name = child.name
            if "\\" not in name and len(text) <= _SURELY_SHORT and \
                    text.count("/") < MAX_PATH_SEGMENTS:
                # what parse_shell_path gives for the child's shell text: the listed path
                # itself (a listed name has no NUL, no "/", is UTF-8 and is not "." or
                # ".."; the bounds hold), so a command that stats each listed entry by
                # its full path (find) parses none of them
                parsed.setdefault(f"/{text}", child)
            children.append((name, result))
        return children

    def exists(self, path: str) -> bool:
        """False for missing paths and for paths this Invocation may not read."""
        try:
            target = self._parse(path)
        except InvalidData:
            return False
        try:
            return self.scope.exists(target)
        except WorkspaceError as error:
            raise posix_error(error) from None

    # -- mutations -----------------------------------------------------------------------------

    def write_file(self, path: str, data: bytes) -> None:
        """Unchecked replace of a writable file (its parent must exist)."""
        target = self._writable_target(path)
        self._mutate(lambda: self.scope.write_file(target, data, WriteGuard.unchecked()))

    def append_file(self, path: str, data: bytes) -> None:
        """Native append to a writable file (created if missing)."""
        target = self._writable_target(path)
        self._mutate(lambda: self.scope.append_file(target, data))

    def mkdir(self, path: str, recursive: bool) -> None:
        """``mkdir`` / ``mkdir -p``; ``-p`` on an existing directory succeeds."""
        target = self._path(path)
        if recursive and self._is_directory(target):
            return
        if target is None:
            raise posix_error(FileIo("create directory", "", OSError(errno.EEXIST, "File exists")))
        self._mutate(lambda: self.scope.create_dir(target, recursive))

    def remove(self, path: str, recursive: bool) -> None:
        """Remove a writable file or directory."""
        target = self._writable_target(path)
        self._mutate(lambda: self.scope.remove(target, recursive))

    def rename(self, src: str, dst: str) -> None:
        """Native rename between writable paths (the auto-commit candidate follows)."""
        source, target = self._writable_target(src), self._writable_target(dst)
        self._mutate(lambda: self.scope.rename(source, target))

    def copy(self, src: str, dst: str) -> None:
        """Copy a visible file (projected bytes out of ``skills/``) to a writable target."""
        source = self._path(src)
        target = self._writable_target(dst)
        if source is None:
            raise VfsError(VfsErrorKind.IS_A_DIRECTORY, ROOT_NOT_A_FILE)
        self._mutate(lambda: self.scope.copy_file(source, target))

    def symlink(self, target: str, link: str) -> None:
        """Symlinks do not exist in the workspace."""
        raise unsupported("symlink")

    def read_link(self, path: str) -> str:
        """Symlinks do not exist in the workspace."""
        raise unsupported("readlink")

    def chmod(self, path: str, mode: int) -> None:
        """Permissions do not exist in the workspace: only a ``chmod`` to the mode the node
        already reports succeeds, as a no-op (so ``sed -i``, which re-applies the original
        mode to its staged file, works); any real change fails."""
        target = self._path(path)
        try:
            current = self._stat(target, self.scope.metadata(target)).mode
        except WorkspaceError as error:
            raise posix_error(error) from None
        if mode & 0o7777 != current:
            raise unsupported("chmod")

    def fault(self, error: BaseException) -> None:
        """An unexpected exception escaped an operation: remember the first one and stop the
        interpreter (the tool call then aborts with it)."""
        if self.internal_fault is None:
            self.internal_fault = error
        if self._on_fault is not None:
            self._on_fault()

    # -- helpers ---------------------------------------------------------------------------

    def _writable_target(self, path: str) -> WorkspacePath:
        target = self._path(path)
        if target is None:
            raise posix_error(AccessDenied(display(None), "write"))
        return target

    def _is_directory(self, path: WorkspacePath | None) -> bool:
        try:
            return self.scope.metadata(path).is_dir
        except WorkspaceError:
            return False

