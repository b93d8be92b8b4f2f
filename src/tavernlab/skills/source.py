"""Skill sources: a directory, a ZIP (``.zip``/``.ttskill``) or inline files -> packages.

spec/js-and-skills.md section 8.7: "Directories and ZIPs are searched recursively for skills."
Every folder that holds a ``SKILL.md`` is a skill root, except inside another root (the
outermost root owns everything below it, so an example ``SKILL.md`` under ``examples/`` stays
part of its skill). Files outside every root are not part of any package and are not read.

Everything is checked before anything is written: a directory is walked with ``lstat`` (a
symlink or special file anywhere fails), each package's file count and sizes are checked from
``stat`` before its files are read, and archives are checked entry by entry
(:mod:`tavernlab.skills.archive`). Sources are read into memory; nothing touches the lab.

tavernlab choices where upstream detail is unknown: a source path that is itself a symlink is
refused (upstream: ``Skill import root cannot be a symlink``); a special file (FIFO, socket,
device) fails the package instead of being skipped; a file name that is not UTF-8 fails.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from tavernlab.skills.archive import ARCHIVE_SUFFIXES, read_archive
from tavernlab.skills.errors import InvalidSkillPackage, SkillNotFound
from tavernlab.skills.package import (
    SKILL_MD,
    FileTree,
    SkillPackage,
    check_file_limits,
    normalize_skill_path,
    validate_package,
)


def is_archive(path: Path) -> bool:
    """Whether ``path`` names a skill archive by its extension."""
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def find_skill_roots(paths: Iterable[str]) -> list[str]:
    """The outermost folders (``""`` = the top) that contain a ``SKILL.md`` file, sorted."""
    candidates = set()
    for path in paths:
        head, _, name = path.rpartition("/")
        if name == SKILL_MD:
            candidates.add(head)
    if "" in candidates:
        return [""]
    roots: list[str] = []
    for candidate in sorted(candidates, key=lambda c: (c.count("/"), c)):
        if not any(candidate.startswith(root + "/") for root in roots):
            roots.append(candidate)
    return sorted(roots)


def _below(root: str, path: str) -> str | None:
    """``path`` relative to ``root``, or ``None`` when it is not below it."""
    if root == "":
        return path
    return path[len(root) + 1:] if path.startswith(root + "/") else None


def _no_skill_found() -> InvalidSkillPackage:
    return InvalidSkillPackage("Skill package must contain SKILL.md")


def _unique_names(packages: list[SkillPackage]) -> list[SkillPackage]:
    seen: dict[str, str] = {}
    for package in packages:
        if package.name in seen:
            raise InvalidSkillPackage(
                f"Skill source contains more than one skill named '{package.name}' "
                f"('{seen[package.name] or '.'}' and '{package.origin or '.'}')")
        seen[package.name] = package.origin
    return packages


def packages_from_files(files: Mapping[str, bytes]) -> list[SkillPackage]:
    """Split a tree of normalized paths into its skill packages and validate each."""
    roots = find_skill_roots(files)
    if not roots:
        raise _no_skill_found()
    packages = []
    for root in roots:
        own = {rel: data for path, data in files.items()
               if (rel := _below(root, path)) is not None}
        packages.append(validate_package(own, origin=root))
    return _unique_names(packages)


def load_inline(files: Mapping[str, bytes | str]) -> list[SkillPackage]:
    """Packages from inline files (as embedded in a preset or character); ``str`` is UTF-8."""
    tree = FileTree()
    for raw, content in files.items():
        tree.add(normalize_skill_path(raw),
                 content.encode("utf-8") if isinstance(content, str) else bytes(content))
    return packages_from_files(tree.files)


def _walk(top: Path) -> list[tuple[str, Path, int]]:
    """Every regular file below ``top`` as ``(relative path, host path, size)``; a symlink,
    special file or non-UTF-8 name anywhere fails."""
    found: list[tuple[str, Path, int]] = []
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
            try:
                relative.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidSkillPackage(
                    f"Skill file name is not UTF-8: {relative!r}") from None
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                raise InvalidSkillPackage(f"Skill package cannot contain symlink: {relative}")
            if stat.S_ISDIR(mode):
                pending.append((relative, Path(entry.path)))
            elif stat.S_ISREG(mode):
                found.append((relative, Path(entry.path),
                              entry.stat(follow_symlinks=False).st_size))
            else:
                raise InvalidSkillPackage(
                    f"Skill package cannot contain special file: {relative}")
    return found


def load_directory(top: Path) -> list[SkillPackage]:
    """Packages found in a directory tree (see the module notes)."""
    walked = _walk(top)
    roots = find_skill_roots(relative for relative, _, _ in walked)
    if not roots:
        raise _no_skill_found()
    packages = []
    for root in roots:
        members = [(normalize_skill_path(rel), host, size) for relative, host, size in walked
                   if (rel := _below(root, relative)) is not None]
        check_file_limits((path, size) for path, _, size in members)
        tree = FileTree()
        for path, host, size in members:
            try:
                data = host.read_bytes()
            except OSError as exc:
                raise InvalidSkillPackage(
                    f"Failed to read Skill file '{path}': {exc.strerror or exc}") from None
            if len(data) != size:
                raise InvalidSkillPackage(f"Skill file '{path}' changed while it was read")
            tree.add(path, data)
        packages.append(validate_package(tree.files, origin=root))
    return _unique_names(packages)


def load_source(path: Path | str) -> list[SkillPackage]:
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
        return packages_from_files(read_archive(source))
    raise InvalidSkillPackage(
        f"Skill source must be a directory, a .zip or a .ttskill file: {source}")
