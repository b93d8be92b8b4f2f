"""Replaying the same actions against another version of a skill: where behaviour changed."""

from __future__ import annotations

from pathlib import Path

import pytest

import tavernlab
from tavernlab.cli import main
from tavernlab.replay import SkillVersions
from tavernlab.replay._errors import ReplaySetupError
from tavernlab.skills._package import installed_hash

from .conftest import ROLL, SKILL, Recorded, write_package

#: The same script, rolling one pip higher.
HIGHER = ROLL.replace("1 + Math.floor", "2 + Math.floor")


@pytest.fixture
def higher(tmp_path: Path) -> Path:
    """The dice skill whose roll.js changed."""
    return write_package(tmp_path / "dice-higher", {**SKILL, "scripts/roll.js": HIGHER})


def test_a_changed_script_diverges_at_the_action_that_ran_it(recorded: Recorded,
                                                             higher: Path) -> None:
    report = tavernlab.replay.replay(recorded.bundle, skills={"dice": higher})
    new_hash = installed_hash({k: v.encode() for k, v in
                               {**SKILL, "scripts/roll.js": HIGHER}.items()})
    assert report.skills == [SkillVersions(
        "dice", recorded.lab.skills.get("dice").installed_hash, new_hash, str(higher))]
    found = [(d.index, d.action, d.kind, d.subject) for d in report.divergences]
    assert found == [
        (7, "workspace.shell call_8", "result", "content"),
        (7, "workspace.shell call_8", "event", "records 71..72 of the recording"),
        (9, "js /skills/dice/scripts/roll.js 2", "stdout", "of the job"),
        (9, "js /skills/dice/scripts/roll.js 2", "event", "records 78..79 of the recording"),
        (9, "js /skills/dice/scripts/roll.js 2", "file", "scratch/rolls.json"),
    ]
    first = report.first
    assert first is not None and first.index == 7
    shell_lines = first.diff.splitlines()  # type: ignore[union-attr]
    assert shell_lines[0].startswith("--- recorded/tool-results/")
    removed = [line for line in shell_lines if line.startswith("-[")]
    added = [line for line in shell_lines if line.startswith("+[")]
    assert len(removed) == len(added) == 1
    assert [int(x) + 1 for x in removed[0][2:-1].split(",")] == [
        int(x) for x in added[0][2:-1].split(",")]
    text = str(report)
    assert text.splitlines()[0] == (
        "diverged: 5 divergences in " + recorded.run.id + ", first: action 7 "
        "(workspace.shell call_8): result content")
    assert f"skill dice: {report.skills[0].recorded_hash[:12]} -> {new_hash[:12]}" in text
    html = report._repr_html_()
    assert "<th>recorded</th><th>replayed</th>" in html and new_hash in html


def test_the_same_version_from_a_path_is_identical(recorded: Recorded) -> None:
    report = tavernlab.replay.replay(recorded.bundle, skills={"dice": recorded.package})
    assert report.identical
    assert not report.skills[0].changed and report.skills[0].source == str(recorded.package)


def test_the_cli_exits_1_and_prints_the_first_divergence(
        recorded: Recorded, higher: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(recorded.bundle), "--skill", f"dice={higher}"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("diverged: 5 divergences in ")
    assert out[0].endswith("first: action 7 (workspace.shell call_8): result content")
    assert out[2].startswith("--- recorded/tool-results/")
    assert main(["replay", str(recorded.bundle)]) == 0
    assert capsys.readouterr().out.startswith("identical: 23 actions of ")


def test_a_replacement_must_be_the_bound_skill(recorded: Recorded, tmp_path: Path) -> None:
    with pytest.raises(ReplaySetupError) as info:
        tavernlab.replay.replay(recorded.bundle, skills={"die": recorded.package})
    assert info.value.message == "the run bound no skill named `die` (bound: dice)"
    other = write_package(tmp_path / "other", {"SKILL.md": "---\nname: other\n"
                                                           "description: x\n---\nx\n"})
    with pytest.raises(ReplaySetupError) as info:
        tavernlab.replay.replay(recorded.bundle, skills={"dice": other})
    assert info.value.message == f"{other} holds no valid skill named `dice`"
