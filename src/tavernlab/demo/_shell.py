"""Demo section: the workspace shell.

A run in a character chat with a ``tally`` skill bound. The model uses ``workspace.shell`` the
way it would: a heredoc and a ``jq`` pipeline over a JSON file, the skill's script through
``js /skills/tally/scripts/count.js``, a draft moved onto ``output/main.md`` (the move carries
the auto-commit candidate, so the round ends with an auto-commit of the moved file), and a
failing call (``exit 7``) whose write stays but which clears the next round's candidate.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from tavernlab.demo import deliberate_error
from tavernlab.demo._skills import finish_with_commit
from tavernlab.host import Lab, Run
from tavernlab.views import render_message, render_tool_call

SKILL_MD = """---
name: tally
description: Counts scenes by mood for {{char}}.
---
Run `js /skills/tally/scripts/count.js PATH` with a JSON array of scenes; it prints
`{"total": N, "byMood": {...}}`.
"""

COUNT_JS = """import { workspace } from '@tauritavern/runtime';

const [path] = process.argv.slice(2);
if (!path) throw new Error('usage: js count.js PATH');
const scenes = JSON.parse(workspace.readText(path));
const byMood = {};
for (const scene of scenes) byMood[scene.mood] = (byMood[scene.mood] ?? 0) + 1;
console.log(JSON.stringify({ total: scenes.length, byMood }));
"""

SCENES = """cat > /scratch/scenes.json <<'EOF'
[{"title": "Harbour at dawn", "mood": "calm"},
 {"title": "The storm", "mood": "tense"},
 {"title": "Lantern room", "mood": "calm"}]
EOF
jq -r '.[] | select(.mood == "calm") | .title' /scratch/scenes.json \\
  | sort | tee /scratch/calm.txt"""

DRAFT = ("printf '# Calm scenes\\n\\n' > /scratch/draft.md && "
         "sed 's/^/- /' /scratch/calm.txt >> /scratch/draft.md && "
         "mv /scratch/draft.md /output/main.md && ls /output")


def _shell(run: Run, out: TextIO, command: str, workdir: str = "/") -> None:
    args = {"command": command} if workdir == "/" else {"command": command, "workdir": workdir}
    print(render_tool_call("workspace.shell", args, run.call_tool("workspace.shell", args)),
          file=out)


def run(root: Path, out: TextIO) -> None:
    """Play the shell section in the lab at ``root``."""
    lab = Lab(root / "lab")
    lab.skills.install_files({"SKILL.md": SKILL_MD, "scripts/count.js": COUNT_JS},
                             on_conflict="replace")
    print("\n=== Shell: workspace.shell on bashkit ===", file=out)
    chat_run = lab.start_run(chat_id="demo-shell", skills=["tally"],
                             context={"macroContext": {"names": {"char": "Alice"}}})
    print(f"run {chat_run.id} (skills bound: {', '.join(sorted(chat_run.skills))})", file=out)
    _shell(chat_run, out, "ls /; head -n 3 /skills/tally/SKILL.md")
    _shell(chat_run, out, SCENES)
    _shell(chat_run, out, "js /skills/tally/scripts/count.js scratch/scenes.json | jq .byMood")
    _shell(chat_run, out, DRAFT)
    print(f"-- auto-commit candidate after the move: {chat_run.internals.tracker.candidate}",
          file=out)
    chat_run.next_round()
    for event in chat_run.events(types="chat_commit_requested", journal=False):
        payload = event.payload
        print(f"-- round 1 ended: chat_commit_requested path={payload.path} "
              f"isExplicit={payload.is_explicit} sha256={payload.sha256[:12]}…", file=out)
    if chat_run.chat is not None:
        print(render_message(chat_run.chat.messages[-1]), file=out)
    deliberate_error(out, "the call exits 7; its write stays, but the round's auto-commit "
                     "candidate is cleared")
    _shell(chat_run, out, "printf 'kept after failure\\n' >> /output/main.md; exit 7")
    print(f"-- candidate after the failed call: {chat_run.internals.tracker.candidate}", file=out)
    chat_run.next_round()
    commits = len(chat_run.events(types="chat_commit_requested", journal=False))
    print(f"-- round 2 ended with no auto-commit (commit requests so far: {commits}); the "
          f"file keeps the line: {chat_run.read('output/main.md').splitlines()[-1]!r}",
          file=out)
    finish_with_commit(chat_run, "output/main.md", out)
