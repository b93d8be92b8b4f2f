"""``WorkspaceFs``: the single byte-level storage port of one run or session workspace.

See docs/workspace.md. Every caller (text tools, shell bridge, JavaScript runtime,
persist publication) goes through this class, so the rules live in one place:

* **Locking** - one reader/writer lock per workspace directory, held with ``flock`` on a lock
  file so it also holds across processes (two kernels on the same lab never lose an update).
  Every acquisition opens its own descriptor, which makes ``flock`` exclusive between threads
  of one process too. Reads take it shared, mutations exclusive; a compare-and-swap check and
  its write happen inside one exclusive section. A sequence of calls is not a transaction;
  a :meth:`~WorkspaceFs.lease` takes the lock once for many calls (the shell's, per call).
* **Atomic writes** - content goes to a uniquely named temporary file in the target's
  directory, is flushed (never fsynced: upstream says "flushes"), then renamed over the
  target; readers see old or new, never a mix (:mod:`tavernlab.workspace.storage._atomic`). A file
  shared with a published persist state is never written in place.
* **Containment** - every touched path is walked segment by segment, from the deepest
  directory validated under the same hold of the lock (:mod:`~.containment`).
* **Observed** - every successful mutation is reported to :attr:`WorkspaceFs.observer`
  (:mod:`tavernlab.workspace.storage._changes`), with the digest of the bytes written when the port
  knows it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from tavernlab.errors import (
    FileIo,
    InvalidData,
    PathIsDirectory,
    WriteConflict,
)
from tavernlab.layout import (
    CALL_COUNTER_NAME,
    INTERNAL_NAMES,
    LOCK_FILE_NAME,
    STAGING_DIR_NAME,
)
from tavernlab.locks import LeasableLock
from tavernlab.paths import WorkspacePath, display
from tavernlab.workspace.storage import _atomic as atomic
from tavernlab.workspace.storage._atomic import TEMP_PREFIX
from tavernlab.workspace.storage._changes import FsChange
from tavernlab.workspace.storage._containment import UNSUPPORTED_NODE, ContainedRoot, LabLinks
from tavernlab.workspace.storage._contract import (
    WorkspaceAppendResult,
    WorkspaceDirectoryEntry,
    WorkspaceDirectoryScan,
    WorkspaceEntry,
    WorkspaceFile,
    WorkspaceFileList,
    WorkspaceMetadata,
    WorkspaceRefusedEntry,
    WriteGuard,
    decode_text,
    metadata_from_stat,
    not_found,
    sha256_hex,
    walk_entries,
)

#: The contract's values are part of the port's surface: callers import them from here.
__all__ = [
    "CALL_COUNTER_NAME", "INTERNAL_NAMES", "LOCK_FILE_NAME", "STAGING_DIR_NAME", "TEMP_PREFIX",
    "UNSUPPORTED_NODE", "WorkspaceAppendResult",
    "WorkspaceDirectoryEntry", "WorkspaceDirectoryScan", "WorkspaceEntry", "WorkspaceFile",
    "WorkspaceFileList", "WorkspaceFs", "WorkspaceMetadata", "WorkspaceRefusedEntry",
    "WriteGuard", "clear_staging", "decode_text", "not_found", "sha256_hex", "walk_entries",
]



#: Age after which a staged file that is not the port's own (a run record's temporary file,
#: written without the workspace lock) is a killed writer's leftover: a live writer renames
#: it within moments.
STALE_STAGED_S = 600.0


def clear_staging(directory: Path) -> list[str]:
    """Remove the leftovers of killed writers from ``directory``'s :data:`STAGING_DIR_NAME`
    (a run is opened); returns the names removed, sorted.

    The port's temporary files (:data:`TEMP_PREFIX`) are written under the workspace's
    exclusive lock, so they are removed while this holds it - taken without waiting: when a
    writer holds the lock (a shell call of another process), the port's files are left for
    a later opening rather than making this one wait. Other staged files (a run record's
    temporary file, written without the lock, named ``….tmp-<pid>-<hex>``) are removed when
    the process that wrote them is gone, or once older than :data:`STALE_STAGED_S`."""
    staging = directory / STAGING_DIR_NAME
    try:
        names = sorted(os.listdir(staging))
    except FileNotFoundError:
        return []
    removed: list[str] = []
    lock = _try_exclusive(directory / LOCK_FILE_NAME) if any(
        n.startswith(TEMP_PREFIX) for n in names) else None
    try:
        now = time.time()
        for name in names:
            port = name.startswith(TEMP_PREFIX)
            if port and lock is None:
                continue
            path = staging / name
            try:
                st = path.lstat()
            except FileNotFoundError:
                continue
            if not port and _writer_alive(name) and now - st.st_mtime <= STALE_STAGED_S:
                continue
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            removed.append(name)
    finally:
        if lock is not None:
            os.close(lock)
    return removed


def _writer_alive(name: str) -> bool:
    """Whether the process named in a record's temporary file (``….tmp-<pid>-<hex>``) may
    still be writing it (a name without a process id: it may)."""
    pid = name.rpartition(".tmp-")[2].partition("-")[0]
    if not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # alive, another user's
        return True
    return True


def _try_exclusive(path: Path) -> int | None:
    """A descriptor of the lock file ``path`` holding its exclusive ``flock``, or ``None``
    when somebody holds it now."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


class WorkspaceFs:
    """Byte-level storage for one workspace directory (a run, or a session's ``workspace/``).

    All paths are :class:`~tavernlab.paths.WorkspacePath` values (or ``None`` for the logical
    root in queries). Errors are the storage kinds of :mod:`tavernlab.errors`.
    """

    def __init__(self, directory: Path | str, *, links: LabLinks | None = None) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = Path(os.path.realpath(directory))
        #: The walk, what it learnt under the lock (its ``generation``) and the lab's links.
        self.containment = ContainedRoot(str(self.directory), links)
        self.lock = LeasableLock(self.directory / LOCK_FILE_NAME,
                                 on_release=self.containment.forget)
        #: Where atomic writes stage their bytes (:data:`STAGING_DIR_NAME`).
        self.staging = str(self.directory / STAGING_DIR_NAME)
        #: Told of every successful mutation (see :mod:`tavernlab.workspace.storage._changes`).
        self.observer: Callable[[FsChange], None] | None = None

    def clear_staging(self) -> list[str]:
        """Remove what writers killed before their rename left in this workspace's
        :data:`STAGING_DIR_NAME` (see :func:`clear_staging`); returns the names removed."""
        return clear_staging(self.directory)

    def lease(self) -> contextlib.AbstractContextManager[None]:
        """Hold the workspace lock once for the whole block (see the module docstring)."""
        return self.lock.lease()

    def _notify(self, change: FsChange) -> None:
        self.containment.changed(WorkspacePath(change.path))
        if self.observer is not None:
            self.observer(change)

    # -- queries ------------------------------------------------------------------------------

    def read_file(self, path: WorkspacePath, max_bytes: int | None) -> bytes:
        """The file's bytes; a file over ``max_bytes`` is an error, never a truncated result."""
        with self.lock.shared():
            return self._read_locked(path, max_bytes)

    def _read_locked(self, path: WorkspacePath, max_bytes: int | None) -> bytes:
        st = self.containment.check(path)
        if st is None:
            raise not_found(path)
        if stat.S_ISDIR(st.st_mode):
            raise PathIsDirectory(path.text)
        if max_bytes is not None and st.st_size > max_bytes:
            raise InvalidData(f"Workspace read exceeds {max_bytes} bytes: {path.text}")
        try:
            # Sized by the file, not by the bound (reading 8 MiB allocates 8 MiB even for a
            # 1 KiB file); a file that grew behind the lock's back is read up to the bound.
            data = atomic.read_all(self.containment.host(path), st.st_size, max_bytes)
        except atomic.NotRegularFile:  # swapped for a FIFO or a device since the walk
            raise InvalidData(UNSUPPORTED_NODE) from None
        except OSError as exc:
            raise FileIo("read", path.text, exc) from None
        if max_bytes is not None and len(data) > max_bytes:
            raise InvalidData(f"Workspace read exceeds {max_bytes} bytes: {path.text}")
        return data

    def _digest_locked(self, path: WorkspacePath) -> str | None:
        return self._digest_of(path, self.containment.check(path))

    def _digest_of(self, path: WorkspacePath, st: os.stat_result | None) -> str | None:
        """The digest of ``path``, ``st`` being its walk under the held lock."""
        if st is None:
            return None
        if stat.S_ISDIR(st.st_mode):
            raise PathIsDirectory(path.text)
        try:
            return atomic.digest_regular(self.containment.host(path), st.st_size)
        except atomic.NotRegularFile:
            raise InvalidData(UNSUPPORTED_NODE) from None
        except OSError as exc:
            raise FileIo("read", path.text, exc) from None

    def metadata(self, path: WorkspacePath | None) -> WorkspaceMetadata:
        """Metadata of a node; ``None`` is the logical root (a directory)."""
        with self.lock.shared():
            st = self.containment.check(path)
        if st is None:
            raise not_found(display(path))
        return metadata_from_stat(st)

    def exists(self, path: WorkspacePath) -> bool:
        """True when a file or directory is at ``path``."""
        with self.lock.shared():
            return self.containment.check(path) is not None

    def read_dir(self, path: WorkspacePath | None, max_entries: int | None) -> list[
            WorkspaceDirectoryEntry]:
        """One level, sorted by logical path; more than ``max_entries`` children is an error,
        and so is a child that is neither a regular file nor a directory (docs/workspace.md)."""
        return self.scan_dir(path, max_entries).strict()

    def scan_dir(self, path: WorkspacePath | None, max_entries: int | None
                 ) -> WorkspaceDirectoryScan:
        """One level like :meth:`read_dir`, except that a symlink or special child is
        reported as a refused entry instead of failing the listing (``max_entries`` counts
        both kinds)."""
        with self.lock.shared():
            return self._scan_dir_locked(path, max_entries)

    def _scan_dir_locked(self, path: WorkspacePath | None, max_entries: int | None
                         ) -> WorkspaceDirectoryScan:
        st = self.containment.check(path)
        if st is None:
            raise not_found(display(path))
        if not stat.S_ISDIR(st.st_mode):
            raise FileIo("list", display(path), OSError(errno.ENOTDIR, "Not a directory"))
        try:
            scan = self.containment.scan(path, hidden=INTERNAL_NAMES if path is None else ())
        except OSError as exc:
            raise FileIo("list", display(path), exc) from None
        if max_entries is not None and len(scan.entries) + len(scan.refused) > max_entries:
            raise InvalidData(
                f"Workspace directory exceeds {max_entries} entries: {display(path)}"
            )
        return scan

    def read_text(self, path: WorkspacePath) -> WorkspaceFile:
        """The whole file as UTF-8 text with its digest (``WorkspaceFileNotText`` otherwise)."""
        data = self.read_file(path, None)
        return WorkspaceFile(path.text, decode_text(path.text, data), len(data), sha256_hex(data))

    def list_files(self, path: WorkspacePath | None, depth: int, max_entries: int
                   ) -> WorkspaceFileList:
        """Walk depth-first down to ``depth`` levels; stop at ``max_entries`` (``truncated``).

        A file path lists just that file. Order: directories first, then files, each by path.
        Symlinks and special files below the start are skipped and listed in ``refused``.
        """
        with self.lock.shared():
            st = self.containment.check(path)
            if st is None:
                raise not_found(display(path))
            if path is not None and not stat.S_ISDIR(st.st_mode):
                return WorkspaceFileList([WorkspaceEntry(path.text, "file")], False)
            return walk_entries(lambda p: self._scan_dir_locked(p, None), path, depth,
                                max_entries)

    # -- mutations -------------------------------------------------------------------------

    def write_file(self, path: WorkspacePath, data: bytes, guard: WriteGuard) -> str:
        """Guarded atomic write; the parent must exist. Returns the SHA-256 of ``data``."""
        with self.lock.exclusive():
            return self._write_locked(path, data, guard)

    def _write_locked(self, path: WorkspacePath, data: bytes, guard: WriteGuard,
                      st: os.stat_result | Literal[False] | None = False) -> str:
        """The guarded write under the held lock; ``st`` is the target's ``lstat`` (``None``:
        missing) when the caller walked it under this hold, ``False`` when it did not."""
        containment = self.containment
        if st is False:
            containment.require_parent_dir(path)
            st = containment.check(path)
        elif st is None and (path.parent is None
                             or containment.host(path.parent) not in containment.directories):
            # A walk that reached an existing target, or its parent, validated the parent
            # as a directory under this hold; otherwise (a folder made since) look again.
            containment.require_parent_dir(path)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise PathIsDirectory(path.text)
        if guard.kind == "must_not_exist" and st is not None:
            raise WriteConflict(path.text, "already_exists",
                                actual_sha256=self._digest_of(path, st))
        if guard.kind == "must_match_sha256":
            actual = None if st is None else self._digest_of(path, st)
            if actual != guard.sha256:
                raise WriteConflict(path.text, "stale", expected_sha256=guard.sha256,
                                    actual_sha256=actual)
        try:
            atomic.publish(self.containment.host(path), data, staging=self.staging)
        except OSError as exc:
            raise FileIo("write", path.text, exc) from None
        digest = sha256_hex(data)
        self._notify(FsChange("write", path.text, existed=st is not None, size=len(data),
                              sha256=digest))
        return digest

    def write_text(self, path: WorkspacePath, text: str, guard: WriteGuard,
                   then: Callable[[], object] | None = None) -> str:
        """Create missing parents recursively, then :meth:`write_file` the UTF-8 text;
        returns its SHA-256. ``then``, when given, is called after a successful write
        under the same hold of the lock (what it raises propagates, the file written).

        A ``MustMatchSha256`` guard on a file that does not exist fails before any parent is
        created: a refused write changes nothing.
        """
        data = text.encode("utf-8")
        with self.lock.exclusive():
            # The whole path is walked first, so its errors name it.
            digest = self._write_text_locked(path, data, guard, self.containment.check(path))
            if then is not None:
                then()
            return digest

    def replace_text(self, path: WorkspacePath, text: str, sha256: str | None) -> str:
        """The replace of ``workspace.write_file`` under one exclusive hold of the lock,
        after one walk of the path: a missing file is created, with its missing parents (a
        :meth:`write_text` that must not exist); an existing file is replaced when its digest
        is ``sha256`` (``WriteConflict`` ``stale`` otherwise) and refused with
        ``WriteConflict`` ``already_exists`` when ``sha256`` is ``None`` (nothing was read;
        the file is not read either, so the conflict carries no digest); a directory is
        ``PathIsDirectory``. Returns the SHA-256 of the text written."""
        data = text.encode("utf-8")
        with self.lock.exclusive():
            st = self.containment.check(path)
            if st is not None:
                if stat.S_ISDIR(st.st_mode):
                    raise PathIsDirectory(path.text)
                if sha256 is None:
                    raise WriteConflict(path.text, "already_exists")
            guard = (WriteGuard.must_not_exist() if st is None or sha256 is None
                     else WriteGuard.must_match_sha256(sha256))
            return self._write_text_locked(path, data, guard, st)

    def _write_text_locked(self, path: WorkspacePath, data: bytes, guard: WriteGuard,
                           st: os.stat_result | None) -> str:
        """:meth:`write_text` under the held lock, ``st`` being the walk of ``path``."""
        if st is None and guard.kind == "must_match_sha256":
            raise WriteConflict(path.text, "stale", expected_sha256=guard.sha256)
        # The walk validated every existing folder on the way: when it reached the
        # parent, there is nothing to create.
        if (path.parent is not None
                and self.containment.host(path.parent) not in self.containment.directories):
            self._mkdir_locked(path.parent, recursive=True)
        return self._write_locked(path, data, guard, st)

    def append_file(self, path: WorkspacePath, data: bytes) -> None:
        """Native append, creating the file if missing, flushed under the lock (a file
        shared with a persist state is copied first, see
        :mod:`tavernlab.workspace.storage._atomic`).

        A failure can leave a partial append; callers must not replay it.
        """
        with self.lock.exclusive():
            self._append_locked(path, data)

    def _append_locked(self, path: WorkspacePath, data: bytes, *, old: bytes | None = None,
                       result: tuple[int, str] | None = None) -> None:
        """Append under the held lock; ``old`` is the file's content when the caller read
        it, ``result`` the size and digest of the file afterwards when it knows them."""
        self.containment.require_parent_dir(path)
        st = self.containment.check(path)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise PathIsDirectory(path.text)
        try:
            # More than one link and not refused by the check: one of the lab's own.
            atomic.append(self.containment.host(path), data, old=old, staging=self.staging,
                          shared=st is not None and st.st_nlink > 1)
        except OSError as exc:
            raise FileIo("append", path.text, exc) from None
        size, digest = result if result is not None else (None, None)
        self._notify(FsChange("write", path.text, existed=st is not None, size=size,
                              sha256=digest))

    def append_text(self, path: WorkspacePath, text: str, *, parents: bool = False
                    ) -> WorkspaceAppendResult:
        """Append text under one lock; returns the full resulting text and the old digest.

        With ``parents``, missing parent directories are created first (``workspace.write_file``
        in append mode does this); otherwise the parent must exist.
        """
        added = text.encode("utf-8")
        with self.lock.exclusive():
            if parents and path.parent is not None:
                self._mkdir_locked(path.parent, recursive=True)
            self.containment.require_parent_dir(path)
            st = self.containment.check(path)
            previous: str | None = None
            old = b""
            if st is not None:
                if stat.S_ISDIR(st.st_mode):
                    raise PathIsDirectory(path.text)
                old = self._read_locked(path, None)
                previous = sha256_hex(old)
            before = decode_text(path.text, old)
            data = old + added
            digest = sha256_hex(data)
            self._append_locked(path, added, old=old, result=(len(data), digest))
        return WorkspaceAppendResult(WorkspaceFile(path.text, before + text, len(data), digest),
                                     previous)

    def create_dir(self, path: WorkspacePath, recursive: bool) -> list[str]:
        """``mkdir`` (parent must exist, target must not) or ``mkdir -p``; returns the
        directories it made, outermost first (each also reported to the observer)."""
        with self.lock.exclusive():
            return self._mkdir_locked(path, recursive)

    def _mkdir_locked(self, path: WorkspacePath, recursive: bool) -> list[str]:
        if not recursive:
            self.containment.require_parent_dir(path)
            if self.containment.check(path) is not None:
                raise FileIo("create directory", path.text,
                             OSError(errno.EEXIST, "File exists"))
            try:
                os.mkdir(self.containment.host(path))
            except OSError as exc:
                raise FileIo("create directory", path.text, exc) from None
            self._notify(FsChange("mkdir", path.text, existed=False, directory=True))
            return [path.text]
        created: list[str] = []
        for depth in range(1, len(path.parts) + 1):
            prefix = WorkspacePath("/".join(path.parts[:depth]))
            st = self.containment.check(prefix)
            if st is None:
                try:
                    os.mkdir(self.containment.host(prefix))
                except OSError as exc:
                    raise FileIo("create directory", prefix.text, exc) from None
                self._notify(FsChange("mkdir", prefix.text, existed=False, directory=True))
                created.append(prefix.text)
            elif not stat.S_ISDIR(st.st_mode):
                raise FileIo("create directory", prefix.text,
                             OSError(errno.ENOTDIR, "Not a directory"))
        return created

    def remove(self, path: WorkspacePath, recursive: bool) -> None:
        """Unlink a file; remove an empty directory, or a whole tree when ``recursive``."""
        with self.lock.exclusive():
            st = self.containment.check(path)
            if st is None:
                raise not_found(path)
            host = self.containment.host(path)
            self.containment.forget(path)
            try:
                if not stat.S_ISDIR(st.st_mode):
                    os.unlink(host)
                elif recursive:
                    self.containment.check_tree(host)
                    shutil.rmtree(host)
                else:
                    os.rmdir(host)
            except OSError as exc:
                raise FileIo("remove", path.text, exc) from None
            self._notify(FsChange("remove", path.text, existed=True,
                                  directory=stat.S_ISDIR(st.st_mode)))

    def rename(self, src: WorkspacePath, dst: WorkspacePath) -> Literal["file", "directory"]:
        """Native rename to the exact target; no copy-and-delete fallback.

        Returns what was moved (``file`` or ``directory``), which the text-mutation tracker
        needs: a directory named ``notes.md`` is not a text file.
        """
        with self.lock.exclusive():
            st = self.containment.check(src)
            if st is None:
                raise not_found(src)
            self.containment.require_parent_dir(dst)
            target = self.containment.check(dst)
            if dst.is_strictly_under(src):
                raise InvalidData(f"cannot move `{src.text}` into itself")
            self.containment.forget(src)
            self.containment.forget(dst)
            try:
                os.rename(self.containment.host(src), self.containment.host(dst))
            except OSError as exc:
                raise FileIo("rename", src.text, exc) from None
            self._notify(FsChange("rename", dst.text, existed=target is not None,
                                  directory=stat.S_ISDIR(st.st_mode), from_path=src.text))
        return "directory" if stat.S_ISDIR(st.st_mode) else "file"

    def copy_file(self, src: WorkspacePath, dst: WorkspacePath) -> str:
        """Copy into a staged temporary file, then replace the target; parent must exist.
        Returns the digest of the bytes copied."""
        with self.lock.exclusive():
            data = self._read_locked(src, None)
            return self._write_locked(dst, data, WriteGuard.unchecked())

    def digest(self, path: WorkspacePath) -> str | None:
        """The file's SHA-256, or ``None`` when it does not exist."""
        with self.lock.shared():
            return self._digest_locked(path)
