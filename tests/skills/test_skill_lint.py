"""``tavernlab skill lint DIR [--json]`` on a corpus of real legacy and V5 scripts
(the demo's skills, the README's example, the tool tests' package, and one script per
rule). Every finding line is pinned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tavernlab.cli import main
from tavernlab.demo import _shell as demo_shell
from tavernlab.demo._skills import write_skill
from tavernlab.js import INPUT_BUDGET
from tavernlab.skills import lint_source, load_directory, load_inline

V1_MESSAGE = ("`@tauritavern/runtime/v1` is the legacy runtime; V5 scripts import "
              "`@tauritavern/runtime` (`tavernlab skill migrate` rewrites it)")
LEGACY_ENTRY = ("exports `default` but never reads process.argv: the V5 js runner never "
                "calls it, so the script does nothing (`tavernlab skill migrate` adds the "
                "entry code)")


def _lint(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    status = main(["skill", "lint", *argv])
    out, err = capsys.readouterr()
    assert err == ""
    return status, out.splitlines()


def test_the_demo_wordcount_skill(tmp_path: Path, capsys) -> None:
    status, lines = _lint(capsys, str(write_skill(tmp_path / "wordcount")))
    assert (status, lines) == (1, [
        f"scripts/count-legacy.js:1:32 runtime-v1 error: {V1_MESSAGE}",
        f"scripts/count-legacy.js:4:1 legacy-entry error: {LEGACY_ENTRY}",
        "2 errors, 0 warnings in 4 scripts"])


def test_the_demo_tally_skill_is_clean(tmp_path: Path, capsys, write_files) -> None:
    folder = write_files(tmp_path / "tally", {"SKILL.md": demo_shell.SKILL_MD,
                                              "scripts/count.js": demo_shell.COUNT_JS})
    assert _lint(capsys, str(folder)) == (0, ["0 errors, 0 warnings in 1 script"])


def test_the_readme_example(readme_greet: Path, capsys) -> None:
    status, lines = _lint(capsys, str(readme_greet))
    assert (status, lines) == (1, [
        f"scripts/greet-legacy.js:1:27 runtime-v1 error: {V1_MESSAGE}",
        f"scripts/greet-legacy.js:4:1 legacy-entry error: {LEGACY_ENTRY}",
        "2 errors, 0 warnings in 3 scripts"])


def test_json_output(tmp_path: Path, capsys) -> None:
    status = main(["skill", "lint", str(write_skill(tmp_path / "wordcount")), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 1
    assert report["findings"][0] == {
        "path": "scripts/count-legacy.js", "line": 1, "column": 32, "code": "runtime-v1",
        "severity": "error", "message": V1_MESSAGE}
    assert (report["errors"], report["warnings"], report["scripts"]) == (2, 0, 4)


RULES = {
    "SKILL.md": "---\nname: rules\ndescription: One script per rule.\n---\n"
                "Run `js /skills/rules/scripts/imports.js`, globals.js, broken.js, binary.js, "
                "`legacy` and `clean.mjs`.\n",
    "scripts/imports.js": (
        "import { workspace } from '@tauritavern/runtime';\n"
        "import dayjs from '@tauritavern/kit/dayjs';\n"
        "import _ from 'lodash';\n"
        "import cfg from './cfg.json' with { type: 'json' };\n"
        "import { a } from './lib/a';\n"
        "import { b } from '../../other/b.js';\n"
        "import { c } from './lib/missing.js';\n"
        "import { d } from '/skills/rules/scripts/lib/d.js';\n"
        "import { e } from '/scratch/e.js';\n"
        "const late = await import('./lib/late.js');\n"
        "console.log(process.argv.length);\n"),
    "scripts/lib/d.js": "export const d = 1; // it is 'import x from \"nowhere\"' in a comment\n",
    "scripts/globals.js": (
        "const s = `${process.argv[2]}`;\n"
        "setTimeout(() => {}, 1);\n"
        "const data = await fetch('https://example.com');\n"
        "const fs = require('fs');\n"
        "process.exit(2);\n"
        "process.env.HOME;\n"
        "if (typeof window !== 'undefined') { /* feature test: fine */ }\n"
        "function later(setInterval) { return setInterval; }\n"
        "const o = { Buffer };\n"),
    "scripts/broken.js": "console.log(process.argv;\n",
    "scripts/binary.js": b"// caf\xe9\n",
    "scripts/legacy.js": "export function main(args) { return args; }\n",
    "scripts/clean.mjs": "const [name] = process.argv.slice(2);\nconsole.log(name);\n",
    "scripts/quiet.js": "console.log(process.argv.slice(2).join(' '));\n",
}


def test_one_finding_per_rule() -> None:
    report = lint_source(load_inline(RULES))
    assert [str(f) for f in report.findings] == [
        "scripts/binary.js:1:1 source-encoding error: JavaScript source must be UTF-8.",
        "scripts/broken.js:1:25 syntax-error error: the module does not parse here",
        "scripts/globals.js:2:1 host-global error: `setTimeout` is not available: the sandbox "
        "has no Node, Deno or browser APIs, timers or network",
        "scripts/globals.js:3:20 host-global error: `fetch` is not available: the sandbox has "
        "no Node, Deno or browser APIs, timers or network",
        "scripts/globals.js:4:12 host-global error: `require` is not available: the sandbox "
        "has no Node, Deno or browser APIs, timers or network",
        "scripts/globals.js:5:1 host-global error: `process.exit` is not available: only "
        "process.argv and process.exitCode exist; set process.exitCode instead",
        "scripts/globals.js:6:1 host-global error: `process.env` is not available: only "
        "process.argv and process.exitCode exist; set process.exitCode instead",
        "scripts/globals.js:9:13 host-global error: `Buffer` is not available: the sandbox "
        "has no Node, Deno or browser APIs, timers or network",
        "scripts/imports.js:3:15 unknown-module error: `lodash` is neither "
        "@tauritavern/runtime nor a kit module (@tauritavern/kit/...); bundle it into the "
        "skill (scripts/vendor/) and import it relatively",
        "scripts/imports.js:4:17 import-attributes error: Import attributes are not "
        "supported; import a .js/.mjs module.",
        "scripts/imports.js:5:19 import-extension error: `./lib/a` needs an explicit .js or "
        ".mjs extension",
        "scripts/imports.js:6:19 import-outside-skill error: `../../other/b.js` leaves the "
        "skill rules",
        "scripts/imports.js:7:19 import-not-found error: `./lib/missing.js` points to "
        "scripts/lib/missing.js, which the skill does not ship",
        "scripts/imports.js:9:19 import-outside-skill error: `/scratch/e.js` leaves the "
        "skill rules",
        "scripts/imports.js:10:27 import-not-found error: `./lib/late.js` points to "
        "scripts/lib/late.js, which the skill does not ship",
        "scripts/legacy.js:1:1 legacy-entry error: exports `main` but never reads "
        "process.argv: the V5 js runner never calls it, so the script does nothing "
        "(`tavernlab skill migrate` adds the entry code)",
        "scripts/quiet.js:1:1 undocumented-script warning: SKILL.md never mentions this "
        "script; document its command line, output and file side effects",
    ]
    assert (report.errors, report.warnings, report.scripts) == (16, 1, 8)


def test_module_budgets(tmp_path: Path) -> None:
    legacy = {"SKILL.md": "---\nname: big\ndescription: D.\n---\n`run`\n",
              "scripts/run.js": "export default () => 1;\n",
              **{f"scripts/lib/m{i}.js": "export {};\n" for i in range(64)}}
    (entry, budget) = lint_source(load_inline(legacy)).findings
    assert entry.code == "legacy-entry"
    size = 24 + 64 * len("export {};\n")
    assert str(budget) == (f"scripts/run.js:1:1 module-budget error: skill.run_script loads "
                           f"every scripts/**/*.js file: 65 modules, {size} bytes exceed the "
                           "64-module / 2097152-byte snapshot limit")
    filler = "// " + "x" * (INPUT_BUDGET // 2) + "\n"
    v5 = {"SKILL.md": "---\nname: big\ndescription: D.\n---\nmain.js\n",
          "scripts/main.js": "import './lib/a.js';\nconsole.log(process.argv);\n",
          "scripts/lib/a.js": "import './b.js';\n" + filler, "scripts/lib/b.js": filler}
    total = sum(len(v.encode()) for k, v in v5.items() if k.startswith("scripts/"))
    assert [str(f) for f in lint_source(load_inline(v5)).findings] == [
        f"scripts/main.js:1:1 module-budget error: the script and its imports are {total} "
        f"bytes, over the {INPUT_BUDGET}-byte input budget of one js call"]


def test_a_folder_of_skills_with_an_invalid_one(tmp_path: Path, write_files, capsys) -> None:
    root = write_files(tmp_path / "pack", {
        "good/SKILL.md": "---\nname: good\ndescription: D.\n---\nmain.js\n",
        "good/scripts/main.js": "console.log(process.argv.slice(2));\n",
        "torn/SKILL.md": "no front matter\n"})
    assert _lint(capsys, str(root)) == (1, [
        "torn/SKILL.md:1:1 invalid-package error: SKILL.md must start with YAML frontmatter",
        "1 error, 0 warnings in 1 script"])
    scan = load_directory(root / "good")
    assert lint_source(scan).findings == ()
