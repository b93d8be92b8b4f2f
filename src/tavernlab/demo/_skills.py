"""Demo section: a skill package with a multi-module script, run as the host runs it.

Builds a ``wordcount`` skill (SKILL.md with a macro, a V5 command-line script and a legacy
``default(args)`` script sharing two library modules), validates and installs it, then runs it
with ``js /skills/wordcount/scripts/count.js ARG…`` (the V5 way) and through the legacy
``skill.run_script`` tool, and shows the files the scripts wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from tavernlab.demo import deliberate_error
from tavernlab.host import Lab, Run
from tavernlab.views import render_tool_call

SKILL_MD = """---
name: wordcount
description: Count words in a workspace text file and save a report.
metadata:
  version: "1.0"
  tags: [text, demo]
---
# wordcount

Counts the words of a text file for {{char}} and writes `scratch/wordcount/<name>.json`.

## V5 command line

    js /skills/wordcount/scripts/count.js PATH [--top N]

Prints `{"path", "words", "top": [[word, count], ...], "report"}` as JSON on stdout.
Writes the report file. Fails with exit code 2 on bad arguments.

## Legacy (`skill.run_script`)

script `count-legacy`, args `{"path": string, "top"?: number}`; returns the same object.
"""

TEXT_JS = """// Pure text helpers, shared by both entry points.
export function words(text) {
  return text.toLowerCase().match(/[\\p{L}\\p{N}']+/gu) ?? [];
}

export function top(list, n) {
  const counts = new Map();
  for (const w of list) counts.set(w, (counts.get(w) ?? 0) + 1);
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, n);
}
"""

REPORT_JS = """import { words, top } from './text.js';

// Build the report and the path it is saved under.
export function report(path, text, n) {
  const all = words(text);
  const name = path.split('/').pop().replace(/\\.[^.]*$/, '');
  return { path, words: all.length, top: top(all, n), report: `scratch/wordcount/${name}.json` };
}
"""

COUNT_JS = """import { workspace, log } from '@tauritavern/runtime';
import { report } from './lib/report.js';

const args = process.argv.slice(2);
const path = args[0];
let n = 5;
const at = args.indexOf('--top');
if (at >= 0) n = Number(args[at + 1]);
if (!path || !Number.isInteger(n) || n < 1) {
  console.error('usage: js count.js PATH [--top N]');
  process.exitCode = 2;
} else {
  const result = report(path, workspace.readText(path), n);
  workspace.writeText(result.report, JSON.stringify(result, null, 2) + '\\n');
  log.info(`counted ${result.words} words in ${path}`);
  console.log(JSON.stringify(result));
}
"""

COUNT_LEGACY_JS = """import { workspace, log } from '@tauritavern/runtime/v1';
import { report } from './lib/report.js';

export default function (args) {
  const result = report(args.path, workspace.readText(args.path), args.top ?? 5);
  workspace.writeText(result.report, JSON.stringify(result, null, 2) + '\\n');
  log.info(`counted ${result.words} words`);
  return result;
}
"""

STORY = """The lighthouse keeper kept the lamp.
The lamp kept the ships away from the rocks,
and the keeper kept the lamp lit every night.
"""

CONTEXT: dict[str, Any] = {"macroContext": {"names": {"user": "Mika", "char": "Alice"}}}


def write_skill(folder: Path) -> Path:
    """Write the demo skill's files into ``folder``; returns it."""
    files = {
        "SKILL.md": SKILL_MD,
        "scripts/count.js": COUNT_JS,
        "scripts/count-legacy.js": COUNT_LEGACY_JS,
        "scripts/lib/text.js": TEXT_JS,
        "scripts/lib/report.js": REPORT_JS,
    }
    for name, text in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return folder


def _heading(out: TextIO, text: str) -> None:
    print(f"\n=== {text} ===", file=out)


def run(root: Path, out: TextIO) -> None:
    """Play the skills section in the lab at ``root``."""
    lab = Lab(root / "lab")
    source = write_skill(root / "skill-src" / "wordcount")
    _heading(out, "Skills: validate and install a package")
    for package in lab.skills.validate(source).packages:
        print(f"valid: {package.name} — {package.description} ({len(package.files)} files)",
              file=out)
    for result in lab.skills.install(source, scope="global", on_conflict="replace").results:
        digest = result.skill.installed_hash[:16] if result.skill else "-"
        print(f"install: {result.name} -> {result.action} (installed hash {digest}…)",
              file=out)

    _heading(out, "Skills: V5 `js` command on /skills/wordcount/scripts/count.js")
    run_v5 = lab.start_run(chat_id="demo-skills", context=CONTEXT, skills=["wordcount"])
    print(run_v5.system_prompt.rstrip(), file=out)
    for tool, args in (
        ("workspace.read_file", {"path": "skills/wordcount/SKILL.md", "start_line": 1,
                                 "line_count": 10}),
        ("workspace.write_file", {"path": "scratch/story.md", "content": STORY}),
    ):
        print(render_tool_call(tool, args, run_v5.call_tool(tool, args)), file=out)
    argv = ["/skills/wordcount/scripts/count.js", "scratch/story.md", "--top", "3"]
    outcome = run_v5.js(argv)
    print(f"$ js {' '.join(argv)}\nexit {outcome.exit_code}\nstdout: {outcome.stdout.rstrip()}"
          f"\nstderr: {outcome.stderr.rstrip()}", file=out)
    deliberate_error(out, "no PATH argument, so the script prints its usage and exits 2")
    bad = run_v5.js(["/skills/wordcount/scripts/count.js"])
    print(f"$ js /skills/wordcount/scripts/count.js\nexit {bad.exit_code}\nstderr: "
          f"{bad.stderr.rstrip()}", file=out)
    print(f"files written: {run_v5.files('scratch')}", file=out)
    print(f"auto-commit candidate: {run_v5.internals.tracker.candidate} (the script's "
          "report is JSON, so the story written earlier stays the last modified text file)",
          file=out)

    _heading(out, "Skills: legacy skill.run_script (compatibility mode)")
    legacy = lab.start_run(chat_id="demo-skills", context=CONTEXT, legacy_run_script=True)
    legacy.call_tool("workspace.write_file", {"path": "scratch/story.md", "content": STORY})
    calls: list[dict[str, Any]] = [
        {"skill": "wordcount", "script": "count-legacy",
         "args": {"path": "scratch/story.md", "top": 2}},
        {"skill": "wordcount", "script": "Count_Legacy", "args": {}},
    ]
    for args in calls:
        if args["script"] != "count-legacy":
            deliberate_error(out, "`Count_Legacy` is not a valid script name ([a-z0-9-])")
        print(render_tool_call("skill.run_script", args,
                               legacy.call_tool("skill.run_script", args)), file=out)
    report = json.loads(legacy.read("scratch/wordcount/story.json"))
    print(f"scratch/wordcount/story.json: words={report['words']} top={report['top']}",
          file=out)
    for finished in (run_v5, legacy):
        finish_with_commit(finished, "scratch/story.md", out)


def finish_with_commit(run: Run, path: str, out: TextIO) -> None:
    """Commit ``path`` as the run's chat message, then finish the run (no demo run is left
    waiting for the model)."""
    for tool, args in (("workspace.commit", {"path": path}), ("workspace.finish", {})):
        print(render_tool_call(tool, args, run.call_tool(tool, args)), file=out)
