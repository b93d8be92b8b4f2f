"""Fixtures for record and replay: a skill with a V5 script, a kit script and a legacy script,
the script kit's cache, and a recorded run that uses every workspace tool, the shell, ``js``,
the skill, the kit and the legacy tool.

The kit comes from the session fixtures `kit_settings` and `kit_env` of tests/conftest.py
(fetched once per session, or taken from ``$TAVERNLAB_KIT_CACHE`` when it is set).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.host import Lab, Run
from tavernlab.js.kit import KitSettings

ROLL = ("import {workspace} from '@tauritavern/runtime';\n"
        "const n = Number(process.argv[2] ?? 1);\n"
        "const rolls = Array.from({length: n}, () => 1 + Math.floor(Math.random() * 6));\n"
        "workspace.writeText('scratch/rolls.json', JSON.stringify({rolls, "
        "at: new Date().toISOString()}));\n"
        "console.log(JSON.stringify(rolls));\n")
SKILL = {
    "SKILL.md": "---\nname: dice\ndescription: Rolls dice for {{user}}.\n---\n"
                "Run `js /skills/dice/scripts/roll.js N` or `js /skills/dice/scripts/kit.js`.\n",
    "scripts/roll.js": ROLL,
    "scripts/kit.js": ("import dayjs from '@tauritavern/kit/dayjs';\n"
                       "import slugify from '@tauritavern/kit/slugify';\n"
                       "console.log(JSON.stringify({day: dayjs('2026-08-20').add(2, 'day')"
                       ".format('YYYY-MM-DD'), slug: slugify(process.argv[2] ?? 'Hi there')}))"
                       ";\n"),
    "scripts/legacy.js": ("import {workspace} from '@tauritavern/runtime/v1';\n"
                          "export default (args) => { workspace.writeText('output/legacy.md', "
                          "'legacy ' + Math.random()); return {seen: args.x, now: Date.now()};"
                          " };\n"),
}
CONTEXT = {"macroContext": {"names": {"user": "Mika", "char": "Alice"}},
           "variables": {"local": {"mood": "curious"}, "global": {}}}


def write_package(folder: Path, files: dict[str, str]) -> Path:
    """A skill package directory holding ``files``."""
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def deterministic_lab(root: Path) -> Lab:
    """A lab whose runs replay byte for byte."""
    return Lab(root, clock=FixedClock(), ids=SequentialIds("replay-tests"))


@dataclass
class Recorded:
    """A recorded run: its lab, the run, its bundle and the skill package it used."""

    lab: Lab
    run: Run
    bundle: Path
    package: Path


def play_everything(lab: Lab) -> Run:
    """Every workspace tool, the shell (with js inside), run.js (-e, a script with stdin, the
    kit, a named cell, node in another directory), the skill tools, the legacy tool, a
    sub-agent, a cancelled job, two rounds, commit, persist and finish."""
    lab.chat("alice").add_message("Roll for me.")
    run = lab.start_run(chat_id="alice", context=CONTEXT, legacy_run_script=True)
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "Hello {{char}}"})
    run.call_tool("workspace.read_file", {"path": "output/main.md"})
    run.call_tool("workspace.apply_patch", {"path": "output/main.md", "old_string": "Hello",
                                            "new_string": "Hi"})
    run.call_tool("workspace.list_files", {"depth": 2})
    run.call_tool("workspace.search_files", {"query": "Hi"})
    run.call_tool("workspace.write_file", {"path": "persist/notes.md", "content": "kept\n"})
    run.call_tool("workspace.read_file", {"path": "missing.md"})
    run.shell("echo $RANDOM; date; mkdir -p /scratch/d && echo x > /scratch/d/f.md; "
              "js /skills/dice/scripts/roll.js 3")
    run.js(["-e", "console.log(new Date().toISOString(), Math.random())"])
    run.js(["/skills/dice/scripts/roll.js", "2"], stdin="piped text\n")
    run.js(["/skills/dice/scripts/kit.js", "Replay Me"])
    run.call_tool("skill.run_script", {"skill": "dice", "script": "legacy", "args": {"x": 1}})
    run.call_tool("skill.list", {})
    run.call_tool("skill.read", {"name": "dice"})
    critic = run.start_subagent("critic")
    run.call_tool("task.return", {"result": "looks fine"}, invocation=critic)
    cancel_a_running_job(lab, run)
    run.js(["-e", "console.log('cell', 4)"], eval_name="<cell 4>")
    run.js(["-e", "console.log(1)\nconsole.log(2)"], cwd="/scratch", command="node")
    run.next_round()
    run.shell("cat /output/main.md; false")
    run.call_tool("workspace.commit", {"reason": "done"})
    run.finish("scene written")
    return run


def cancel_a_running_job(lab: Lab, run: Run) -> None:
    """``run.js`` of an endless loop on a thread, cancelled once a worker runs it."""
    worker = threading.Thread(target=run.js, args=(["-e", "while (true) {}"],))
    worker.start()
    while not lab.services.js_pool.running_jobs():
        threading.Event().wait(0.01)
    assert run.cancel("stop the loop") == 1
    worker.join(30)
    assert not worker.is_alive()


@pytest.fixture
def recorded(tmp_path: Path, kit_env: KitSettings) -> Recorded:
    """The run of :func:`play_everything`, exported."""
    package = write_package(tmp_path / "dice", SKILL)
    lab = deterministic_lab(tmp_path / "recording" / "lab")
    lab.skills.install(package)
    run = play_everything(lab)
    bundle = run.export(tmp_path / "bundles" / "everything.tavernrun")
    return Recorded(lab, run, bundle, package)
