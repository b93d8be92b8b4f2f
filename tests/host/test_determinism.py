"""Two labs with a fixed clock and sequential ids that play the same scripted run produce
byte-identical directories: run files, events, journal, persist states, chat records,
skills."""

from __future__ import annotations

import json
from pathlib import Path

from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.host import Lab

SKILL = {
    "SKILL.md": "---\nname: dice\ndescription: Rolls dice for {{user}}.\n---\n"
                "Run `js /skills/dice/scripts/roll.js N`.\n",
    "scripts/roll.js": ("import {workspace} from '@tauritavern/runtime';\n"
                        "const n = Number(process.argv[2] ?? 1);\n"
                        "const rolls = Array.from({length: n}, () => 1 + Math.floor("
                        "Math.random() * 6));\n"
                        "workspace.writeText('scratch/rolls.json', JSON.stringify({rolls, "
                        "at: new Date().toISOString()}));\n"
                        "console.log(JSON.stringify(rolls));\n"),
    "scripts/legacy.js": ("import {workspace} from '@tauritavern/runtime/v1';\n"
                          "export default (args) => { workspace.writeText('output/legacy.md', "
                          "'legacy ' + Math.random() + ' ' + Date.now()); "
                          "return {seen: args.x, now: Date.now()}; };\n"),
}
CONTEXT = {"macroContext": {"names": {"user": "Mika", "char": "Alice"}},
           "variables": {"local": {"mood": "curious"}, "global": {}}}


def play(root: Path, package: Path) -> Path:
    """The scripted run: every workspace tool, the shell, js, a skill script, the legacy
    tool, a sub-agent, commits, finish, and a second run from the persist state."""
    lab = Lab(root, clock=FixedClock(), ids=SequentialIds("determinism"))
    lab.skills.install(package)
    lab.chat("alice").add_message("Roll for me.")
    run = lab.start_run(chat_id="alice", context=CONTEXT, legacy_run_script=True)
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "Hello {{char}}"})
    run.call_tool("workspace.read_file", {"path": "output/main.md"})
    run.call_tool("workspace.apply_patch", {"path": "output/main.md", "old_string": "Hello",
                                            "new_string": "Hi"})
    run.call_tool("workspace.list_files", {"depth": 2})
    run.call_tool("workspace.search_files", {"query": "Hi"})
    run.call_tool("workspace.write_file", {"path": "persist/notes.md", "content": "kept\n"})
    shell = run.shell("echo $RANDOM $RANDOM; date; date +%s.%N; mkdir -p /scratch/d && "
                      "echo x > /scratch/d/f.md && ls -l /scratch/d; "
                      "js /skills/dice/scripts/roll.js 3; js -e 'console.log(Math.random(), "
                      "Date.now())'")
    assert shell.exit_code == 0, shell.stderr
    run.js(["-e", "console.log(new Date().toISOString(), Math.random())"])
    run.js(["/skills/dice/scripts/roll.js", "2"])
    run.call_tool("skill.run_script", {"skill": "dice", "script": "legacy", "args": {"x": 1}})
    run.call_tool("skill.list", {})
    run.call_tool("skill.read", {"name": "dice"})
    critic = run.start_subagent("critic")
    run.call_tool("task.return", {"result": "looks fine"}, invocation=critic)
    run.next_round()
    run.call_tool("workspace.commit", {"reason": "done"})
    run.finish("scene written")
    again = lab.start_run(chat_id="alice", context=CONTEXT,
                          persist_base=lab.chat("alice").current_persist_state())
    again.call_tool("workspace.write_file", {"path": "persist/notes.md", "content": "more\n",
                                             "mode": "append"})
    again.shell("cat /persist/notes.md; echo $RANDOM")
    again.call_tool("workspace.write_file", {"path": "output/main.md", "content": "Part 2"})
    again.call_tool("workspace.commit", {})
    again.finish()
    lab.close()
    return root


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and directory (``None``) below ``root``, by relative path."""
    return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}


def test_two_labs_playing_the_same_run_write_the_same_bytes(tmp_path: Path) -> None:
    package = tmp_path / "dice"
    for name, text in SKILL.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    first = snapshot(play(tmp_path / "one" / "lab", package))
    second = snapshot(play(tmp_path / "two" / "lab", package))
    assert sorted(first) == sorted(second)
    differing = [path for path in first if first[path] != second[path]]
    assert differing == []
    events = [p for p in first if p.endswith("events.jsonl")]
    journals = [p for p in first if p.endswith("journal.jsonl")]
    states = [p for p in first if "persistent-states/" in p and p.endswith("manifest.json")]
    chats = [p for p in first if "host-chats/" in p]
    assert len(events) == 2 and len(journals) == 2 and len(states) == 2 and chats
    stamps = [json.loads(line)["timestamp"] for line in first[events[0]].splitlines()]
    assert stamps[0].startswith("2026-01-01T00:00:00") and stamps == sorted(stamps)


def test_the_fixed_clock_reaches_the_shell_and_the_sandbox(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab", clock=FixedClock(), ids=SequentialIds())
    run = lab.start_run(chat_id="a")
    out = run.shell("date; date -u +%Y-%m-%d; echo $RANDOM; touch /scratch/t; ls -l /scratch")
    lines = out.stdout.splitlines()
    assert lines[0].endswith("UTC 2026") and lines[0].startswith("Thu Jan  1 00:00:00")
    assert lines[1] == "2026-01-01"
    assert "2026-01-01 00:00" in lines[-1]
    bad = run.shell("date -d yesterday")
    assert (bad.exit_code, bad.stderr) == (
        1, "date: option not supported under a fixed clock: -d\n")
    now = run.js(["-e", "console.log(new Date(Date.now()).toISOString().slice(0, 4))"])
    assert now.stdout == "2026\n"


def test_the_system_clock_leaves_time_alone(tmp_path: Path) -> None:
    run = Lab(tmp_path / "lab").start_run(chat_id="a")
    years = run.shell("date +%Y").stdout.strip()
    assert int(years) >= 2026
    first, second = (run.js(["-e", "console.log(Math.random())"]).stdout for _ in range(2))
    assert first != second
