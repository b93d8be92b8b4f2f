"""Skill archives: every entry checked before anything is read or written (8.4, 8.7).

A package that breaks a rule is reported invalid (the others of the archive still install);
an archive that cannot be opened at all is refused as a whole.
"""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from tavernlab.skills import (
    InvalidPackage,
    InvalidSkillPackage,
    SkillRepository,
    load_source,
    write_archive,
)

SKILL_MD = "---\nname: demo\ndescription: Demo.\n---\n"


def _zip(path: Path, entries: dict[str, bytes | str], *,
         compression: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return path


def _rejects(repo: SkillRepository, archive: Path, message: str, snapshot) -> None:
    """The archive's only package is reported invalid with ``message`` by validation and by
    installation, which installs nothing; the lab is untouched."""
    before = snapshot(repo.data_root)
    invalid = (InvalidPackage("", "skill.invalid_package", message),)
    scan = repo.validate(archive)
    assert (scan.packages, scan.invalid) == ((), invalid)
    report = repo.install(archive)
    assert (report.results, report.invalid, report.ok) == ((), invalid, False)
    with pytest.raises(InvalidSkillPackage) as caught:
        report.check()
    assert caught.value.message == f".: {message}"
    assert snapshot(repo.data_root) == before
    assert not (repo.data_root / "_tauritavern").exists()


def _refuses(repo: SkillRepository, archive: Path, message: str, snapshot) -> None:
    """The whole archive is refused with ``message``; the lab is untouched."""
    before = snapshot(repo.data_root)
    for attempt in (repo.validate, repo.install):
        with pytest.raises(InvalidSkillPackage) as caught:
            attempt(archive)
        assert caught.value.message == message
        assert caught.value.code == "skill.invalid_package"
    assert snapshot(repo.data_root) == before
    assert not (repo.data_root / "_tauritavern").exists()


def test_dotdot_entry(repo, tmp_path: Path, snapshot) -> None:
    archive = _zip(tmp_path / "evil.zip", {"SKILL.md": SKILL_MD, "../escape.txt": "x"})
    _rejects(repo, archive, "Skill file path cannot contain .. (`../escape.txt`)", snapshot)
    assert not (tmp_path / "escape.txt").exists()


def test_absolute_and_drive_entries(repo, tmp_path: Path, snapshot) -> None:
    _rejects(repo, _zip(tmp_path / "abs.zip", {"SKILL.md": SKILL_MD, "/etc/x": "x"}),
             "Skill file path must be relative (`/etc/x`)", snapshot)
    _rejects(repo, _zip(tmp_path / "drive.zip", {"SKILL.md": SKILL_MD, "C:/x": "x"}),
             "Skill file path cannot use a Windows drive prefix (`C:/x`)", snapshot)


def test_compression_ratio_1000_to_1(repo, tmp_path: Path, snapshot) -> None:
    archive = _zip(tmp_path / "bomb.zip", {"SKILL.md": SKILL_MD, "bomb.txt": b"\0" * 1_000_000})
    info = zipfile.ZipFile(archive).getinfo("bomb.txt")
    assert info.file_size / info.compress_size > 900
    _rejects(repo, archive,
             "Skill archive entry 'bomb.txt' has an excessive compression ratio (over 100:1)",
             snapshot)


def test_symlink_entry(repo, tmp_path: Path, snapshot) -> None:
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("SKILL.md", SKILL_MD)
        link = zipfile.ZipInfo("scripts/link.js")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        out.writestr(link, "/etc/passwd")
    _rejects(repo, archive, "Skill archive entry cannot be a symlink: scripts/link.js", snapshot)


def test_too_many_files_and_a_big_file(repo, tmp_path: Path, snapshot) -> None:
    entries: dict[str, bytes | str] = {"SKILL.md": SKILL_MD}
    entries.update({f"refs/{i:04}.md": "x" for i in range(1000)})
    _rejects(repo, _zip(tmp_path / "many.zip", entries, compression=zipfile.ZIP_STORED),
             "Skill package must contain <= 1000 files", snapshot)
    big = _zip(tmp_path / "big.zip",
               {"SKILL.md": SKILL_MD, "big.bin": b"\0" * (16 * 1024 * 1024 + 1)},
               compression=zipfile.ZIP_STORED)
    _rejects(repo, big, "Skill file 'big.bin' exceeds 16777216 bytes", snapshot)


def test_total_size_is_checked_from_the_central_directory(repo, tmp_path: Path,
                                                           snapshot) -> None:
    """An archive whose directory claims 17 x 16 MiB fails before any entry is read."""
    archive = tmp_path / "claims.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as out:
        out.writestr("SKILL.md", SKILL_MD)
        for i in range(17):
            out.writestr(f"part{i}.bin", b"x")
        for info in out.infolist()[1:]:
            info.file_size = info.compress_size = 16 * 1024 * 1024
    _rejects(repo, archive, "Skill package exceeds 268435456 bytes", snapshot)


def test_not_a_zip(repo, tmp_path: Path, snapshot) -> None:
    archive = tmp_path / "broken.ttskill"
    archive.write_bytes(b"this is not a zip")
    _refuses(repo, archive, "Failed to read Skill archive 'broken.ttskill': File is not a zip "
             "file", snapshot)


def test_ttskill_and_folder_inside_archives(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "legacy.ttskill", {
        "demo/SKILL.md": SKILL_MD, "demo/scripts/a.js": "console.log(1)\n",
        "demo/": b"", "__MACOSX/demo/._SKILL.md": b"\0\1", "demo/.DS_Store": b"\0"})
    (package,) = load_source(archive).packages
    assert package.origin == "demo"
    assert [f.path for f in package.files] == ["SKILL.md", "scripts/a.js"]
    assert package.installed_hash == (
        "4c0b6cd70c030555acef709cfc70d4a0c5b44fa0056ff3eb9a33089ddb03a015")


def test_written_archives_are_deterministic_and_readable_again(tmp_path: Path) -> None:
    files = {"SKILL.md": SKILL_MD.encode(), "assets/zeros.bin": b"\0" * 1_000_000,
             "scripts/a.js": b"console.log(1)\n"}
    data = write_archive(files)
    assert write_archive(dict(reversed(list(files.items())))) == data
    (tmp_path / "out.zip").write_bytes(data)
    (package,) = load_source(tmp_path / "out.zip").packages
    assert package.contents == files
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        kinds = {i.filename: i.compress_type for i in archive.infolist()}
    assert kinds["assets/zeros.bin"] == zipfile.ZIP_STORED  # deflating would exceed 100:1
    assert kinds["SKILL.md"] == zipfile.ZIP_DEFLATED


def test_unsupported_compression_method_is_an_unreadable_archive(repo, tmp_path: Path,
                                                                 snapshot) -> None:
    archive = _zip(tmp_path / "odd.zip", {"SKILL.md": SKILL_MD},
                   compression=zipfile.ZIP_STORED)
    raw = bytearray(archive.read_bytes())
    local = raw.index(b"PK\x03\x04")
    central = raw.index(b"PK\x01\x02")
    raw[local + 8:local + 10] = (99).to_bytes(2, "little")  # method 99: not decodable
    raw[central + 10:central + 12] = (99).to_bytes(2, "little")
    archive.write_bytes(bytes(raw))
    _rejects(repo, archive, "Failed to read Skill archive 'odd.zip': "
             "That compression method is not supported", snapshot)
