"""The values of the ``WorkspaceFs`` contract (spec/workspace.md section 5.1): files,
metadata, directory entries, bounded listings and compare-and-swap write guards, plus the
small rules every storage caller shares (digests, UTF-8 decoding, the listing walk)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from tavernlab.errors import FileNotText, NotFound
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


@dataclass(frozen=True, slots=True)
class WorkspaceFileList:
    """A bounded recursive listing; ``truncated`` says entries were left out."""

    entries: list[WorkspaceEntry] = field(default_factory=list)
    truncated: bool = False


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


def metadata_from_stat(st: os.stat_result) -> WorkspaceMetadata:
    """The metadata of a node from its ``lstat``."""
    if stat.S_ISDIR(st.st_mode):
        kind: Literal["file", "directory"] = "directory"
        size = 0
    else:
        kind = "file"
        size = st.st_size
    created = getattr(st, "st_birthtime", None)
    return WorkspaceMetadata(
        kind=kind,
        bytes=size,
        modified=_timestamp(st.st_mtime),
        created=_timestamp(created) if created is not None else None,
    )


def walk_entries(read_dir: Callable[[WorkspacePath | None], list[WorkspaceDirectoryEntry]],
                 start: WorkspacePath | None, depth: int, max_entries: int) -> WorkspaceFileList:
    """Depth-first walk of ``read_dir`` down to ``depth`` levels, stopping at ``max_entries``.

    Shared by the storage port and the scoped view (which walks its policy-filtered and
    skills-mounted listing the same way). Final order: directories first, then files, each
    group sorted by path.
    """
    out: list[WorkspaceEntry] = []

    def visit(path: WorkspacePath | None, level: int) -> bool:
        for entry in read_dir(path):
            if len(out) >= max_entries:
                return True
            kind: Literal["file", "directory"] = entry.metadata.kind
            out.append(WorkspaceEntry(entry.path, kind))
            if kind == "directory" and level > 1 and visit(WorkspacePath(entry.path), level - 1):
                return True
        return False

    truncated = visit(start, depth)
    out.sort(key=lambda e: (e.kind != "directory", e.path))
    return WorkspaceFileList(out, truncated)
