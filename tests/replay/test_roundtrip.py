"""Export a run, replay it in another lab and another process: identical, byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import tavernlab
from tavernlab.cli import main
from tavernlab.replay import FORMAT_VERSION, Replay, read_bundle
from tavernlab.replay._actions import describe

from .conftest import Recorded, deterministic_lab

LABELS = [
    "workspace.write_file call_1", "workspace.read_file call_2", "workspace.apply_patch call_3",
    "workspace.list_files call_4", "workspace.search_files call_5",
    "workspace.write_file call_6", "workspace.read_file call_7", "workspace.shell call_8",
    "js -e console.log(new Date().toISOString(), Math.random())",
    "js /skills/dice/scripts/roll.js 2", "js /skills/dice/scripts/kit.js Replay Me",
    "skill.run_script call_9", "skill.list call_10", "skill.read call_11",
    "start sub-agent critic", "task.return call_12", "js -e while (true) {}",
    "js -e console.log('cell', 4)", "node -e console.log(1) console.log(2)",
    "next round (end of round 1)", "workspace.shell call_13", "workspace.commit call_14",
    "workspace.finish call_15",
]


def files_below(root: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and directory (``None``) below ``root``."""
    return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}


def test_replay_in_another_lab_and_process_is_identical(recorded: Recorded,
                                                        tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "tavernlab.cli", "replay", str(recorded.bundle), "--lab",
         "replayed", "--json"], cwd=elsewhere, capture_output=True, text=True, timeout=300,
        env=dict(os.environ))
    assert (done.returncode, done.stderr) == (0, "")
    report = json.loads(done.stdout)
    assert (report["identical"], report["actions"], report["divergences"]) == (True, 23, [])
    assert report["lab"] == str(elsewhere / "replayed")
    data = "_tauritavern"
    for part in ("agent-workspaces", "host-chats"):
        recorded_files = files_below(recorded.lab.root / data / part)
        replayed_files = files_below(elsewhere / "replayed" / data / part)
        assert sorted(recorded_files) == sorted(replayed_files)
        assert [p for p in recorded_files if recorded_files[p] != replayed_files[p]] == []


def test_the_bundle_holds_actions_inputs_and_outcomes(recorded: Recorded) -> None:
    bundle = read_bundle(recorded.bundle)
    manifest = bundle.manifest
    assert (manifest.format, manifest.format_version, manifest.tavernlab_version) == (
        "tavernrun", FORMAT_VERSION, tavernlab.__version__)
    assert manifest.spec_revisions == {"workspace": 2, "js-and-skills": 2, "shell": 2,
                                       "worktree": 1}
    assert manifest.clock["kind"] == "fixed" and manifest.clock["stepMicroseconds"] == 1000
    assert manifest.ids["kind"] == "sequential"
    assert manifest.ids["prefixSeed"] == "replay-tests"
    assert manifest.inputs == [
        "input/host_chat.json", "input/origin.json", "input/persist_snapshot.json",
        "input/prompt_snapshot.json", "input/resolved_profile.json",
        "input/skill_bindings.json", "input/system_prompt.md"]
    assert [describe(a) for a in manifest.actions] == LABELS
    assert [getattr(a, "cancel", None) for a in manifest.actions][16] == "stop the loop"
    (skill,) = manifest.skills
    assert (skill.name, skill.installed_hash) == (
        "dice", recorded.lab.skills.get("dice").installed_hash)
    assert sorted(skill.files) == ["SKILL.md", "scripts/kit.js", "scripts/legacy.js",
                                   "scripts/roll.js"]
    assert [s.state_id for s in manifest.persist_states] == [recorded.run.persist_state_id]
    assert [(o.message_index, o.swipe_id) for o in manifest.chat_outputs] == [(1, 0)]
    assert "js-jobs/" + manifest.actions[9].job_id + ".json" in manifest.run.files  # type: ignore[union-attr]
    job = bundle.run_json(manifest.actions[9].job_path)  # type: ignore[union-attr]
    assert job["stdin"] == "cGlwZWQgdGV4dAo="  # base64 of "piped text\n"


def test_export_is_deterministic_and_reads_no_clock(recorded: Recorded, tmp_path: Path) -> None:
    clock, ids = recorded.lab.clock, recorded.lab.ids
    readings, counters = clock.readings, ids.counters  # type: ignore[attr-defined]
    again = recorded.run.export(tmp_path / "again.tavernrun")
    assert again.read_bytes() == recorded.bundle.read_bytes()
    assert (clock.readings, ids.counters) == (readings, counters)  # type: ignore[attr-defined]
    main(["run", "export", recorded.run.id, "-o", str(tmp_path / "cli.tavernrun"), "--lab",
          str(recorded.lab.root)])
    assert (tmp_path / "cli.tavernrun").read_bytes() == recorded.bundle.read_bytes()


def test_run_export_works_without_importing_replay(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from tavernlab.clock import FixedClock, SequentialIds\n"
        "from tavernlab.host import Lab\n"
        f"lab = Lab({str(tmp_path / 'lab')!r}, clock=FixedClock(), ids=SequentialIds())\n"
        "run = lab.start_run(chat_id='a')\n"
        "run.call_tool('workspace.write_file', {'path': 'output/a.md', 'content': 'x'})\n"
        "print('tavernlab.replay' in sys.modules)\n"
        f"print(run.export({str(tmp_path / 'a.tavernrun')!r}).name)\n"
        "print('tavernlab.replay' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "False\na.tavernrun\nTrue\n", "")
    assert tavernlab.replay.replay(tmp_path / "a.tavernrun").identical


def test_a_reopened_and_resumed_run_replays(tmp_path: Path) -> None:
    lab = deterministic_lab(tmp_path / "lab")
    run = lab.start_run(chat_id="bob")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "one"})
    run.call_tool("workspace.commit", {})
    run.finish()
    run.resume()
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "two",
                                           "mode": "append"})
    again = lab.open_run(run.id)
    again.js(["-e", "console.log('after reopening')"])
    again.call_tool("workspace.read_file", {"path": "output/main.md"})
    again.call_tool("workspace.commit", {})
    again.finish("revised")
    bundle = again.export(tmp_path / "revised.tavernrun")
    kinds = [a.kind for a in read_bundle(bundle).manifest.actions]
    assert kinds == ["tool_call", "tool_call", "tool_call", "resume", "tool_call", "reopen",
                     "js_job", "tool_call", "tool_call", "tool_call"]
    report = tavernlab.replay.replay(bundle)
    assert report.identical, str(report)


def test_a_session_replays_one_action_at_a_time(recorded: Recorded) -> None:
    with Replay.prepare(recorded.bundle) as session:
        root = session.lab.root
        assert session.run.id == recorded.run.id
        for index in range(3):
            session.play_action(index)
        partial = session.verify()
        assert not partial.identical
        assert partial.first is not None and partial.first.index == 3
        assert session.played == 3
        session.play()
        assert session.verify().identical
    assert not root.exists()
