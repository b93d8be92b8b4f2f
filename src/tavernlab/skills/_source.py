"""Skill sources: a directory, a ZIP (``.zip``/``.ttskill``) or inline files -> packages.

Directories and ZIPs are searched recursively for skills (docs/js-and-skills.md).
Each folder holding a ``SKILL.md`` is one package, validated on its own
(:mod:`tavernlab.skills._collection`); the result is a :class:`SourceScan` of valid and invalid
packages. Only a problem with the source itself fails the whole call: a missing source, a
source that is neither a directory nor an archive, an unreadable folder, an archive refused as
a whole (:mod:`tavernlab.skills._archive`), or no ``SKILL.md`` anywhere.

Everything is checked before anything is written: a directory is walked with ``lstat`` (a
symlink or special file inside a package makes that package invalid), each package's file
count and sizes are checked from ``stat`` before its files are read. Sources are read into
memory; nothing touches the lab.

tavernlab choices where upstream detail is unknown: a source path that is itself a symlink is
refused (upstream: ``Skill import root cannot be a symlink``); a special file (FIFO, socket,
device) fails its package instead of being skipped; a file name that is not UTF-8 fails its
package; symlinks are never followed, so a ``SKILL.md`` behind a symlinked folder is not found.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tavernlab.skills._archive import ARCHIVE_SUFFIXES, scan_archive
from tavernlab.skills._collection import (
    WORKING_FILE_NAMES,
    SourceScan,
    below,
    find_skill_roots,
    is_working_file,
    no_skill_found,
    scan_files,
    scan_roots,
)
from tavernlab.skills._errors import InvalidSkillPackage, SkillNotFound
from tavernlab.skills._package import (
    FileTree,
    SkillPackage,
    check_file_limits,
    normalize_skill_path,
    printable,
    validate_package,
)
from tavernlab.workspace.storage import read_all


def is_archive(path: Path) -> bool:
    """Whether ``path`` names a skill archive by its extension."""
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def load_inline(files: Mapping[str, bytes | str]) -> SourceScan:
    """Packages from inline files (as embedded in a preset or character); ``str`` is UTF-8.

    A bad path fails the whole call: inline files come from one document, not a collection.
    """
    tree = FileTree()
    for raw, content in files.items():
        tree.add(normalize_skill_path(raw),
                 content.encode("utf-8") if isinstance(content, str) else bytes(content))
    return scan_files(tree.files)


@dataclass(frozen=True, slots=True)
class _Entry:
    """One entry below a directory source: a regular file (``problem`` empty, with its size)
    or something no package may contain (``problem`` says what)."""

    relative: str
    host: Path
    size: int = 0
    problem: str = ""


def _classify(relative: str, entry: os.DirEntry[str]) -> _Entry | Path:
    """A file or problem entry, or the host path of a folder to descend into."""
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        return _Entry(relative, Path(entry.path),
                      problem=f"Skill file name is not UTF-8: {relative!r}")
    status = entry.stat(follow_symlinks=False)
    if stat.S_ISLNK(status.st_mode):
        return _Entry(relative, Path(entry.path),
                      problem=f"Skill package cannot contain symlink: {printable(relative)}")
    if stat.S_ISDIR(status.st_mode):
        return Path(entry.path)
    if stat.S_ISREG(status.st_mode):
        return _Entry(relative, Path(entry.path), status.st_size)
    return _Entry(relative, Path(entry.path),
                  problem=f"Skill package cannot contain special file: {printable(relative)}")


def _walk(top: Path) -> list[_Entry]:
    """Every entry below ``top`` that is not a folder, sorted by path; a folder that cannot be
    read fails the whole source (it might hold packages)."""
    found: list[_Entry] = []
    pending: list[tuple[str, Path]] = [("", top)]
    while pending:
        prefix, folder = pending.pop()
        try:
            with os.scandir(folder) as entries:
                children = sorted(entries, key=lambda e: e.name)
        except OSError as exc:
            raise InvalidSkillPackage(f"Failed to read Skill directory '{prefix or '.'}': "
                                      f"{exc.strerror or exc}") from None
        for entry in children:
            relative = f"{prefix}/{entry.name}" if prefix else entry.name
            if entry.name in WORKING_FILE_NAMES:
                continue  # never part of a package: not even looked into
            classified = _classify(relative, entry)
            if isinstance(classified, Path):
                pending.append((relative, classified))
            else:
                found.append(classified)
    return sorted(found, key=lambda e: e.relative)


def _read_package(members: list[tuple[str, _Entry]], root: str) -> SkillPackage:
    """Validate one package of a directory: problems, paths, limits, then read and check."""
    for _, entry in members:
        if entry.problem:
            raise InvalidSkillPackage(entry.problem)
    normalized = [(normalize_skill_path(rel), entry) for rel, entry in members]
    check_file_limits((path, entry.size) for path, entry in normalized)
    tree = FileTree()
    for path, entry in normalized:
        try:
            # Up to one byte more than was seen: a file that grew is caught below.
            data = read_all(entry.host, entry.size, entry.size)
        except OSError as exc:
            raise InvalidSkillPackage(
                f"Failed to read Skill file '{path}': {exc.strerror or exc}") from None
        if len(data) != entry.size:
            raise InvalidSkillPackage(f"Skill file '{path}' changed while it was read")
        tree.add(path, data)
    return validate_package(tree.files, origin=root)


def load_directory(top: Path) -> SourceScan:
    """Packages found in a directory tree (see the module notes)."""
    walked = _walk(top)
    roots = find_skill_roots(entry.relative for entry in walked)
    if not roots:
        raise no_skill_found()

    def load(root: str) -> SkillPackage:
        members = [(rel, entry) for entry in walked
                   if (rel := below(root, entry.relative)) is not None
                   and not is_working_file(rel)]
        return _read_package(members, root)

    return scan_roots(roots, load)


def load_source(path: Path | str) -> SourceScan:
    """Packages from a directory or a ``.zip``/``.ttskill`` archive."""
    source = Path(path)
    try:
        mode = os.lstat(source).st_mode
    except FileNotFoundError:
        raise SkillNotFound(f"Skill source not found: {source}") from None
    except OSError as exc:
        raise InvalidSkillPackage(
            f"Failed to read Skill source '{source}': {exc.strerror or exc}") from None
    if stat.S_ISLNK(mode):
        raise InvalidSkillPackage("Skill import root cannot be a symlink")
    if stat.S_ISDIR(mode):
        return load_directory(source)
    if stat.S_ISREG(mode) and is_archive(source):
        return scan_archive(source)
    raise InvalidSkillPackage(
        f"Skill source must be a directory, a .zip or a .ttskill file: {source}")
