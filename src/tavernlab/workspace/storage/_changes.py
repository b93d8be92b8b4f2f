"""What changed in a workspace: every mutation of the storage port, coalesced per path.

:class:`~tavernlab.workspace.storage.WorkspaceFs` reports each successful mutation (a write, an
append, a new directory, a removal, a rename) to its observer; :class:`ChangeRecorder`
gathers them and, when asked to :meth:`~ChangeRecorder.flush`, returns one
:class:`~tavernlab.events.FileChange` per path that changed since the last flush, as the path
stands now: its size from an ``lstat``, its SHA-256 as the port wrote it (when it knew the
digest and the size still matches) or else read under the workspace lock. Because every writer goes
through the port (the text tools, the shell bridge, scripts, stored tool results), nothing
that changes a workspace file escapes it.

Coalescing rules (tavernlab's, documented here): a path written several times is one
``modified`` (or ``created``); a node created and removed again before the flush leaves no
record; a rename is ``moved`` at the new path with ``fromPath``, and what was pending below a
renamed directory moves with it; removing a directory is one ``removed`` record for the
directory (its subtree went with it). Directories are recorded when created, moved or
removed, never as ``modified``.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from dataclasses import dataclass
from typing import Literal

from tavernlab.events import FileChange, Writer
from tavernlab.workspace.storage._atomic import open_regular

Operation = Literal["write", "mkdir", "remove", "rename"]


@dataclass(frozen=True, slots=True)
class FsChange:
    """One mutation the port made: ``existed`` says whether ``path`` existed before it,
    ``directory`` whether the node is a directory; ``size`` and ``sha256`` describe the file
    the port just wrote when it knows them (it wrote or read every byte)."""

    operation: Operation
    path: str
    existed: bool
    directory: bool = False
    from_path: str | None = None
    size: int | None = None
    sha256: str | None = None


@dataclass(slots=True)
class _Pending:
    existed: bool
    directory: bool = False
    moved_from: str | None = None
    #: ``(size, sha256)`` of the file as the port last wrote it, if it knew them.
    written: tuple[int, str] | None = None


class ChangeRecorder:
    """Collects a workspace's mutations and turns them into :class:`FileChange` records."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()

    def note(self, change: FsChange) -> None:
        """Record one mutation (called by the port, under its lock; never blocks on I/O)."""
        with self._lock:
            if change.operation == "rename":
                self._renamed(change)
            elif change.operation == "remove":
                pending = self._pending.get(change.path)
                if pending is not None and not pending.existed:
                    self._drop_below(change.path)
                else:
                    self._drop_below(change.path)
                    self._pending[change.path] = _Pending(existed=True,
                                                          directory=change.directory)
            else:
                pending = self._pending.get(change.path)
                if pending is None:
                    pending = self._pending[change.path] = _Pending(
                        existed=change.existed, directory=change.directory)
                pending.written = (None if change.size is None or change.sha256 is None
                                   else (change.size, change.sha256))

    def _renamed(self, change: FsChange) -> None:
        source = change.from_path or ""
        moved = self._pending.pop(source, None) or _Pending(
            existed=True, directory=change.directory, moved_from=source)
        prefix = source + "/"
        for key in [k for k in self._pending if k.startswith(prefix)]:
            self._pending[change.path + key[len(source):]] = self._pending.pop(key)
        if not moved.existed:
            self._pending[change.path] = _Pending(existed=change.existed,
                                                  directory=change.directory,
                                                  written=moved.written)
        else:
            self._pending[change.path] = _Pending(existed=True, directory=change.directory,
                                                  moved_from=moved.moved_from or source,
                                                  written=moved.written)

    def _drop_below(self, path: str) -> None:
        prefix = path + "/"
        for key in [k for k in self._pending if k == path or k.startswith(prefix)]:
            del self._pending[key]

    @property
    def pending(self) -> bool:
        """Whether anything changed since the last flush."""
        with self._lock:
            return bool(self._pending)

    def flush(self, writer: Writer, call_id: str | None) -> list[FileChange]:
        """The changes since the last flush, sorted by path, attributed to ``writer`` and
        ``call_id``. The caller holds the workspace lock shared (sizes and digests are read
        as the files stand now)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        out = []
        for path in sorted(pending):
            record = self._describe(path, pending[path], writer, call_id)
            if record is not None:
                out.append(record)
        return out

    def _describe(self, path: str, pending: _Pending, writer: Writer, call_id: str | None
                  ) -> FileChange | None:
        host = f"{self.root}/{path}"
        try:
            st = os.lstat(host)
        except FileNotFoundError:
            if not pending.existed:
                return None
            return FileChange(path=path, change="removed",
                              node="directory" if pending.directory else "file",
                              writer=writer, call_id=call_id)
        directory = stat.S_ISDIR(st.st_mode)
        if pending.moved_from is not None:
            kind: Literal["created", "modified", "moved"] = "moved"
        elif pending.existed:
            if directory:
                return None
            kind = "modified"
        else:
            kind = "created"
        if directory:
            return FileChange(path=path, change=kind, node="directory",
                              from_path=pending.moved_from, writer=writer, call_id=call_id)
        written = pending.written
        digest = (written[1] if written is not None and written[0] == st.st_size
                  else _digest(host))
        return FileChange(path=path, change=kind, node="file", size=st.st_size,
                          sha256=digest, from_path=pending.moved_from, writer=writer,
                          call_id=call_id)


def _digest(host: str) -> str | None:
    """SHA-256 of a regular file, read in chunks (``None`` for anything else)."""
    try:
        fd = open_regular(host)
    except OSError:  # gone, or no longer a regular file
        return None
    with os.fdopen(fd, "rb") as handle:
        digest = hashlib.sha256()
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
