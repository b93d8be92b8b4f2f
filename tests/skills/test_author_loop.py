"""The skill author's loop: skill new, live development, the pytest plugin, skill test."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tavernlab.cli import main
from tavernlab.host import Lab
from tavernlab.js import CommandResult
from tavernlab.skills import InvalidSkillPackage, scaffold_skill


def tavernlab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tavernlab.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("legacy", [False, True])
def test_a_scaffold_is_valid_and_its_tests_pass(tmp_path: Path, legacy: bool) -> None:
    flags = ["--legacy"] if legacy else []
    made = tavernlab("skill", "new", "greeter", "--dir", str(tmp_path), *flags, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert made.stdout == (f"created {tmp_path / 'greeter'} (3 package files, valid; tests/ "
                           f"is kept out of the package); try: tavernlab skill test "
                           f"{tmp_path / 'greeter'}\n")
    assert sorted(p.relative_to(tmp_path / "greeter").as_posix()
                  for p in (tmp_path / "greeter").rglob("*") if p.is_file()) == [
        "SKILL.md", "references/notes.md", "scripts/main.js", "tests/test_main.py"]
    tested = tavernlab("skill", "test", str(tmp_path / "greeter"), "-q", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "2 passed" in tested.stdout
    linted = tavernlab("skill", "lint", str(tmp_path / "greeter"), cwd=tmp_path)
    assert (linted.returncode == 0) is not legacy  # a legacy script is what lint flags


def test_skill_test_ignores_the_settings_of_a_project_around_the_skill(tmp_path: Path
                                                                       ) -> None:
    # the tutorial's folder sits in a project whose pytest settings name a plugin's option
    (tmp_path / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\ntimeout_of_a_plugin_not_installed = 300\n")
    assert tavernlab("skill", "new", "greeter", "--dir", "skills", cwd=tmp_path).returncode == 0
    tested = tavernlab("skill", "test", "skills/greeter", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "2 passed" in tested.stdout
    assert "Unknown config option" not in tested.stdout + tested.stderr
    assert "warning" not in tested.stdout.lower()
    # pytest's cache stays beside the tests, out of the package
    assert (tmp_path / "skills" / "greeter" / ".pytest_cache").is_dir()
    again = tavernlab("skill", "test", "skills/greeter", "--lf", "-q", cwd=tmp_path)
    assert again.returncode == 0 and "2 passed" in again.stdout, again.stdout + again.stderr
    validated = tavernlab("skill", "validate", "skills/greeter", cwd=tmp_path)
    assert validated.stdout.startswith("ok greeter: 3 files, "), validated.stdout


def test_skill_test_reads_the_skill_s_own_settings(tmp_path: Path) -> None:
    scaffold_skill("greeter", tmp_path)
    (tmp_path / "greeter" / "pytest.ini").write_text("[pytest]\naddopts = -k usage\n")
    tested = tavernlab("skill", "test", "greeter", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "1 passed, 1 deselected" in tested.stdout


def test_pytest_comes_with_the_install() -> None:
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert any(re.match(r"pytest\b", d) for d in project["project"]["dependencies"])


def test_skill_test_without_pytest_says_how_to_get_it(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    scaffold_skill("greeter", tmp_path)
    monkeypatch.setitem(sys.modules, "pytest", None)  # what an install without it looks like
    assert main(["skill", "test", str(tmp_path / "greeter")]) == 2
    assert ("tavernlab: error: skill test needs pytest, which is not installed in this "
            f"Python ({sys.executable}): pip install pytest\n") in capsys.readouterr().err


def test_scaffold_refuses_bad_input_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(InvalidSkillPackage, match="lowercase ASCII letters"):
        scaffold_skill("Bad Name", tmp_path)
    (tmp_path / "taken").mkdir()
    with pytest.raises(InvalidSkillPackage, match="Refusing to overwrite"):
        scaffold_skill("taken", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    assert list((tmp_path / "taken").iterdir()) == []
    assert main(["skill", "test", str(tmp_path / "taken")]) == 2


def test_development_reinstalls_per_round_and_keeps_the_last_good_version(
        tmp_path: Path) -> None:
    package = scaffold_skill("greeter", tmp_path / "work")
    lines: list[str] = []
    lab = Lab(tmp_path / "lab")
    lab.skills.development.report = lines.append
    skill = lab.skills.develop(tmp_path / "work" / "greeter")
    assert lines == [f"greeter: installed for development (hash {package.installed_hash[:4]}…) "
                     f"from {tmp_path / 'work' / 'greeter'}"]
    run = lab.start_run(chat_id="a", skills=["greeter"])
    main_js = tmp_path / "work" / "greeter" / "scripts" / "main.js"
    script = "/skills/greeter/scripts/main.js"
    assert run.js([script, "x"]).json() == {"greeting": "Hello, x!"}
    main_js.write_text(main_js.read_text().replace("Hello", "Howdy"))
    assert run.js([script, "x"]).json() == {"greeting": "Hello, x!"}  # same round
    run.next_round()
    assert run.js([script, "x"]).json() == {"greeting": "Howdy, x!"}
    new_hash = lab.skills.get("greeter").installed_hash
    assert lines[1] == (f"greeter: reinstalled (hash {package.installed_hash[:4]}…→"
                        f"{new_hash[:4]}…)")
    skill_md = tmp_path / "work" / "greeter" / "SKILL.md"
    good = skill_md.read_text()
    skill_md.write_text("no front matter any more\n")
    run.next_round()
    assert run.js([script, "x"]).json() == {"greeting": "Howdy, x!"}  # last good version
    assert lines[2].startswith(f"greeter: invalid edit, keeping the installed version (hash "
                               f"{new_hash[:4]}…): ")
    run.next_round()
    run.js([script, "x"])
    assert len(lines) == 3  # the same error is said once
    skill_md.write_text(good.replace("Greets someone", "Greets anyone"))
    run.next_round()
    run.js([script, "x"])
    assert lines[3].startswith("greeter: reinstalled (hash ")
    assert skill.error is None and lab.skills.get("greeter").installed_hash == skill.installed_hash


def test_develop_refuses_what_is_not_one_valid_package(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab")
    with pytest.raises(InvalidSkillPackage, match="must be a directory"):
        lab.skills.develop(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidSkillPackage):
        lab.skills.develop(tmp_path / "empty")
    assert lab.skills.development.skills == []


def test_result_json_names_what_went_wrong() -> None:
    assert CommandResult(0, '{"a": [1]}\n', "").json() == {"a": [1]}
    with pytest.raises(ValueError, match=r"not JSON \(exit 1\): 'oops\\n'; stderr: 'bad'"):
        CommandResult(1, "oops\n", "bad").json()


PLUGIN_TEST = '''
import pytest
from tavernlab.clock import FixedClock


def test_tavern_lab_is_deterministic(tavern_lab):
    assert isinstance(tavern_lab.clock, FixedClock)
    run = tavern_lab.start_run(chat_id="a")
    assert run.id == "run_" + run.id[4:20] + "0000000000000001"


def test_skill_run_binds_the_skills(skill_run, tmp_path):
    from tavernlab.skills._scaffold import scaffold_skill
    one = scaffold_skill("one", tmp_path)
    scaffold_skill("two", tmp_path)
    run = skill_run(tmp_path / "one", skills=[tmp_path / "two"])
    assert sorted(run.skills) == ["one", "two"]
    assert run.js(["/skills/two/scripts/main.js", "b"]).json() == {"greeting": "Hello, b!"}
'''


def run_pytest(folder: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    """``source`` written to ``folder/name`` and run by a fresh pytest in that folder."""
    (folder / name).write_text(source)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(folder / name)], capture_output=True, text=True, timeout=300,
                          cwd=folder)


def test_the_plugin_fixtures_in_a_fresh_pytest(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, "test_plugin.py", PLUGIN_TEST)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


REPLAY_TEST = '''
import pytest
from tavernlab.skills._scaffold import scaffold_skill
from tavernlab.testing import assert_replays


def _record(skill_run, tmp_path):
    scaffold_skill("greeter", tmp_path)
    run = skill_run(tmp_path / "greeter")
    run.js(["/skills/greeter/scripts/main.js", "world"])
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "hi"})
    run.finish()
    return run.export(tmp_path / "greeter.tavernrun")


def test_an_unchanged_skill_replays(skill_run, tmp_path):
    report = assert_replays(_record(skill_run, tmp_path))
    assert report.identical and report.actions == 3


def test_a_changed_skill_fails_with_the_first_divergence(skill_run, tmp_path):
    bundle = _record(skill_run, tmp_path)
    script = tmp_path / "greeter" / "scripts" / "main.js"
    script.write_text(script.read_text().replace("Hello", "Howdy"))
    assert_replays(bundle, skills={"greeter": tmp_path / "greeter"})
'''


def test_assert_replays_passes_on_an_identical_replay_and_fails_with_the_divergence(
        tmp_path: Path) -> None:
    done = run_pytest(tmp_path, "test_replays.py", REPLAY_TEST)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    failure = done.stdout[done.stdout.index("test_a_changed_skill_fails"):]
    lines = [line.removeprefix("E       ") for line in failure.splitlines()
             if line.startswith("E ")]
    run_id = lines[1].split(" in ")[1].split(",")[0]
    assert lines == [
        "AssertionError: the run does not replay identically",
        f"diverged: 2 divergences in {run_id}, first: action 0 "
        "(js /skills/greeter/scripts/main.js world): stdout of the job",
        lines[2],
        f"--- recorded/js-jobs/job_{run_id[4:]}.json:stdout",
        f"+++ replayed/js-jobs/job_{run_id[4:]}.json:stdout",
        "@@ -1 +1 @@",
        '-{"greeting":"Hello, world!"}',
        '+{"greeting":"Howdy, world!"}',
    ]
    versions = re.fullmatch(r"skill greeter: ([0-9a-f]{12}) -> ([0-9a-f]{12}) \((/.+)/greeter\)",
                            lines[2])
    assert versions is not None and versions[1] != versions[2]
    assert "replay_bundle(" not in failure  # __tracebackhide__: the plugin's frame is hidden


def test_development_news_goes_to_stdout_and_an_invalid_edit_to_stderr(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scaffold_skill("greeter", tmp_path / "work")
    lab = Lab(tmp_path / "lab")
    lab.skills.develop(tmp_path / "work" / "greeter")
    out, err = capsys.readouterr()
    assert out.startswith("greeter: installed for development (hash ") and err == ""
    (tmp_path / "work" / "greeter" / "SKILL.md").write_text("no front matter\n")
    lab.skills.development.sync()
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("greeter: invalid edit, keeping the installed version")
