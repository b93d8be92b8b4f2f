"""Skill package rules (docs/js-and-skills.md): SKILL.md, sidecar, files, hash."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tavernlab.skills import (
    InvalidPackage,
    InvalidSkillPackage,
    SkillNotFound,
    load_inline,
    load_source,
    validate_skill_name,
)
from tavernlab.skills._collection import find_skill_roots
from tavernlab.skills._package import (
    MAX_FILE_BYTES,
    MAX_TOTAL_BYTES,
    check_file_limits,
    installed_hash,
    media_type,
    normalize_skill_path,
    parse_frontmatter,
)

HASH_OF_ACCEPTANCE_1 = "4c0b6cd70c030555acef709cfc70d4a0c5b44fa0056ff3eb9a33089ddb03a015"


def _fails(message: str, files: dict[str, str | bytes]) -> None:
    """The only package of ``files`` is reported invalid with ``message``."""
    scan = load_inline(files)
    assert scan.packages == ()
    assert scan.invalid == (InvalidPackage("", "skill.invalid_package", message),)


def _refused(message: str, files: dict[str, str | bytes]) -> None:
    """Inline ``files`` fail as a whole with ``message`` (a bad path or a path clash)."""
    with pytest.raises(InvalidSkillPackage) as caught:
        load_inline(files)
    assert caught.value.message == message
    assert caught.value.code == "skill.invalid_package"


def _invalid_message(source: Path) -> str:
    """The message of the only (invalid) package of ``source``."""
    scan = load_source(source)
    assert scan.packages == ()
    (invalid,) = scan.invalid
    assert (invalid.origin, invalid.code) == ("", "skill.invalid_package")
    return invalid.message


def test_acceptance_1_installed_hash(make_skill) -> None:
    files = {"SKILL.md": "---\nname: demo\ndescription: Demo.\n---\n",
             "scripts/a.js": "console.log(1)\n"}
    (package,) = load_inline(files).packages
    assert package.installed_hash == HASH_OF_ACCEPTANCE_1
    folder = make_skill(skill_md=files["SKILL.md"], files={"scripts/a.js": "console.log(1)\n"})
    (from_disk,) = load_source(folder).packages
    assert from_disk.installed_hash == HASH_OF_ACCEPTANCE_1
    assert installed_hash({k: v.encode() for k, v in files.items()}) == HASH_OF_ACCEPTANCE_1


def test_package_description() -> None:
    (package,) = load_inline({
        "SKILL.md": "---\r\nname: style\r\ndescription: Writes in style.\r\nlicense: MIT\r\n"
                    "metadata:\r\n  author: Ann\r\n  version: '1.2'\r\n"
                    "  tags: [' prose ', '', fiction]\r\n---\r\nBody\r\n",
        "agents/tauritavern.json": json.dumps({
            "version": 1, "displayName": "Style", "sourceKind": "bundled",
            "allowImplicitInvocation": True, "recommendedTools": ["workspace.read_file"],
            "recommendedContext": {"defaultBudgetTokens": 2000, "preferredMode": "full"},
            "tags": ["writing", " prose"], "notes": "n"}),
        "scripts/run.js": "console.log(1)\n",
        "assets/logo.png": b"\x89PNG\r\n\x1a\n\xff\x00",
        "references/guide.md": "# Guide\n",
    }).packages
    assert package.name == "style"
    assert package.description == "Writes in style."
    assert package.frontmatter.license == "MIT"
    assert package.frontmatter.author == "Ann"
    assert package.frontmatter.version == "1.2"
    assert package.tags == ["fiction", "prose", "writing"]
    assert package.sidecar is not None and package.sidecar.display_name == "Style"
    assert package.has_scripts and package.has_binary
    kinds = {f.path: (f.kind, f.media_type) for f in package.files}
    assert kinds == {
        "SKILL.md": ("text", "text/markdown"),
        "agents/tauritavern.json": ("text", "application/json"),
        "assets/logo.png": ("binary", "image/png"),
        "references/guide.md": ("text", "text/markdown"),
        "scripts/run.js": ("text", "text/javascript"),
    }
    assert [f.path for f in package.files] == sorted(kinds)
    assert package.warnings == (
        "Skill contains scripts; review them before use: an agent can run them with the js "
        "command (and skill.run_script in compatibility mode).",
        "Skill contains binary files; they are served raw, without macro projection, and "
        "cannot be read as text.")


def test_skill_md_errors() -> None:
    _fails("SKILL.md must start with YAML frontmatter", {"SKILL.md": "# Demo\nno front matter\n"})
    _fails("SKILL.md frontmatter is not closed", {"SKILL.md": "---\nname: demo\n"})
    _fails("SKILL.md frontmatter must include name",
           {"SKILL.md": "---\ndescription: Demo.\n---\n"})
    _fails("SKILL.md frontmatter must include name",
           {"SKILL.md": "---\nname: 12\ndescription: Demo.\n---\n"})
    _fails("SKILL.md frontmatter must include description",
           {"SKILL.md": "---\nname: demo\n---\n"})
    # Revision 2 (8.2): a blank value counts as missing (it was `description cannot be empty`).
    _fails("SKILL.md frontmatter must include description",
           {"SKILL.md": "---\nname: demo\ndescription: '  '\n---\n"})
    _fails("SKILL.md frontmatter must include name",
           {"SKILL.md": "---\nname: ' '\ndescription: Demo.\n---\n"})
    _fails("SKILL.md must be UTF-8 text", {"SKILL.md": b"---\nname: d\xff\n---\n"})
    _fails("SKILL.md must be <= 1048576 bytes",
           {"SKILL.md": "---\nname: demo\ndescription: D\n---\n" + "x" * 1024 * 1024})
    with pytest.raises(InvalidSkillPackage, match=r"^Skill package must contain SKILL\.md$"):
        load_inline({"README.md": "hi"})  # no SKILL.md anywhere: the source itself fails
    (invalid,) = load_inline({"SKILL.md": "---\nname: [unclosed\n---\n"}).invalid
    assert invalid.message.startswith("Invalid SKILL.md frontmatter: ")


def test_skill_names() -> None:
    _fails("Skill name must use lowercase ASCII letters, digits, '-' or '_'",
           {"SKILL.md": "---\nname: Bad_Name!\ndescription: Demo.\n---\n"})
    assert validate_skill_name("  ok_name-2 ") == "ok_name-2"
    for bad, message in [("", "Skill name cannot be empty"),
                         ("..", "Skill name cannot be '.' or '..'"),
                         ("x" * 129, "Skill name must be <= 128 characters"),
                         ("Upper", "Skill name must use lowercase ASCII letters, digits, '-' "
                                   "or '_'"),
                         ("café", "Skill name must use lowercase ASCII letters, digits, '-' "
                                  "or '_'")]:
        with pytest.raises(InvalidSkillPackage) as caught:
            validate_skill_name(bad)
        assert caught.value.message == message
    assert validate_skill_name("x" * 128) == "x" * 128


def test_optional_fields_of_the_wrong_type_warn() -> None:
    (package,) = load_inline({"SKILL.md": "---\nname: demo\ndescription: D\nlicense: 3\n"
                                          "metadata:\n  version: 1.0\n  tags: x\n---\n"}
                             ).packages
    assert package.frontmatter.license is None and package.frontmatter.version is None
    assert package.warnings == (
        "SKILL.md license is not a string and was ignored.",
        "SKILL.md metadata.version is not a string and was ignored.",
        "SKILL.md metadata.tags is not a list and was ignored.",
    )


def test_acceptance_6_sidecar_unknown_field_and_version_2() -> None:
    base = {"SKILL.md": "---\nname: demo\ndescription: D\n---\n"}
    _fails("Invalid agents/tauritavern.json: unknown field `bogus`",
           {**base, "agents/tauritavern.json": '{"version": 1, "bogus": true}'})
    _fails("Invalid agents/tauritavern.json: unknown field `recommendedContext.extra`",
           {**base, "agents/tauritavern.json":
            '{"version": 1, "recommendedContext": {"extra": 1}}'})
    _fails("Unsupported agents/tauritavern.json version 2",
           {**base, "agents/tauritavern.json": '{"version": 2}'})
    _fails("Invalid agents/tauritavern.json: unknown field `display_name`",
           {**base, "agents/tauritavern.json": '{"version": 1, "display_name": "x"}'})
    _fails("Invalid agents/tauritavern.json: version: Field required",
           {**base, "agents/tauritavern.json": '{"displayName": "x"}'})
    _fails("Invalid agents/tauritavern.json: version: Input should be a valid integer",
           {**base, "agents/tauritavern.json": '{"version": "1"}'})
    (invalid,) = load_inline({**base, "agents/tauritavern.json": "{not json"}).invalid
    assert invalid.message.startswith("Invalid agents/tauritavern.json: not ")


def test_acceptance_6_symlink_and_dotdot_are_rejected(make_skill, tmp_path: Path) -> None:
    folder = make_skill(files={"scripts/real.js": "x"})
    os.symlink("real.js", folder / "scripts" / "link.js")
    assert _invalid_message(folder) == "Skill package cannot contain symlink: scripts/link.js"
    _refused("Skill file path cannot contain .. (`../evil.txt`)",
           {"SKILL.md": "---\nname: demo\ndescription: D\n---\n", "../evil.txt": "x"})


def test_path_rules() -> None:
    assert normalize_skill_path("a\\b/./c") == "a/b/c"
    for raw, rule in [("/etc/passwd", "Skill file path must be relative"),
                      ("\\x", "Skill file path must be relative"),
                      ("C:/x", "Skill file path cannot use a Windows drive prefix"),
                      ("a/../b", "Skill file path cannot contain .."),
                      ("a\0b", "Skill file path cannot contain NUL"),
                      ("x/.git/config", "Skill file path contains forbidden segment: .git"),
                      (".env", "Skill file path contains forbidden segment: .env"),
                      (".ssh/id", "Skill file path contains forbidden segment: .ssh"),
                      ("a\nb", "Skill file path cannot contain control characters"),
                      ("a\x7fb", "Skill file path cannot contain control characters"),
                      ("./.", "Skill file path cannot be empty")]:
        with pytest.raises(InvalidSkillPackage) as caught:
            normalize_skill_path(raw)
        shown = raw.replace("\0", "\\x00").replace("\n", "\\n").replace("\x7f", "\\x7f")
        assert caught.value.message == f"{rule} (`{shown}`)"


def test_forbidden_segment_in_a_folder(make_skill) -> None:
    folder = make_skill(files={".git/HEAD": "ref"})
    assert _invalid_message(folder) == (
        "Skill file path contains forbidden segment: .git (`.git/HEAD`)")


def test_file_limits(make_skill) -> None:
    folder = make_skill(files={"assets/big.bin": b""})
    os.truncate(folder / "assets" / "big.bin", MAX_FILE_BYTES + 1)  # sparse: cheap on disk
    assert _invalid_message(folder) == "Skill file 'assets/big.bin' exceeds 16777216 bytes"
    os.truncate(folder / "assets" / "big.bin", MAX_FILE_BYTES)
    (package,) = load_source(folder).packages
    assert package.total_bytes > MAX_FILE_BYTES

    many = make_skill("many", files={f"refs/{i:04}.md": "x" for i in range(1000)})
    assert _invalid_message(many) == "Skill package must contain <= 1000 files"
    (many / "refs" / "0000.md").unlink()
    assert len(load_source(many).packages[0].files) == 1000

    with pytest.raises(InvalidSkillPackage) as caught:
        check_file_limits([(f"f{i}", MAX_FILE_BYTES) for i in range(17)])
    assert caught.value.message == f"Skill package exceeds {MAX_TOTAL_BYTES} bytes"
    with pytest.raises(InvalidSkillPackage, match=r"^Skill package cannot be empty$"):
        check_file_limits([])


def test_special_files_and_missing_sources(make_skill, tmp_path: Path) -> None:
    folder = make_skill()
    os.mkfifo(folder / "pipe")
    assert _invalid_message(folder) == "Skill package cannot contain special file: pipe"
    with pytest.raises(SkillNotFound, match=r"^Skill source not found: "):
        load_source(tmp_path / "nowhere")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InvalidSkillPackage, match=r"must be a directory, a .zip or a .ttskill"):
        load_source(tmp_path / "notes.txt")
    os.symlink(folder, tmp_path / "linked")
    with pytest.raises(InvalidSkillPackage, match=r"^Skill import root cannot be a symlink$"):
        load_source(tmp_path / "linked")


def test_sources_are_searched_recursively(make_skill, write_files, tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    write_files(root, {
        "README.md": "not part of a skill",
        "one/SKILL.md": "---\nname: one\ndescription: First.\n---\n",
        "one/examples/inner/SKILL.md": "---\nname: inner\ndescription: Example.\n---\n",
        "group/two/SKILL.md": "---\nname: two\ndescription: Second.\n---\n",
    })
    packages = load_source(root).packages
    assert [(p.origin, p.name) for p in packages] == [("group/two", "two"), ("one", "one")]
    assert [f.path for f in packages[1].files] == ["SKILL.md", "examples/inner/SKILL.md"]
    assert find_skill_roots(["SKILL.md", "a/SKILL.md"]) == [""]
    write_files(root, {"copy/SKILL.md": "---\nname: one\ndescription: Again.\n---\n"})
    scan = load_source(root)
    assert [p.name for p in scan.packages] == ["two"]
    message = "Skill source contains more than one skill named 'one' ('copy' and 'one')"
    assert scan.invalid == (InvalidPackage("copy", "skill.invalid_package", message),
                            InvalidPackage("one", "skill.invalid_package", message))


def test_inline_file_clashes() -> None:
    skill_md = "---\nname: demo\ndescription: D\n---\n"
    _refused("Skill package contains 'a/b' more than once",
           {"SKILL.md": skill_md, "a/b": "1", "a\\b": "2"})
    _refused("Skill package path 'a' is both a file and a folder",
           {"SKILL.md": skill_md, "a": "1", "a/b": "2"})


def test_media_types() -> None:
    assert media_type("notes/README") == "application/octet-stream"
    assert media_type("x.MJS") == "text/javascript"
    assert media_type(".env.sample") == "application/octet-stream"
    assert media_type("data.yml") == "application/yaml"


def test_frontmatter_is_parsed_with_crlf() -> None:
    frontmatter, warnings = parse_frontmatter("---\r\nname: a\r\ndescription: b\r\n---\r\n")
    assert (frontmatter.name, frontmatter.description, warnings) == ("a", "b", [])
