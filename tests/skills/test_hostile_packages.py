"""Packages that must not crash or stall the parser (a hostile corpus).

Every hostile front matter fails with ``InvalidSkillPackage`` and a one-line message naming the
line and column in ``SKILL.md``; ``tavernlab skill validate`` prints one line, no traceback. A
ZIP entry name holding a NUL or any other control character refuses the whole archive.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tavernlab.skills import InvalidPackage, InvalidSkillPackage, SkillRepository, load_inline
from tavernlab.skills._frontmatter import (
    MAX_FRONTMATTER_BYTES,
    MAX_FRONTMATTER_DEPTH,
    parse_frontmatter,
)

HEAD = "---\nname: hostile\ndescription: "
LAUGHS = ("---\nname: lol\ndescription: Laughs.\nmetadata:\n"
          "  a: &a [x, x, x, x, x, x, x, x, x, x]\n"
          "  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
          "  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
          "  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
          "  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
          "  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n---\n")

CORPUS = [
    ("5000-digit integer", HEAD + "1" * 5000 + "\n---\n",
     "Invalid SKILL.md frontmatter: found an integer with more than 4300 digits "
     "(line 3, column 14)"),
    ("20000 nested [", HEAD + "[" * 20000 + "\n---\n",
     "Invalid SKILL.md frontmatter: collections nest deeper than 64 levels "
     "(line 3, column 77)"),
    ("billion laughs", LAUGHS,
     "Invalid SKILL.md frontmatter: the document expands to more than 10000 nodes "
     "(aliases included) (line 8, column 42)"),
    ("oversized front matter", HEAD + "x" * MAX_FRONTMATTER_BYTES + "\n---\n",
     "SKILL.md frontmatter must be <= 65536 bytes"),
    ("impossible date", HEAD + "d\nlicense: 2020-13-45\n---\n",
     "Invalid SKILL.md frontmatter: found a value that cannot be read (month must be in "
     "1..12) (line 4, column 10)"),
    ("int tag on a word", HEAD + "d\nlicense: !!int abc\n---\n",
     "Invalid SKILL.md frontmatter: found a value that cannot be read (invalid literal for "
     "int() with base 10: 'abc') (line 4, column 10)"),
    ("python object tag", "---\nname: !!python/object/apply:os.system [ls]\n---\n",
     "Invalid SKILL.md frontmatter: could not determine a constructor for the tag "
     "'tag:yaml.org,2002:python/object/apply:os.system' (line 2, column 7)"),
]


@pytest.mark.parametrize(("skill_md", "message"), [(md, m) for _, md, m in CORPUS],
                         ids=[name for name, _, _ in CORPUS])
def test_hostile_front_matter_is_an_invalid_package(repo: SkillRepository, make_skill,
                                                    skill_md: str, message: str) -> None:
    with pytest.raises(InvalidSkillPackage) as caught:
        parse_frontmatter(skill_md)
    assert (caught.value.code, caught.value.message) == ("skill.invalid_package", message)
    report = repo.install(make_skill("hostile", skill_md=skill_md))
    assert report.results == ()
    assert report.invalid == (InvalidPackage("", "skill.invalid_package", message),)


def test_the_bounds_admit_what_they_promise() -> None:
    # The top-level mapping is level 1, so ``metadata`` may hold 63 nested collections.
    deepest = "[" * (MAX_FRONTMATTER_DEPTH - 1) + "]" * (MAX_FRONTMATTER_DEPTH - 1)
    frontmatter, warnings = parse_frontmatter(HEAD + "d\nmetadata: " + deepest + "\n---\n")
    assert (frontmatter.name, warnings) == (
        "hostile", ["SKILL.md metadata is not a mapping and was ignored."])
    block_deep = "".join(" " * i + "- \n" for i in range(1, MAX_FRONTMATTER_DEPTH))
    assert parse_frontmatter(HEAD + "d\nm:\n" + block_deep + "---\n")[0].name == "hostile"
    with pytest.raises(InvalidSkillPackage, match=r"nest deeper than 64 levels \(line 68, "
                                                  r"column 65\)$"):
        parse_frontmatter(HEAD + "d\nm:\n" + block_deep + " " * 64 + "- \n---\n")
    aliased = parse_frontmatter("---\nname: &n shared\ndescription: *n\n---\n")[0]
    assert (aliased.name, aliased.description) == ("shared", "shared")
    largest = HEAD + "x" * (MAX_FRONTMATTER_BYTES - len(HEAD) + 4) + "\n---\n"
    assert len(largest[4:largest.index("\n---", 4)].encode()) == MAX_FRONTMATTER_BYTES
    assert parse_frontmatter(largest)[0].description == "x" * (MAX_FRONTMATTER_BYTES - 27)
    cyclic = parse_frontmatter(HEAD + "d\nmetadata: &m {tags: *m}\n---\n")
    assert cyclic[1] == ["SKILL.md metadata.tags is not a list and was ignored."]


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(alphabet="[]{}&*!:-,?|>'\"#%@` \n\tab01.<", max_size=200))
def test_arbitrary_front_matter_never_escapes_as_another_error(body: str) -> None:
    try:
        scan = load_inline({"SKILL.md": "---\n" + body + "\n---\n"})
    except InvalidSkillPackage:  # a path or source problem cannot happen here; be explicit
        pytest.fail("inline files with a SKILL.md never fail as a whole")
    assert len(scan.packages) + len(scan.invalid) == 1
    assert all("\n" not in item.message for item in scan.invalid)


def test_validate_prints_one_line_not_a_traceback(make_skill) -> None:
    folder = make_skill("hostile", skill_md=HEAD + "[" * 20000 + "\n---\n")
    done = subprocess.run([sys.executable, "-m", "tavernlab.cli", "skill", "validate",
                           str(folder)], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout == ("invalid .: Invalid SKILL.md frontmatter: collections nest deeper "
                           "than 64 levels (line 3, column 77)\n")


def _zip_with_raw_name(path: Path, placeholder: str, raw: bytes) -> Path:
    """A ZIP holding a valid skill plus an entry whose stored name is ``raw`` (zipfile would
    cut a NUL on writing, so the name is patched into the archive's bytes)."""
    assert len(placeholder.encode()) == len(raw)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("good/SKILL.md", "---\nname: good\ndescription: Good.\n---\n")
        archive.writestr("evil/SKILL.md", "---\nname: evil\ndescription: Evil.\n---\n")
        archive.writestr(placeholder, "pwned();\n")
    data = path.read_bytes()
    assert data.count(placeholder.encode()) == 2  # local header and central directory
    path.write_bytes(data.replace(placeholder.encode(), raw))
    return path


@pytest.mark.parametrize(("raw", "shown"), [
    (b"evil/scripts/a.js\x00/../../../evil.js", "evil/scripts/a.js\\x00/../../../evil.js"),
    (b"evil/scripts/a\nb.js", "evil/scripts/a\\nb.js"),
    (b"evil/scripts/a\x1bb.js", "evil/scripts/a\\x1bb.js"),
], ids=["nul", "newline", "escape"])
def test_a_control_character_in_a_zip_entry_name_refuses_the_archive(
        repo: SkillRepository, tmp_path: Path, snapshot, raw: bytes, shown: str) -> None:
    archive = _zip_with_raw_name(tmp_path / "evil.zip", "X" * len(raw), raw)
    with zipfile.ZipFile(archive) as check:  # what zipfile alone would hand over
        names = [info.filename for info in check.infolist()]
    if b"\0" in raw:
        assert "evil/scripts/a.js" in names
    message = f"Skill archive entry name contains a control character: {shown}"
    before = snapshot(tmp_path)
    for attempt in (repo.validate, repo.install):
        with pytest.raises(InvalidSkillPackage) as caught:
            attempt(archive)
        assert (caught.value.code, caught.value.message) == ("skill.invalid_package", message)
    assert snapshot(tmp_path) == before  # not even the valid `good` package was installed


def test_a_control_character_in_a_file_name_invalidates_its_package(
        repo: SkillRepository, write_files, tmp_path: Path) -> None:
    source = write_files(tmp_path / "collection", {
        "good/SKILL.md": "---\nname: good\ndescription: Good.\n---\n",
        "odd/SKILL.md": "---\nname: odd\ndescription: Odd.\n---\n",
        "odd/notes\nfake.md": "x"})
    report = repo.install(source)
    assert report.installed == ["good"]
    assert report.invalid == (InvalidPackage(
        "odd", "skill.invalid_package",
        "Skill file path cannot contain control characters (`notes\\nfake.md`)"),)
