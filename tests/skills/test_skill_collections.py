"""Sources holding several skills (docs/js-and-skills.md, "Skill packages").

Each package of a directory or ZIP is validated and installed on its own; invalid ones are
reported with their folder and message, apart from the installed ones, and never block them.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tavernlab.cli import main
from tavernlab.skills import (
    InvalidPackage,
    InvalidSkillPackage,
    SkillConflict,
    SkillRepository,
)

INK = "---\nname: ink\ndescription: Ink recipes.\n---\n# ink\n"
PAPER = "---\nname: paper\ndescription: Paper sizes.\n---\n# paper\n"
EXAMPLE = "---\nname: example\ndescription: An example.\n---\n"
TORN = "# torn\nThis text has no front matter.\n"
NO_FRONT_MATTER = "SKILL.md must start with YAML frontmatter"


@pytest.fixture
def pack(tmp_path: Path, write_files) -> Path:
    """Acceptance 8's directory ``pack/`` with its four ``SKILL.md`` files."""
    return write_files(tmp_path / "pack", {
        "ink/SKILL.md": INK,
        "ink/examples/SKILL.md": EXAMPLE,
        "shelf/paper/SKILL.md": PAPER,
        "shelf/torn/SKILL.md": TORN,
    })


def _zip_of(folder: Path, archive: Path) -> Path:
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                out.write(path, path.relative_to(folder).as_posix())
    return archive


def test_acceptance_8_search_finds_three_packages(repo: SkillRepository, pack: Path) -> None:
    scan = repo.validate(pack)
    assert [p.origin for p in scan.packages] + [i.origin for i in scan.invalid] == [
        "ink", "shelf/paper", "shelf/torn"]
    ink, paper = scan.packages
    assert (ink.name, paper.name) == ("ink", "paper")
    assert [f.path for f in ink.files] == ["SKILL.md", "examples/SKILL.md"]
    assert scan.invalid == (InvalidPackage("shelf/torn", "skill.invalid_package",
                                           NO_FRONT_MATTER),)


@pytest.mark.parametrize("as_zip", [False, True], ids=["directory", "zip"])
def test_acceptance_8_install_installs_the_valid_and_reports_the_invalid(
        repo: SkillRepository, pack: Path, tmp_path: Path, as_zip: bool) -> None:
    source = _zip_of(pack, tmp_path / "pack.zip") if as_zip else pack
    report = repo.install(source)
    assert [(r.origin, r.name, r.action) for r in report.results] == [
        ("ink", "ink", "installed"), ("shelf/paper", "paper", "installed")]
    assert report.installed == ["ink", "paper"]
    assert (report.replaced, report.skipped, report.already_installed) == ([], [], [])
    assert report.invalid == (InvalidPackage("shelf/torn", "skill.invalid_package",
                                             NO_FRONT_MATTER),)
    assert not report.ok
    assert [e.name for e in repo.list()] == ["ink", "paper"]
    assert (repo.installed_root / "global" / "ink" / "examples" / "SKILL.md").is_file()
    with pytest.raises(InvalidSkillPackage) as caught:
        report.check()
    assert caught.value.message == f"shelf/torn: {NO_FRONT_MATTER}"
    assert report.to_json()["invalid"] == [
        {"origin": "shelf/torn", "code": "skill.invalid_package", "message": NO_FRONT_MATTER}]


def test_acceptance_8_on_the_command_line(pack: Path, tmp_path: Path, capsys,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    lab = tmp_path / "lab"
    assert main(["skill", "validate", str(pack)]) == 1
    out, err = capsys.readouterr()
    ink_hash = SkillRepository(lab).validate(pack).packages[0].installed_hash
    assert err == ""
    assert out.splitlines()[0] == (f"ok ink (in ink/): 2 files, {len(INK) + len(EXAMPLE)} bytes, "
                                   f"installed hash {ink_hash}")
    assert out.splitlines()[1].startswith("ok paper (in shelf/paper/): 1 files, ")
    assert out.splitlines()[2:] == [f"invalid shelf/torn: {NO_FRONT_MATTER}"]

    assert main(["skill", "install", str(pack), "--lab", str(lab)]) == 1
    out, err = capsys.readouterr()
    assert err == ""
    assert out == (f"installed: ink in global (installed hash {ink_hash})\n"
                   f"installed: paper in global (installed hash "
                   f"{SkillRepository(lab).get('paper').installed_hash})\n"
                   f"invalid: shelf/torn: {NO_FRONT_MATTER}\n")
    assert main(["skill", "install", str(pack), "--lab", str(lab), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [r["action"] for r in report["results"]] == ["already_installed"] * 2
    assert report["invalid"] == [{"origin": "shelf/torn", "code": "skill.invalid_package",
                                  "message": NO_FRONT_MATTER}]
    (pack / "shelf" / "torn" / "SKILL.md").write_text(
        "---\nname: torn\ndescription: Mended.\n---\n")
    assert main(["skill", "install", str(pack), "--lab", str(lab)]) == 0
    assert capsys.readouterr().out.splitlines()[2].startswith("installed: torn in global ")


def test_one_bad_package_in_a_zip_does_not_block_the_others(repo: SkillRepository,
                                                            tmp_path: Path) -> None:
    archive = tmp_path / "mixed.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("bomb/SKILL.md", "---\nname: bomb\ndescription: B.\n---\n")
        out.writestr("bomb/zeros.bin", b"\0" * 1_000_000)
        out.writestr("evil/SKILL.md", "---\nname: evil\ndescription: E.\n---\n")
        out.writestr("evil/../../escape.txt", "x")
        out.writestr("good/SKILL.md", "---\nname: good\ndescription: G.\n---\n")
    report = repo.install(archive)
    assert report.installed == ["good"]
    assert report.invalid == (
        InvalidPackage("bomb", "skill.invalid_package", "Skill archive entry 'bomb/zeros.bin' "
                       "has an excessive compression ratio (over 100:1)"),
        InvalidPackage("evil", "skill.invalid_package",
                       "Skill file path cannot contain .. (`evil/../../escape.txt`)"),
    )
    assert not (tmp_path / "escape.txt").exists()


def test_acceptance_9_no_license_no_warning(repo: SkillRepository, make_skill) -> None:
    report = repo.install(make_skill("plain", files={"references/guide.md": "# Guide\n"}))
    (result,) = report.results
    assert result.warnings == []
    stored = json.loads(repo.index_path.read_text())["skills"][0]
    assert "license" not in stored
    assert repo.get("plain").license is None


def test_acceptance_3_conflict_without_a_choice(repo: SkillRepository, make_skill,
                                                snapshot) -> None:
    folder = make_skill("notes", files={"references/a.md": "one\n"})
    repo.install(folder)
    (folder / "references" / "a.md").write_text("two\n")
    other = make_skill("fresh")
    before = snapshot(repo.root)
    with pytest.raises(SkillConflict) as caught:
        repo.install_packages([*repo.validate(other).packages, *repo.validate(folder).packages])
    assert "Skill 'notes' already exists with different content; conflict_strategy is " \
           "required" in caught.value.message
    assert caught.value.code == "skill.conflict"
    assert 'on_conflict="replace"' in caught.value.message
    assert snapshot(repo.root) == before  # the new `fresh` package was not installed either
    assert repo.install(folder, on_conflict="replace").replaced == ["notes"]


def test_reinstalling_a_changed_skill_names_the_choice(repo: SkillRepository, make_skill,
                                                      capsys, tmp_path: Path) -> None:
    """The conflict message says how to choose, in Python and on the command line."""
    folder = make_skill("notes", files={"references/a.md": "one\n"})
    repo.install(folder, scope="profile:writer")
    (folder / "references" / "a.md").write_text("two\n")
    message = ("Skill 'notes' already exists with different content; conflict_strategy is "
               "required: install again with on_conflict=\"replace\" to replace it or "
               "on_conflict=\"skip\" to keep the installed one (command line: --replace or "
               "--skip; scope profile:writer)")
    with pytest.raises(SkillConflict) as caught:
        repo.install(folder, scope="profile:writer")
    assert caught.value.message == message
    argv = ["skill", "install", str(folder), "--lab", str(repo.data_root), "--scope",
            "profile:writer"]
    assert main(argv) == 1
    assert capsys.readouterr() == ("", f"error: skill.conflict: {message}\n")
    assert main([*argv, "--replace"]) == 0
    assert capsys.readouterr().out.startswith("replaced: notes in profile:writer ")
