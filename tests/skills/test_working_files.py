"""A skill folder edited in JupyterLab (checkpoints, ``__pycache__``, ``.DS_Store``, the
author's ``tests/``): none of it is validated, installed, packed, linted or hashed."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest

from tavernlab.cli import main
from tavernlab.host import Lab
from tavernlab.skills import load_source
from tavernlab.skills._archive import scan_archive
from tavernlab.skills._collection import is_working_file

SKILL_MD = "---\nname: demo\ndescription: Demo.\n---\n"
#: The installed hash of exactly SKILL.md and scripts/a.js (the spec's example).
CLEAN_HASH = "4c0b6cd70c030555acef709cfc70d4a0c5b44fa0056ff3eb9a33089ddb03a015"
LITTER = {
    ".ipynb_checkpoints/SKILL-checkpoint.md": "---\nname: other\n---\n",
    "scripts/.ipynb_checkpoints/a-checkpoint.js": "process.exit(1)\n",
    "__pycache__/x.cpython-311.pyc": "\0\1",
    "scripts/__pycache__/y.pyc": "\0",
    ".pytest_cache/v/cache/lastfailed": "{}",
    ".DS_Store": "\0",
    "scripts/.DS_Store": "\0",
    "tests/test_demo.py": "def test_x():\n    assert 1\n",
    "tests/fixtures/input.json": "{}",
}


def _skill(root: Path, litter: bool = True) -> Path:
    folder = root / "demo"
    files = {"SKILL.md": SKILL_MD, "scripts/a.js": "console.log(1)\n",
             **(LITTER if litter else {})}
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


@pytest.mark.parametrize(("path", "ignored"), [
    (".ipynb_checkpoints/SKILL-checkpoint.md", True),
    ("scripts/.ipynb_checkpoints/a-checkpoint.js", True),
    ("scripts/__pycache__/a.pyc", True),
    (".DS_Store", True),
    ("references/.DS_Store", True),
    ("tests/test_main.py", True),
    ("scripts/tests/helper.js", False),
    ("tests", False),
    ("scripts/a.js", False),
    ("references/tests.md", False),
])
def test_the_one_rule(path: str, ignored: bool) -> None:
    assert is_working_file(path) is ignored


def test_validate_and_the_hash_see_only_the_package(tmp_path: Path) -> None:
    (package,) = load_source(_skill(tmp_path)).require_valid()
    assert sorted(package.contents) == ["SKILL.md", "scripts/a.js"]
    assert package.installed_hash == CLEAN_HASH


def test_a_symlink_in_a_checkpoint_folder_does_not_spoil_the_package(tmp_path: Path) -> None:
    folder = _skill(tmp_path)
    os.symlink("/etc/passwd", folder / ".ipynb_checkpoints" / "link")
    (package,) = load_source(folder).require_valid()
    assert package.installed_hash == CLEAN_HASH


def test_install_and_develop_leave_the_working_files_out(tmp_path: Path) -> None:
    folder = _skill(tmp_path)
    lab = Lab(tmp_path / "lab")
    assert lab.skills.install(folder).installed == ["demo"]
    assert lab.skills.get("demo").installed_hash == CLEAN_HASH
    lines: list[str] = []
    lab.skills.development.report = lines.append
    lab.skills.develop(folder, scope="character:alice")
    run = lab.start_run(chat_id="alice", skills=["demo"])
    assert run.files("skills/demo") == ["skills/demo/SKILL.md", "skills/demo/scripts/a.js"]
    # JupyterLab saving a checkpoint, a test run writing caches: not a change of the skill
    (folder / ".ipynb_checkpoints" / "SKILL-checkpoint.md").write_text("edited\n")
    (folder / "tests" / "test_demo.py").write_text("def test_y():\n    assert 1\n")
    run.next_round()
    assert run.js(["/skills/demo/scripts/a.js"]).stdout == "1\n"
    assert len(lines) == 1 and "installed for development" in lines[0]


def test_pack_and_lint_leave_the_working_files_out(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    folder = _skill(tmp_path)
    out = tmp_path / "demo.zip"
    assert main(["skill", "pack", str(folder), "-o", str(out)]) == 0
    with zipfile.ZipFile(out) as archive:
        assert archive.namelist() == ["SKILL.md", "scripts/a.js"]
    capsys.readouterr()
    # the checkpoint copy calls process.exit, which lint reports: it is not linted
    assert main(["skill", "lint", str(folder)]) == 0, capsys.readouterr()


def test_an_archive_holding_working_files_installs_the_package_only(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("demo/SKILL.md", SKILL_MD)
        archive.writestr("demo/scripts/a.js", "console.log(1)\n")
        for relative, text in LITTER.items():
            archive.writestr(f"demo/{relative}", text)
    path = tmp_path / "demo.zip"
    path.write_bytes(buffer.getvalue())
    (package,) = scan_archive(path).require_valid()
    assert sorted(package.contents) == ["SKILL.md", "scripts/a.js"]
    assert package.installed_hash == CLEAN_HASH
