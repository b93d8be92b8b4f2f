"""The installed-skill repository (docs/js-and-skills.md)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tavernlab.clock import SYSTEM_CLOCK, FixedClock, SequentialIds
from tavernlab.skills import (
    InvalidPackage,
    InvalidSkillIndex,
    InvalidSkillPackage,
    SkillConflict,
    SkillNotFound,
    SkillRepository,
    SkillScope,
    SkillSource,
    SkillStorageError,
    load_source,
)


def _installed(repo: SkillRepository) -> list[str]:
    root = repo.installed_root
    return sorted(str(p.relative_to(root)) for p in root.glob("*/*")) if root.exists() else []


def test_layout_and_index_v2(repo: SkillRepository, make_skill) -> None:
    folder = make_skill(files={"scripts/a.js": "console.log(1)\n"})
    (result,) = repo.install(folder).results
    assert (result.action, result.name, result.scope.key) == ("installed", "demo", "global")
    assert _installed(repo) == ["global/demo"]
    assert (repo.installed_root / "global" / "demo" / "scripts" / "a.js").read_text() == (
        "console.log(1)\n")
    stored = json.loads(repo.index_path.read_text())
    assert repo.index_path == repo.data_root / "_tauritavern/skills/index/skills.json"
    assert stored["version"] == 2
    (entry,) = stored["skills"]
    assert entry["scope"] == {"kind": "global"}
    assert entry["sourceRefs"] == [{"kind": "directory", "id": str(folder.resolve()),
                                    "label": "demo", "installedHash": entry["installedHash"]}]
    assert {k: entry[k] for k in ("name", "description", "fileCount", "hasScripts",
                                  "hasBinary", "tags")} == {
        "name": "demo", "description": "Demo.", "fileCount": 2, "hasScripts": True,
        "hasBinary": False, "tags": []}
    assert entry["totalBytes"] == sum(p.stat().st_size for p in folder.rglob("*")
                                      if p.is_file())
    assert set(entry) >= {"installedAt", "installedHash"}
    assert list((repo.staging_root).iterdir()) == []


def test_scope_directories() -> None:
    assert SkillScope.parse("global").dir_name == "global"
    preset = SkillScope.parse("preset:My Preset")
    assert preset.key == "preset:My Preset"
    assert preset.dir_name == "preset_58764efedbdafb0d"
    assert SkillScope.parse("profile:writer").dir_name.startswith("profile_")
    assert len(SkillScope.parse("character:Alice").dir_name) == len("character_") + 16


def test_acceptance_3_already_installed_merges_refs_and_conflicts(repo, make_skill) -> None:
    folder = make_skill(files={"scripts/a.js": "console.log(1)\n"})
    first = repo.install(folder).results[0].skill
    again = repo.install_files(
        {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
         if p.is_file()},
        source=SkillSource("preset", "My Preset", "My preset"))
    assert again.already_installed == ["demo"]
    entry = repo.get("demo")
    assert [(r.kind, r.id, r.label) for r in entry.source_refs] == [
        ("directory", str(folder.resolve()), "demo"), ("preset", "My Preset", "My preset")]
    assert entry.installed_hash == first.installed_hash

    (folder / "scripts" / "a.js").write_text("console.log(2)\n")
    with pytest.raises(SkillConflict) as caught:
        repo.install(folder)
    assert caught.value.message == (
        "Skill 'demo' already exists with different content; conflict_strategy is required: "
        "install again with on_conflict=\"replace\" to replace it or on_conflict=\"skip\" to "
        "keep the installed one (command line: --replace or --skip; scope global)")
    assert caught.value.code == "skill.conflict"
    skipped = repo.install(folder, on_conflict="skip").results[0]
    assert skipped.action == "skipped"
    assert skipped.skill.installed_hash == first.installed_hash
    installed = repo.installed_root / "global" / "demo" / "scripts" / "a.js"
    assert installed.read_text() == "console.log(1)\n"

    replaced = repo.install(folder, on_conflict="replace").results[0]
    assert replaced.action == "replaced"
    assert installed.read_text() == "console.log(2)\n"
    assert repo.get("demo").installed_hash == load_source(folder).packages[0].installed_hash
    assert list(repo.staging_root.iterdir()) == []


def test_acceptance_2_export_then_import_keeps_the_hash(repo, make_skill, tmp_path) -> None:
    folder = make_skill(files={"assets/logo.bin": bytes(range(256)),
                               "scripts/lib/util.js": "export const x = 1;\n"})
    original = repo.install(folder).results[0].skill.installed_hash
    exported = tmp_path / "demo.ttskill"
    exported.write_bytes(repo.export("demo"))
    other = SkillRepository(tmp_path / "other-lab")
    (result,) = other.install(exported, scope="character:alice").results
    assert result.skill.installed_hash == original
    assert result.skill.source_refs[0].kind == "archive"
    assert repo.export("demo") == exported.read_bytes()
    with pytest.raises(SkillNotFound, match=r"^Skill not found: global/missing$"):
        repo.export("missing")


def test_acceptance_5_failed_index_save_rolls_back(repo, make_skill, snapshot) -> None:
    folder = make_skill(files={"scripts/a.js": "console.log(1)\n"})
    repo.install(folder)
    before = snapshot(repo.root)
    # A stale directory where the index's temporary file goes makes every save fail for real.
    (repo.index_path.parent / "skills.json.tmp").mkdir()
    before["index/skills.json.tmp"] = None

    (folder / "scripts" / "a.js").write_text("console.log(2)\n")
    with pytest.raises(SkillStorageError) as caught:
        repo.install(folder, on_conflict="replace")
    assert caught.value.message.startswith(f"Failed to save Skill index '{repo.index_path}': ")
    assert caught.value.code == "skill.storage_failed"
    assert snapshot(repo.root) == before

    other = make_skill("other")
    with pytest.raises(SkillStorageError):
        repo.install(other, scope="preset:p")
    assert snapshot(repo.root) == before
    assert [e.name for e in repo.list()] == ["demo"]


def test_same_name_in_several_scopes(repo, make_skill) -> None:
    folder = make_skill()
    repo.install(folder)
    repo.install(folder, scope="profile:writer")
    repo.install(folder, scope="preset:My Preset")
    assert [e.scope.key for e in repo.list()] == ["global", "preset:My Preset",
                                                  "profile:writer"]
    assert [e.scope.key for e in repo.list("profile:writer")] == ["profile:writer"]
    assert sorted(_installed(repo)) == sorted([
        "global/demo", f"{SkillScope.parse('preset:My Preset').dir_name}/demo",
        f"{SkillScope.parse('profile:writer').dir_name}/demo"])


def test_bad_input_installs_nothing(repo, make_skill, snapshot, tmp_path) -> None:
    repo.install(make_skill("keep"))
    before = snapshot(repo.data_root)
    cases = [
        (make_skill("nofm", skill_md="# No front matter\n"),
         "SKILL.md must start with YAML frontmatter"),
        (make_skill("noname", skill_md="---\ndescription: D\n---\n"),
         "SKILL.md frontmatter must include name"),
        (make_skill("bad", skill_md="---\nname: Bad_Name!\ndescription: D\n---\n"),
         "Skill name must use lowercase ASCII letters, digits, '-' or '_'"),
        (make_skill("side", files={"agents/tauritavern.json": '{"version": 1, "x": 1}'}),
         "Invalid agents/tauritavern.json: unknown field `x`"),
        (make_skill("side2", files={"agents/tauritavern.json": '{"version": 2}'}),
         "Unsupported agents/tauritavern.json version 2"),
    ]
    linked = make_skill("linked", files={"a.md": "x"})
    os.symlink("a.md", linked / "b.md")
    cases.append((linked, "Skill package cannot contain symlink: b.md"))
    for source, message in cases:
        report = repo.install(source)
        assert report.results == ()
        assert report.invalid == (InvalidPackage("", "skill.invalid_package", message),)
        assert snapshot(repo.data_root) == before
    with pytest.raises(InvalidSkillPackage):
        repo.install_files({"SKILL.md": "---\nname: x\ndescription: D\n---\n", "../a": "x"})
    assert snapshot(repo.data_root) == before


def test_one_source_with_several_skills_installs_together(repo, write_files, tmp_path) -> None:
    root = write_files(tmp_path / "bundle", {
        "a/SKILL.md": "---\nname: alpha\ndescription: A.\n---\n",
        "b/SKILL.md": "---\nname: beta\ndescription: B.\n---\n"})
    results = repo.install(root, scope="character:alice").results
    assert [(r.name, r.action) for r in results] == [("alpha", "installed"),
                                                     ("beta", "installed")]
    assert [e.name for e in repo.list("character:alice")] == ["alpha", "beta"]


def test_version_1_index_is_migrated_on_read(repo, make_skill, write_files) -> None:
    (package,) = load_source(make_skill()).packages
    (named_global,) = load_source(make_skill("global")).packages
    legacy = repo.installed_root
    for pkg in (package, named_global):
        write_files(legacy / pkg.name, {p: d for p, d in pkg.contents.items()})
    v1_entry = {"description": "Demo.", "tags": [], "fileCount": 1, "totalBytes": 10,
                "hasScripts": False, "hasBinary": False,
                "installedAt": "2024-01-01T00:00:00Z"}
    repo.index_path.parent.mkdir(parents=True)
    repo.index_path.write_text(json.dumps({"version": 1, "skills": [
        {**v1_entry, "name": "demo", "installedHash": package.installed_hash},
        {**v1_entry, "name": "global", "installedHash": named_global.installed_hash}]}))

    entries = repo.list()
    assert [(e.scope.key, e.name) for e in entries] == [("global", "demo"), ("global", "global")]
    assert _installed(repo) == ["global/demo", "global/global"]
    assert (legacy / "global" / "global" / "SKILL.md").is_file()
    assert json.loads(repo.index_path.read_text())["version"] == 2
    assert repo.install(make_skill()).already_installed == ["demo"]


def test_version_1_migration_failure_moves_nothing(repo, make_skill, write_files,
                                                   snapshot) -> None:
    (package,) = load_source(make_skill()).packages
    write_files(repo.installed_root / "demo", dict(package.contents))
    repo.index_path.parent.mkdir(parents=True)
    repo.index_path.write_text(json.dumps({"version": 1, "skills": [
        {"name": "demo", "description": "Demo.", "installedHash": package.installed_hash,
         "fileCount": 1, "totalBytes": 1, "hasScripts": False, "hasBinary": False,
         "installedAt": "2024-01-01T00:00:00Z"}]}))
    (repo.index_path.parent / "skills.json.tmp").mkdir()
    repo.staging_root.mkdir(parents=True)
    before = snapshot(repo.root)
    with pytest.raises(SkillStorageError):
        repo.list()
    assert snapshot(repo.root) == before


def test_index_problems(repo, make_skill) -> None:
    repo.install(make_skill())
    repo.index_path.unlink()
    with pytest.raises(InvalidSkillIndex,
                       match=r"^Skill index is missing while installed skills exist$"):
        repo.list()
    repo.index_path.write_text('{"version": 3, "skills": []}')
    with pytest.raises(InvalidSkillIndex, match=r"^Unsupported Skill index version 3$"):
        repo.list()
    repo.index_path.write_text("{")
    with pytest.raises(InvalidSkillIndex, match=r"^Invalid Skill index '"):
        repo.list()


def test_reads_on_a_fresh_lab_write_nothing(tmp_path: Path) -> None:
    repo = SkillRepository(tmp_path / "fresh")
    assert repo.list() == []
    with pytest.raises(SkillNotFound):
        repo.get("demo")
    assert not (tmp_path / "fresh").exists()


def test_clock_and_ids_are_injectable(tmp_path: Path, make_skill) -> None:
    """A fixed clock and sequential ids make two labs install byte-identical indexes; a work
    folder left by a dead process is never reused (it may hold the only copy of a package)."""
    folder = make_skill(files={"scripts/a.js": "console.log(1)\n"})
    source = SkillSource("preset", "p")
    indexes = []
    for name in ("one", "two"):
        repo = SkillRepository(tmp_path / name, clock=FixedClock(), ids=SequentialIds())
        stale = repo.staging_root / "import_00000000000000000000000000000001"
        (stale / "old" / "demo").mkdir(parents=True)
        (stale / "old" / "demo" / "SKILL.md").write_text("the only copy\n")
        (result,) = repo.install(folder, source=source).results
        assert result.skill.installed_at == datetime(2026, 1, 1, tzinfo=UTC)
        assert (stale / "old" / "demo" / "SKILL.md").read_text() == "the only copy\n"
        assert sorted(p.name for p in repo.staging_root.iterdir()) == [stale.name]
        indexes.append(repo.index_path.read_bytes())
    assert indexes[0] == indexes[1]
    assert json.loads(indexes[0])["skills"][0]["installedAt"] == "2026-01-01T00:00:00Z"
    assert SkillRepository(tmp_path / "default").clock is SYSTEM_CLOCK
