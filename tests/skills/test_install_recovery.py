"""An install killed at any of its moves is finished or undone by the next process that opens
the repository: every listed skill's folder holds exactly its entry's files, and no work
folder stays behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tavernlab.skills import SkillRepository, load_directory

SkillMaker = Callable[..., Path]

#: Installs ``argv[2]`` into the repository of lab ``argv[1]`` with ``replace``, killing
#: itself (SIGKILL) just before its ``argv[3]``-th rename or tree removal (a real kill at that
#: point, seen through the interpreter's audit events), or never when it is 0.
KILLED_INSTALL = """
import os, signal, sys
from tavernlab.skills import SkillRepository
lab, source, at = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = 0
def hook(event, args):
    global seen
    if event in ("os.rename", "shutil.rmtree"):
        seen += 1
        if seen == at:
            os.kill(os.getpid(), signal.SIGKILL)
repo = SkillRepository(lab)
sys.addaudithook(hook)
repo.install(source, on_conflict="replace")
print(seen)
"""


def install_killed_at(lab: Path, source: Path, at: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-c", KILLED_INSTALL, str(lab), str(source),
                           str(at)], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def consistent(repo: SkillRepository) -> dict[str, str]:
    """``name -> installed hash`` of every listed skill, after checking that its folder holds
    exactly the entry's files and that no work folder is left."""
    hashes = {}
    for entry in repo.list():
        (package,) = load_directory(repo.package_dir(entry.name, entry.scope)).require_valid()
        assert package.installed_hash == entry.installed_hash, entry.name
        hashes[entry.name] = entry.installed_hash
    assert sorted(os.listdir(repo.staging_root)) == []
    return hashes


def test_an_uninterrupted_replace_makes_this_many_moves(tmp_path: Path,
                                                        make_skill: SkillMaker) -> None:
    lab = tmp_path / "lab"
    SkillRepository(lab).install(make_skill(files={"a.js": "1"}))
    done = install_killed_at(lab, make_skill(files={"a.js": "2"}, folder="v2"), 0)
    assert done.returncode == 0, done.stderr
    # plan, old folder aside, new folder in, index, then the cleanup: old folder, work folder
    assert int(done.stdout) == 6


@pytest.mark.parametrize("at", [1, 2, 3, 4, 5, 6])
def test_a_replace_killed_at_any_move_is_finished_or_undone(tmp_path: Path,
                                                            make_skill: SkillMaker,
                                                            at: int) -> None:
    lab = tmp_path / "lab"
    repo = SkillRepository(lab)
    repo.install(make_skill(files={"a.js": "1"}))
    repo.install(make_skill("other", files={"b.js": "b"}))
    old = consistent(repo)
    new_source = make_skill(files={"a.js": "2"}, folder="v2")
    done = install_killed_at(lab, new_source, at)
    assert done.returncode == -signal.SIGKILL, done.stderr
    after = consistent(SkillRepository(lab))
    assert after["other"] == old["other"]
    (new,) = load_directory(new_source).require_valid()
    # The index save (the 4th move) is the commit: killed before it, the old skill is back.
    assert after["demo"] == (new.installed_hash if at > 4 else old["demo"])


@pytest.mark.parametrize("at", [1, 2, 3])
def test_a_first_install_killed_at_any_move_leaves_no_unlisted_folder(
        tmp_path: Path, make_skill: SkillMaker, at: int) -> None:
    lab = tmp_path / "lab"
    SkillRepository(lab).install(make_skill("other", files={"b.js": "b"}))
    done = install_killed_at(lab, make_skill(files={"a.js": "1"}), at)
    assert done.returncode == -signal.SIGKILL, done.stderr
    repo = SkillRepository(lab)
    listed = consistent(repo)
    assert ("demo" in listed) == (at > 3)
    assert repo.package_dir("demo").exists() == ("demo" in listed)
    (result,) = repo.install(make_skill(files={"a.js": "1"})).results  # never refused
    assert result.action in ("installed", "already_installed")


def test_a_work_folder_killed_while_staging_is_removed(tmp_path: Path,
                                                       make_skill: SkillMaker) -> None:
    repo = SkillRepository(tmp_path / "lab")
    repo.install(make_skill(files={"a.js": "1"}))
    before = json.loads(repo.index_path.read_text())
    half = repo.staging_root / "import_left_by_a_kill" / "new" / "demo"
    half.mkdir(parents=True)
    (half / "SKILL.md").write_text("---\nname: de")
    assert [e.name for e in SkillRepository(tmp_path / "lab").list()] == ["demo"]
    assert os.listdir(repo.staging_root) == []
    assert json.loads(repo.index_path.read_text()) == before
