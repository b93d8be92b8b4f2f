"""The filesystem the shell sees, as Python: what :mod:`tavernlab.shell._vfs_abi` exports to
bashkit through its C ABI. :class:`VirtualFilesystem` is one operation per ABI entry;
:class:`VfsError` carries the ABI's error kind (``NotFound``, ``PermissionDenied``...) and the
message the shell prints."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol


class VfsErrorKind(enum.IntEnum):
    """``BashkitFsAbiErrorKind``: how bashkit classifies a failed operation."""

    OTHER = 0
    NOT_FOUND = 1
    ALREADY_EXISTS = 2
    PERMISSION_DENIED = 3
    INVALID_INPUT = 4
    IS_A_DIRECTORY = 5
    NOT_A_DIRECTORY = 6
    DIRECTORY_NOT_EMPTY = 7
    UNSUPPORTED = 8


class VfsError(Exception):
    """An ordinary file error reported to the shell command (``kind`` + message)."""

    def __init__(self, kind: VfsErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True, slots=True)
class VfsStat:
    """What ``stat`` reports: a file or a directory, its size, mode bits and times (seconds)."""

    is_dir: bool
    size: int
    mode: int
    modified: float = 0.0
    created: float = 0.0


class VirtualFilesystem(Protocol):
    """The operations bashkit calls, with absolute POSIX paths as bashkit resolved them."""

    def read_file(self, path: str) -> bytes:
        """The whole file."""

    def write_file(self, path: str, data: bytes) -> None:
        """Create or replace a file."""

    def append_file(self, path: str, data: bytes) -> None:
        """Append to a file (creating it)."""

    def mkdir(self, path: str, recursive: bool) -> None:
        """``mkdir`` / ``mkdir -p``."""

    def remove(self, path: str, recursive: bool) -> None:
        """``rm`` / ``rm -r``."""

    def stat(self, path: str) -> VfsStat:
        """Metadata of a node."""

    def read_dir(self, path: str) -> list[tuple[str, VfsStat]]:
        """``(name, stat)`` of each child."""

    def exists(self, path: str) -> bool:
        """Whether the node exists (and may be seen)."""

    def rename(self, src: str, dst: str) -> None:
        """Move a file or directory to the exact target."""

    def copy(self, src: str, dst: str) -> None:
        """Copy a file to the exact target."""

    def symlink(self, target: str, link: str) -> None:
        """Create a symbolic link."""

    def read_link(self, path: str) -> str:
        """The target of a symbolic link."""

    def chmod(self, path: str, mode: int) -> None:
        """Change permission bits."""

    def fault(self, error: BaseException) -> None:
        """An unexpected exception escaped an operation (not a :class:`VfsError`)."""
