"""The read-only ``skills/`` mount with macro projection (docs/js-and-skills.md).

:class:`BoundSkillsMount` implements the :class:`~tavernlab.workspace.scope.SkillsMount`
protocol over an Invocation's bindings and the run's :class:`FrozenMacros`:

* ``skills`` lists one folder per bound skill, sorted by name (empty when none are bound);
* ``skills/<name>/...`` is served from the bound package's current files; an unknown name is
  ``NotFound("Skill is not available: skills/<name>")``; reading ``skills`` or a folder as a
  file is ``PathIsDirectory``;
* **projection**: UTF-8 files outside ``scripts/`` are rendered through the frozen macros;
  files under ``scripts/`` and non-UTF-8 files are served raw. Sizes in metadata and listings
  are projected lengths, and ``max_bytes`` applies after projection.

tavernlab choices where upstream detail is unknown: a bound package that disappeared fails
with ``NotFound("Bound skill package <scope>/<name> is no longer installed: skills/<name>")``;
a macro limit hit while projecting is reported as storage ``InvalidData`` with the macro
message; files are re-read and re-rendered on every call (nothing is cached, so a replaced
package is seen at once).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from tavernlab.errors import (
    FileIo,
    InvalidData,
    MacroError,
    MacroLimitExceeded,
    NotFound,
    PathIsDirectory,
    SkillUnavailable,
)
from tavernlab.paths import WorkspacePath
from tavernlab.skills._index import SkillScope
from tavernlab.workspace.macros import FrozenMacros
from tavernlab.workspace.storage import (
    UNSUPPORTED_NODE,
    NotRegularFile,
    WorkspaceDirectoryEntry,
    WorkspaceMetadata,
    not_found,
    read_regular,
)


class MountedSkill(Protocol):
    """What the mount needs of a bound skill (a :class:`~tavernlab.skills._binding.MountedSkill`
    is one): its name, the installed package directory and the scope it came from."""

    @property
    def name(self) -> str:
        """The skill name (``skills/<name>``)."""

    @property
    def package_dir(self) -> Path:
        """The installed package directory."""

    @property
    def scope(self) -> SkillScope:
        """The scope it is installed in."""

SCRIPTS_DIR = "scripts"


def is_projected(relative: tuple[str, ...]) -> bool:
    """Whether a package file (path parts below ``skills/<name>``) gets macro projection:
    everything except files under ``scripts/``."""
    return not (len(relative) > 1 and relative[0] == SCRIPTS_DIR)


class BoundSkillsMount:
    """``skills/`` for one Invocation: its bindings, projected with the run's macros."""

    def __init__(self, bindings: Iterable[MountedSkill] | Mapping[str, MountedSkill],
                 macros: FrozenMacros) -> None:
        items = list(bindings.values() if isinstance(bindings, Mapping) else bindings)
        self.bindings: dict[str, MountedSkill] = {}
        for binding in sorted(items, key=lambda b: b.name):
            if binding.name in self.bindings:
                raise ValueError(f"skill {binding.name} is bound twice")
            self.bindings[binding.name] = binding
        self.macros = macros

    # -- resolution ------------------------------------------------------------------------

    def _binding(self, path: WorkspacePath) -> MountedSkill:
        name = path.parts[1]
        binding = self.bindings.get(name)
        if binding is None:
            raise SkillUnavailable(name, path=path.text)
        return binding

    def _locate(self, path: WorkspacePath) -> tuple[Path, os.stat_result]:
        """The host path and ``lstat`` of ``skills/<name>/...``, walked segment by segment
        inside the bound package (a symlink or special file anywhere fails)."""
        binding = self._binding(path)
        try:
            st = os.lstat(binding.package_dir)
        except FileNotFoundError:
            st = None
        if st is None or not stat.S_ISDIR(st.st_mode):
            raise NotFound(f"Bound skill package {binding.scope.key}/{binding.name} is no "
                           f"longer installed: skills/{binding.name}", path=path.text)
        current = binding.package_dir
        for part in path.parts[2:]:
            if not stat.S_ISDIR(st.st_mode):
                raise not_found(path)
            current = current / part
            try:
                st = os.lstat(current)
            except (FileNotFoundError, NotADirectoryError):
                raise not_found(path) from None
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                raise InvalidData(UNSUPPORTED_NODE)
        return current, st

    def _projected(self, path: WorkspacePath, host: Path) -> bytes:
        try:
            raw = read_regular(host)
        except NotRegularFile:  # swapped for a FIFO or a device since it was looked at
            raise InvalidData(UNSUPPORTED_NODE) from None
        except OSError as exc:
            raise FileIo("read", path.text, exc) from None
        if not is_projected(path.parts[2:]):
            return raw
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw
        try:
            return self.macros.render(text).encode("utf-8", "surrogatepass")
        except (MacroError, MacroLimitExceeded) as exc:
            raise InvalidData(exc.message) from None

    def _metadata(self, path: WorkspacePath, host: Path, st: os.stat_result
                  ) -> WorkspaceMetadata:
        if stat.S_ISDIR(st.st_mode):
            return WorkspaceMetadata("directory", 0, modified=_time(st.st_mtime))
        return WorkspaceMetadata("file", len(self._projected(path, host)),
                                 modified=_time(st.st_mtime))

    # -- the SkillsMount protocol ---------------------------------------------------------

    def metadata(self, path: WorkspacePath) -> WorkspaceMetadata:
        """``skills`` and ``skills/<name>`` are folders; a file reports its projected size."""
        if len(path.parts) == 1:
            return WorkspaceMetadata("directory", 0)
        host, st = self._locate(path)
        return self._metadata(path, host, st)

    def read_dir(self, path: WorkspacePath, max_entries: int | None
                 ) -> list[WorkspaceDirectoryEntry]:
        """One level, sorted by path; more than ``max_entries`` children fails."""
        if len(path.parts) == 1:
            entries = [WorkspaceDirectoryEntry(f"skills/{name}",
                                               WorkspaceMetadata("directory", 0))
                       for name in self.bindings]
        else:
            host, st = self._locate(path)
            if not stat.S_ISDIR(st.st_mode):
                raise FileIo("list", path.text, OSError(errno.ENOTDIR, "Not a directory"))
            entries = []
            with os.scandir(host) as children:
                names = sorted(child.name for child in children)
            for name in names:
                child = path.join(name)
                child_host, child_st = self._locate(child)
                entries.append(WorkspaceDirectoryEntry(
                    child.text, self._metadata(child, child_host, child_st)))
        if max_entries is not None and len(entries) > max_entries:
            raise InvalidData(f"Workspace directory exceeds {max_entries} entries: {path.text}")
        return entries

    def read_file(self, path: WorkspacePath, max_bytes: int | None) -> bytes:
        """The projected bytes of a skill file (raw under ``scripts/`` or when not UTF-8)."""
        if len(path.parts) == 1:
            raise PathIsDirectory(path.text)
        host, st = self._locate(path)
        if stat.S_ISDIR(st.st_mode):
            raise PathIsDirectory(path.text)
        data = self._projected(path, host)
        if max_bytes is not None and len(data) > max_bytes:
            raise InvalidData(f"Workspace read exceeds {max_bytes} bytes: {path.text}")
        return data


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)
