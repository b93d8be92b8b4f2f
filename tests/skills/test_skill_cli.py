"""``tavernlab skill validate|install|list|pack`` on good and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tavernlab.cli import main
from tavernlab.host import Lab
from tavernlab.host._lab import LAB_GITIGNORE
from tavernlab.skills import SkillRepository


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TAVERNLAB_LAB", raising=False)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["skill", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_validate(capsys, make_skill) -> None:
    folder = make_skill(skill_md="---\nname: demo\ndescription: Demo.\n---\n",
                        files={"scripts/a.js": "console.log(1)\n"})
    status, out, err = _run(capsys, "validate", str(folder))
    assert (status, err) == (0, "")
    assert out == ("ok demo: 2 files, 53 bytes, installed hash "
                   "4c0b6cd70c030555acef709cfc70d4a0c5b44fa0056ff3eb9a33089ddb03a015\n"
                   "  warning: Skill contains scripts; review them before use: an agent can run "
                   "them with the js command (and skill.run_script in compatibility mode).\n")
    status, out, _ = _run(capsys, "validate", str(folder), "--json")
    assert status == 0
    (summary,) = json.loads(out)["packages"]
    assert json.loads(out)["invalid"] == []
    assert summary["name"] == "demo" and summary["fileCount"] == 2
    assert [f["path"] for f in summary["files"]] == ["SKILL.md", "scripts/a.js"]


def test_install_and_list_in_the_default_lab(capsys, make_skill, tmp_path) -> None:
    folder = make_skill()
    status, out, _ = _run(capsys, "install", str(folder))
    assert status == 0 and out.startswith("installed: demo in global (installed hash ")
    # the default lab is the one a notebook in this folder uses, kept out of git like it
    assert (tmp_path / ".tavernlab/_tauritavern/skills/installed/global/demo").is_dir()
    assert (tmp_path / ".tavernlab/.gitignore").read_text() == LAB_GITIGNORE
    status, out, _ = _run(capsys, "install", str(folder))
    assert out.startswith("already installed: demo in global")
    (folder / "SKILL.md").write_text("---\nname: demo\ndescription: Changed.\n---\n")
    status, out, err = _run(capsys, "install", str(folder))
    assert (status, out) == (1, "")
    assert err == ("error: skill.conflict: Skill 'demo' already exists with different "
                   "content; conflict_strategy is required: install again with "
                   "on_conflict=\"replace\" to replace it or on_conflict=\"skip\" to keep the "
                   "installed one (command line: --replace or --skip; scope global)\n")
    status, out, _ = _run(capsys, "install", str(folder), "--skip")
    assert out.startswith("skipped (kept installed): demo in global")
    status, out, _ = _run(capsys, "install", str(folder), "--replace", "--json")
    assert json.loads(out)["results"][0]["action"] == "replaced"
    _run(capsys, "install", str(folder), "--scope", "profile:writer")
    status, out, _ = _run(capsys, "list")
    assert out.splitlines() == [
        "SCOPE           NAME  VERSION  FILES  DESCRIPTION",
        "global          demo  -        1      Changed.",
        "profile:writer  demo  -        1      Changed.",
    ]
    status, out, _ = _run(capsys, "list", "--scope", "profile:writer", "--json")
    assert [e["scope"] for e in json.loads(out)] == [{"kind": "profile", "id": "writer"}]


def test_explicit_lab_and_empty_list(capsys, tmp_path) -> None:
    Lab(tmp_path / "elsewhere").close()
    status, out, _ = _run(capsys, "list", "--lab", str(tmp_path / "elsewhere"))
    assert (status, out) == (0, f"no skills installed in {tmp_path / 'elsewhere'}\n")


def test_list_in_a_missing_lab_is_one_error_line(capsys, tmp_path) -> None:
    missing = tmp_path / "MISSING"
    assert _run(capsys, "list", "--lab", str(missing)) == (1, "", (
        f"error: workspace.invalid_data: no lab at {missing} (pass --lab DIR, or --demo for "
        "the lab `tavernlab demo` made)\n"))
    assert not missing.exists()


def test_bad_input_is_one_error_line_and_installs_nothing(capsys, make_skill, tmp_path) -> None:
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("SKILL.md", "---\nname: bomb\ndescription: B\n---\n")
        archive.writestr("zeros.bin", b"\0" * 1_000_000)
    invalid_packages = [
        (["install", str(make_skill("x", skill_md="no front matter"))],
         "invalid: .: SKILL.md must start with YAML frontmatter\n"),
        (["validate", str(make_skill("x", skill_md="no front matter"))],
         "invalid .: SKILL.md must start with YAML frontmatter\n"),
        (["install", str(make_skill("y", skill_md="---\nname: Bad_Name!\ndescription: D\n---\n"))],
         "invalid: .: Skill name must use lowercase ASCII letters, digits, '-' or '_'\n"),
        (["install", str(bomb)],
         "invalid: .: Skill archive entry 'zeros.bin' has an excessive compression ratio "
         "(over 100:1)\n"),
    ]
    for argv, expected in invalid_packages:
        status, out, err = _run(capsys, *argv)
        assert (status, out, err) == (1, expected, "")
    cases = [
        (["validate", str(tmp_path / "missing")],
         f"error: skill.not_found: Skill source not found: {tmp_path / 'missing'}\n"),
        (["install", str(make_skill()), "--scope", "team:x"],
         "error: skill.invalid_scope: Unknown Skill scope `team:x`; use global, preset:<id>, "
         "profile:<id> or character:<id>\n"),
    ]
    for argv, expected in cases:
        status, out, err = _run(capsys, *argv)
        assert (status, out, err) == (1, "", expected)
    assert SkillRepository(tmp_path / ".tavernlab").list() == []


def test_pack_then_install(capsys, make_skill, tmp_path) -> None:
    folder = make_skill(files={"scripts/a.js": "console.log(1)\n"})
    status, out, _ = _run(capsys, "pack", str(folder))
    assert status == 0 and out.startswith("packed demo (2 files, ")
    assert out.endswith(" into demo.zip\n")
    status, out, err = _run(capsys, "pack", str(folder))
    assert (status, err) == (1, "error: skill.output_exists: Output file already exists: "
                                "demo.zip\n")
    status, out, _ = _run(capsys, "pack", str(folder), "-o", "demo.ttskill")
    assert Path("demo.ttskill").read_bytes() == Path("demo.zip").read_bytes()
    status, out, _ = _run(capsys, "validate", "demo.ttskill")
    assert out.startswith("ok demo: 2 files, ")
    status, out, _ = _run(capsys, "install", "demo.zip", "--json")
    (result,) = json.loads(out)["results"]
    status, direct, _ = _run(capsys, "validate", str(folder), "--json")
    assert result["skill"]["installedHash"] == json.loads(direct)["packages"][0]["installedHash"]
    status, out, err = _run(capsys, "pack", str(tmp_path / "demo.zip"))
    assert err.startswith("error: skill.invalid_package: pack needs a skill directory: ")


def test_console_entry_point_prints_no_traceback(tmp_path) -> None:
    done = subprocess.run([sys.executable, "-m", "tavernlab.cli", "skill", "validate",
                           str(tmp_path / "nope")], capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == f"error: skill.not_found: Skill source not found: {tmp_path / 'nope'}\n"
