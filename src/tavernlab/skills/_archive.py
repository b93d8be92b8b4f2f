"""ZIP archives of skills: read (``.zip`` and the legacy ``.ttskill``) and write.

See docs/js-and-skills.md. An archive may hold several packages (each folder
with a ``SKILL.md``, :mod:`tavernlab.skills._collection`). Reading checks **every** entry of a
package before any of its entries is decompressed: symlink entries, encrypted entries, the
package path rules (``../``, absolute, drive prefixes, forbidden segments), the file limits
(1000 files, 16 MiB per file, 256 MiB per package, from the central directory) and a
compression ratio over 100. A package that breaks a rule is reported invalid; the others are
still read. Nothing is extracted to disk at all: checked entries are read into memory.

The whole archive is refused when it cannot be opened, or when **any** entry name holds a
control character (a NUL, a newline, U+0000-U+001F, U+007F-U+009F). Python's ``zipfile``
cuts a name at its first NUL, so ``scripts/a.js\x00/../../../evil.js`` would otherwise pass
as ``scripts/a.js``; the check reads the name as stored in the archive.

tavernlab choices where upstream detail is unknown:

* Like upstream, macOS metadata entries (a ``__MACOSX`` segment, ``.DS_Store``, ``._*`` files)
  are skipped; directory entries only imply folders. Inside a skill package the author's
  working files (:func:`tavernlab.skills._collection.is_working_file`) are skipped too, as
  they are in a directory source.
* The ratio rule is ``uncompressed size > 100 x compressed size`` (so exactly 100:1 passes);
  an entry that claims data but has no compressed bytes fails too.
* An entry that cannot be decompressed (bad CRC, unsupported method) makes its package
  invalid with ``Failed to read Skill archive '<file>': <reason>``.
* Written archives are deterministic: entries sorted by path, timestamp 1980-01-01, mode 0644,
  deflated unless deflating would exceed the 100:1 ratio that reading enforces (then stored),
  so an exported skill can always be imported again.

Other ZIP formats of tavernlab (the replay bundles of :mod:`tavernlab.replay`) are read with
the same rules through :func:`read_archive_files`, with their own size limits.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from tavernlab.skills._collection import (
    SourceScan,
    below,
    find_skill_roots,
    is_working_file,
    no_skill_found,
    scan_roots,
)
from tavernlab.skills._errors import InvalidSkillPackage
from tavernlab.skills._package import (
    MAX_COMPRESSION_RATIO,
    FileTree,
    SkillPackage,
    check_file_limits,
    has_control_character,
    normalize_skill_path,
    printable,
    validate_package,
)
from tavernlab.workspace.storage import open_regular

#: File name extensions read as skill archives (compared case-insensitively).
ARCHIVE_SUFFIXES = (".zip", ".ttskill")

_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
#: What ``zipfile`` raises for an archive or entry it cannot read (``NotImplementedError`` for
#: a compression method it cannot decode, ``RuntimeError`` for encryption): bad input.
_UNREADABLE = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError,
               OSError)


def is_ignored_entry(name: str) -> bool:
    """macOS archive litter: a ``__MACOSX`` segment, ``.DS_Store`` or an ``._*`` file."""
    segments = name.replace("\\", "/").split("/")
    last = segments[-1]
    return "__MACOSX" in segments or last == ".DS_Store" or last.startswith("._")


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def _grouping_path(name: str) -> str:
    """An entry name as :func:`normalize_skill_path` would write it (trimmed, ``\\`` as ``/``,
    empty and ``.`` segments dropped) but without its checks: enough to tell which package
    folder the entry lies in; the package path rules are checked when that package is read."""
    parts = name.strip().replace("\\", "/").split("/")
    return "/".join(s for s in parts if s not in ("", "."))


def _members(archive: zipfile.ZipFile) -> list[tuple[zipfile.ZipInfo, str]]:
    """The entries that are not macOS litter, with their grouping paths; refuses the whole
    archive when an entry name holds a control character."""
    members = []
    for info in archive.infolist():
        if has_control_character(info.orig_filename):
            raise InvalidSkillPackage("Skill archive entry name contains a control character: "
                                      f"{printable(info.orig_filename)}")
        if not is_ignored_entry(info.filename):
            members.append((info, _grouping_path(info.filename)))
    return members


LimitCheck = Callable[[Iterable[tuple[str, int]]], None]


def _check_entries(entries: list[zipfile.ZipInfo], check_limits: LimitCheck = check_file_limits
                   ) -> list[tuple[zipfile.ZipInfo, str]]:
    """Every rule of one package that the central directory decides; returns its file entries
    with their normalized package paths."""
    selected: list[tuple[zipfile.ZipInfo, str]] = []
    for info in entries:
        name = info.filename
        if _is_symlink(info):
            raise InvalidSkillPackage(f"Skill archive entry cannot be a symlink: {name}")
        path = normalize_skill_path(name)
        if info.is_dir():
            continue
        if info.flag_bits & 0x1:
            raise InvalidSkillPackage(f"Skill archive entry '{name}' is encrypted")
        if info.file_size > MAX_COMPRESSION_RATIO * info.compress_size:
            raise InvalidSkillPackage(
                f"Skill archive entry '{name}' has an excessive compression ratio "
                f"(over {MAX_COMPRESSION_RATIO}:1)")
        selected.append((info, path))
    check_limits((path, info.file_size) for info, path in selected)
    return selected


def _read_entries(archive: zipfile.ZipFile, label: str, entries: list[zipfile.ZipInfo],
                  root: str, check_limits: LimitCheck = check_file_limits,
                  name_entries: bool = False) -> FileTree:
    """Check, then read, the entries below ``root`` (paths relative to it); with
    ``name_entries`` an entry that cannot be read is named in the error."""
    prefix = len(root) + 1 if root else 0
    tree = FileTree()
    for info, path in _check_entries(entries, check_limits):
        relative = path[prefix:]  # the grouping path that chose the entry is this path
        try:
            data = archive.read(info)
        except _UNREADABLE as exc:
            where = f"entry '{info.filename}': " if name_entries else ""
            raise InvalidSkillPackage(f"Failed to read Skill archive '{label}': {where}{exc}"
                                      ) from None
        if len(data) != info.file_size:
            raise InvalidSkillPackage(
                f"Skill archive entry '{info.filename}' does not match its size")
        tree.add(relative, data)
    return tree


def _read_package(archive: zipfile.ZipFile, label: str, entries: list[zipfile.ZipInfo],
                  root: str) -> SkillPackage:
    """Check, then read and validate, the entries of the package at ``root``."""
    return validate_package(_read_entries(archive, label, entries, root).files, origin=root)


@contextlib.contextmanager
def _open_zip(path: Path) -> Iterator[zipfile.ZipFile]:
    """The ZIP at ``path``, opened as a regular file without waiting (a FIFO or a device
    put in an archive's place fails as unreadable, see :func:`open_regular`)."""
    with os.fdopen(open_regular(path, follow=True), "rb") as handle, \
            zipfile.ZipFile(handle) as archive:
        yield archive


def read_archive_files(path: Path, check_limits: LimitCheck) -> dict[str, bytes]:
    """Every file of the ZIP at ``path``, by normalized path, read into memory under the skill
    archive rules (control characters in names, symlinks, the path rules, encryption, the
    compression ratio, sizes matching the central directory) with ``check_limits`` deciding
    the file count and sizes in place of the package limits. Nothing is extracted to disk.
    A broken rule raises :class:`InvalidSkillPackage` naming the entry (an entry whose bytes
    cannot be read too)."""
    label = path.name
    try:
        with _open_zip(path) as archive:
            entries = [info for info, _ in _members(archive)]
            return _read_entries(archive, label, entries, "", check_limits, True).files
    except _UNREADABLE as exc:
        raise InvalidSkillPackage(f"Failed to read Skill archive '{label}': {exc}") from None


def scan_archive(path: Path) -> SourceScan:
    """Every package of a skill archive, each checked and read on its own."""
    label = path.name
    try:
        with _open_zip(path) as archive:
            members = _members(archive)
            roots = find_skill_roots(grouping for info, grouping in members
                                     if not info.is_dir())
            if not roots:
                raise no_skill_found()

            def load(root: str) -> SkillPackage:
                own = [info for info, grouping in members
                       if (rel := below(root, grouping)) is not None
                       and not is_working_file(rel)]
                return _read_package(archive, label, own, root)

            return scan_roots(roots, load)
    except _UNREADABLE as exc:
        raise InvalidSkillPackage(f"Failed to read Skill archive '{label}': {exc}") from None


def write_archive(files: Mapping[str, bytes]) -> bytes:
    """A deterministic ZIP of ``files`` (sorted, fixed timestamps); see the module notes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(files):
            data = files[path]
            info = zipfile.ZipInfo(path, date_time=_FIXED_TIME)
            info.create_system = 3
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            deflated = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
            size = len(deflated.compress(data) + deflated.flush())
            info.compress_type = (zipfile.ZIP_STORED
                                  if len(data) > MAX_COMPRESSION_RATIO * size
                                  else zipfile.ZIP_DEFLATED)
            archive.writestr(info, data)
    return buffer.getvalue()
