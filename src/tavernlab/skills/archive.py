"""ZIP archives of skills: read (``.zip`` and the legacy ``.ttskill``) and write.

spec/js-and-skills.md sections 8.4 and 8.7. Reading checks **every** entry before any entry is
decompressed: symlink entries, encrypted entries, more than 1000 files, a file over 16 MiB,
more than 256 MiB in total, a compression ratio over 100, and the package path rules
(``../``, absolute, drive prefixes, forbidden segments). Nothing is extracted to disk at all:
the checked entries are read into memory and handed to package validation.

tavernlab choices where upstream detail is unknown:

* Like upstream, macOS metadata entries (a ``__MACOSX`` segment, ``.DS_Store``, ``._*`` files)
  are skipped; directory entries only imply folders.
* The ratio rule is ``uncompressed size > 100 x compressed size`` (so exactly 100:1 passes);
  an entry that claims data but has no compressed bytes fails too.
* Written archives are deterministic: entries sorted by path, timestamp 1980-01-01, mode 0644,
  deflated unless deflating would exceed the 100:1 ratio that reading enforces (then stored),
  so an exported skill can always be imported again.
"""

from __future__ import annotations

import io
import stat
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

from tavernlab.skills.errors import InvalidSkillPackage
from tavernlab.skills.package import (
    MAX_COMPRESSION_RATIO,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    FileTree,
    normalize_skill_path,
)

#: File name extensions read as skill archives (compared case-insensitively).
ARCHIVE_SUFFIXES = (".zip", ".ttskill")

_FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def is_ignored_entry(name: str) -> bool:
    """macOS archive litter: a ``__MACOSX`` segment, ``.DS_Store`` or an ``._*`` file."""
    segments = name.replace("\\", "/").split("/")
    last = segments[-1]
    return "__MACOSX" in segments or last == ".DS_Store" or last.startswith("._")


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def _check_entries(archive: zipfile.ZipFile) -> list[tuple[zipfile.ZipInfo, str]]:
    """Every rule that can be decided from the central directory; returns the file entries to
    read with their normalized paths."""
    selected: list[tuple[zipfile.ZipInfo, str]] = []
    total = 0
    for info in archive.infolist():
        name = info.filename
        if is_ignored_entry(name):
            continue
        if _is_symlink(info):
            raise InvalidSkillPackage(f"Skill archive entry cannot be a symlink: {name}")
        path = normalize_skill_path(name)
        if info.is_dir():
            continue
        if info.flag_bits & 0x1:
            raise InvalidSkillPackage(f"Skill archive entry '{name}' is encrypted")
        if len(selected) >= MAX_FILES:
            raise InvalidSkillPackage(f"Skill archive must contain <= {MAX_FILES} files")
        if info.file_size > MAX_FILE_BYTES:
            raise InvalidSkillPackage(
                f"Skill archive entry '{name}' exceeds {MAX_FILE_BYTES} bytes")
        if info.file_size > MAX_COMPRESSION_RATIO * info.compress_size:
            raise InvalidSkillPackage(
                f"Skill archive entry '{name}' has an excessive compression ratio "
                f"(over {MAX_COMPRESSION_RATIO}:1)")
        total += info.file_size
        if total > MAX_TOTAL_BYTES:
            raise InvalidSkillPackage(f"Skill archive exceeds {MAX_TOTAL_BYTES} bytes")
        selected.append((info, path))
    return selected


def read_archive(path: Path) -> dict[str, bytes]:
    """All files of a skill archive, keyed by normalized path, after checking every entry."""
    label = path.name
    try:
        with zipfile.ZipFile(path) as archive:
            entries = _check_entries(archive)
            tree = FileTree()
            for info, normalized in entries:
                data = archive.read(info)
                if len(data) != info.file_size:
                    raise InvalidSkillPackage(
                        f"Skill archive entry '{info.filename}' does not match its size")
                tree.add(normalized, data)
    # zipfile raises NotImplementedError for a compression method it cannot decode (and
    # RuntimeError for encrypted entries): both are unreadable archives, i.e. bad input.
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError,
            OSError) as exc:
        raise InvalidSkillPackage(f"Failed to read Skill archive '{label}': {exc}") from None
    return tree.files


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
