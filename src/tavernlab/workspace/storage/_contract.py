"""The values of the ``WorkspaceFs`` contract (docs/workspace.md): files,
metadata, directory entries, bounded listings and compare-and-swap write guards, plus the
small rules every storage caller shares (digests, UTF-8 decoding, the listing walk).

**Refused entries** (tavernlab's shape, docs/workspace.md): a directory
child that exists on disk but is neither a regular file nor a directory (a symlink, FIFO,
socket or device planted in the run directory) is never served. A one-level scan reports it
as a :class:`WorkspaceRefusedEntry` ``{path, node}`` beside the served entries
(:class:`WorkspaceDirectoryScan`), and a recursive listing carries the refused entries it met
in :attr:`WorkspaceFileList.refused`, so one planted node no longer makes a whole listing
fail, and no caller loses sight of it. Touching such a node directly (reading it, listing it
as the start path, walking through it) still fails with ``workspace supports regular files
and directories``.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from tavernlab.errors import FileNotText, InvalidData, NotFound
from tavernlab.paths import WorkspacePath


@dataclass(frozen=True, slots=True)
class WorkspaceFile:
    """A text file read whole: ``bytes`` is the UTF-8 length, ``sha256`` the content digest."""

    path: str
    text: str
    bytes: int
    sha256: str


@dataclass(frozen=True, slots=True)
class WorkspaceAppendResult:
    """The full new text after an append; ``previous_sha256`` is ``None`` for a new file."""

    file: WorkspaceFile
    previous_sha256: str | None


@dataclass(frozen=True, slots=True)
class WorkspaceMetadata:
    """What a node is: ``kind`` ``file`` or ``directory``, its size and its times."""

    kind: Literal["file", "directory"]
    bytes: int
    modified: datetime | None = None
    created: datetime | None = None

    @property
    def is_dir(self) -> bool:
        """True for a directory."""
        return self.kind == "directory"


@dataclass(frozen=True, slots=True)
class WorkspaceDirectoryEntry:
    """One child of a directory listing, with its metadata."""

    path: str
    metadata: WorkspaceMetadata


@dataclass(frozen=True, slots=True)
class WorkspaceEntry:
    """One entry of a recursive file list."""

    path: str
    kind: Literal["file", "directory"]


#: What a refused node is (from its ``lstat`` mode).
RefusedNode = Literal["symlink", "fifo", "socket", "block_device", "char_device", "hard_link",
                      "unknown"]

#: The one wording of the node rule (docs/workspace.md).
UNSUPPORTED_NODE = "workspace supports regular files and directories"


@dataclass(frozen=True, slots=True)
class WorkspaceRefusedEntry:
    """A directory child the workspace refuses to serve: ``node`` says what it is."""

    path: str
    node: RefusedNode

    def to_json(self) -> dict[str, str]:
        """``{path, node}``, as the tools report it."""
        return {"path": self.path, "node": self.node}


@dataclass(frozen=True, slots=True)
class WorkspaceDirectoryScan:
    """One level of a directory: the served ``entries`` and the ``refused`` ones, each
    sorted by path."""

    entries: list[WorkspaceDirectoryEntry]
    refused: list[WorkspaceRefusedEntry] = field(default_factory=list)

    def strict(self) -> list[WorkspaceDirectoryEntry]:
        """The entries of a caller that cannot skip anything (``read_dir``): a refused
        child fails with ``workspace supports regular files and directories``."""
        if self.refused:
            raise InvalidData(UNSUPPORTED_NODE)
        return self.entries


@dataclass(frozen=True, slots=True)
class WorkspaceFileList:
    """A bounded recursive listing; ``truncated`` says entries were left out and
    ``refused`` lists the refused entries met on the way (they count towards the bound)."""

    entries: list[WorkspaceEntry] = field(default_factory=list)
    truncated: bool = False
    refused: list[WorkspaceRefusedEntry] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class WriteGuard:
    """A compare-and-swap guard: ``Unchecked``, ``MustNotExist`` or ``MustMatchSha256(hex)``."""

    kind: Literal["unchecked", "must_not_exist", "must_match_sha256"]
    sha256: str | None = None

    @classmethod
    def unchecked(cls) -> WriteGuard:
        """Never conflicts (the shell and scripts always write unchecked)."""
        return _UNCHECKED

    @classmethod
    def must_not_exist(cls) -> WriteGuard:
        """Conflicts with ``AlreadyExists`` when the target exists."""
        return _MUST_NOT_EXIST

    @classmethod
    def must_match_sha256(cls, sha256: str) -> WriteGuard:
        """Conflicts with ``Stale`` when the file is missing or its digest differs."""
        return cls("must_match_sha256", sha256)


_UNCHECKED = WriteGuard("unchecked")
_MUST_NOT_EXIST = WriteGuard("must_not_exist")


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def decode_text(path: str, data: bytes) -> str:
    """Decode UTF-8 or fail with ``WorkspaceFileNotText``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FileNotText(path) from None


def not_found(path: WorkspacePath | str) -> NotFound:
    """The storage ``NotFound`` for ``path``, worded as the tools report it."""
    text = str(path)
    return NotFound(f"workspace path `{text}` was not found.", path=text)


def _timestamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


#: Whether this platform's ``lstat`` reports a creation time (a field of every result or
#: of none: a directory listing builds metadata for each entry).
_HAS_BIRTHTIME = hasattr(os.stat_result, "st_birthtime")


def metadata_from_stat(st: os.stat_result) -> WorkspaceMetadata:
    """The metadata of a node from its ``lstat``."""
    if stat.S_ISDIR(st.st_mode):
        kind: Literal["file", "directory"] = "directory"
        size = 0
    else:
        kind = "file"
        size = st.st_size
    created = getattr(st, "st_birthtime", None) if _HAS_BIRTHTIME else None
    return WorkspaceMetadata(
        kind=kind,
        bytes=size,
        modified=datetime.fromtimestamp(st.st_mtime, tz=UTC),
        created=_timestamp(created) if created is not None else None,
    )


def walk_entries(scan_dir: Callable[[WorkspacePath | None], WorkspaceDirectoryScan],
                 start: WorkspacePath | None, depth: int, max_entries: int) -> WorkspaceFileList:
    """Depth-first walk of ``scan_dir`` down to ``depth`` levels, stopping at ``max_entries``.

    Shared by the storage port and the scoped view (which walks its policy-filtered and
    skills-mounted listing the same way). A refused child is recorded in ``refused`` and
    takes a place of the bound like any entry (so a directory of planted nodes cannot make a
    listing unbounded); the walk goes on past it. Final order: directories first, then
    files, each group sorted by path; refused entries sorted by path.
    """
    out: list[WorkspaceEntry] = []
    refused: list[WorkspaceRefusedEntry] = []

    def visit(path: WorkspacePath | None, level: int) -> bool:
        scan = scan_dir(path)
        children: list[WorkspaceDirectoryEntry | WorkspaceRefusedEntry] = [
            *scan.entries, *scan.refused]
        children.sort(key=lambda child: child.path)
        for child in children:
            if len(out) + len(refused) >= max_entries:
                return True
            if isinstance(child, WorkspaceRefusedEntry):
                refused.append(child)
                continue
            kind: Literal["file", "directory"] = child.metadata.kind
            out.append(WorkspaceEntry(child.path, kind))
            if kind == "directory" and level > 1 and visit(WorkspacePath(child.path), level - 1):
                return True
        return False

    truncated = visit(start, depth)
    out.sort(key=lambda e: (e.kind != "directory", e.path))
    refused.sort(key=lambda e: e.path)
    return WorkspaceFileList(out, truncated, refused)
