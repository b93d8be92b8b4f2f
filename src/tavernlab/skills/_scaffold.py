"""``tavernlab skill new``: a valid skill package to start from.

The scaffold holds ``SKILL.md`` (front matter and a usage section that names the script),
``scripts/main.js`` (a V5 script: reads ``process.argv``, prints its result as JSON, exits 2
with a usage line on bad input; or, with ``legacy``, the ``skill.run_script`` form with a
default export and ``@tauritavern/runtime/v1``), a ``references/`` note and
``tests/test_main.py`` written against the :mod:`tavernlab.testing` pytest plugin. It is
validated as soon as it is written and its tests pass as they stand.
"""

from __future__ import annotations

from pathlib import Path

from tavernlab.skills._errors import InvalidSkillPackage
from tavernlab.skills._package import SkillPackage, validate_skill_name
from tavernlab.skills._source import load_directory

_SKILL_MD = """\
---
name: {name}
description: Greets someone by name ({kind} script). Replace this with what the skill does.
---
# {name}

Greets someone by name. Replace this text with what the skill is for and when to use it.

## Usage

{usage}

It prints `{{"greeting": "Hello, <NAME>!"}}` as JSON. Without a name it prints a usage line
on stderr and exits with status 2.

See `references/notes.md` for background material.
"""

_V5_USAGE = "Run `js /skills/{name}/scripts/main.js NAME` in workspace.shell."
_LEGACY_USAGE = ('Call `skill.run_script` with `{{"skill": "{name}", "script": "main", '
                 '"args": {{"name": "NAME"}}}}`.')

_V5_MAIN = """\
// {name}: greets someone. Usage: js /skills/{name}/scripts/main.js NAME
const [name] = process.argv.slice(2);
if (!name) {{
  console.error("usage: js /skills/{name}/scripts/main.js NAME");
  process.exitCode = 2;
}} else {{
  console.log(JSON.stringify({{ greeting: `Hello, ${{name}}!` }}));
}}
"""

_LEGACY_MAIN = """\
// {name}: greets someone. Called by skill.run_script with {{"name": "NAME"}}.
import {{ log }} from "@tauritavern/runtime/v1";

export default function main(args) {{
  if (typeof args.name !== "string" || args.name === "") {{
    throw new Error("args.name must be a non-empty string");
  }}
  log.info(`greeting ${{args.name}}`);
  return {{ greeting: `Hello, ${{args.name}}!` }};
}}
"""

_NOTES = """\
# Notes for {name}

Put the background material the skill's instructions refer to here (style guides, tables,
examples). The model reads these files with the workspace tools under `skills/{name}/`.
"""

_V5_TEST = '''\
"""Tests of the {name} skill: `tavernlab skill test .` (or `pytest tests`) runs them."""

from pathlib import Path

SKILL = Path(__file__).resolve().parents[1]
MAIN = "/skills/{name}/scripts/main.js"


def test_main_prints_the_greeting_as_json(skill_run):
    run = skill_run(SKILL)
    result = run.js([MAIN, "world"])
    assert result.exit_code == 0, result.stderr
    assert result.json() == {{"greeting": "Hello, world!"}}


def test_main_without_a_name_prints_usage_and_exits_2(skill_run):
    run = skill_run(SKILL)
    result = run.js([MAIN])
    assert result.exit_code == 2
    assert result.stderr == "usage: js {main} NAME\\n"
'''

_LEGACY_TEST = '''\
"""Tests of the {name} skill: `tavernlab skill test .` (or `pytest tests`) runs them."""

from pathlib import Path

SKILL = Path(__file__).resolve().parents[1]


def call(run, args):
    return run.call_tool("skill.run_script", {{"skill": "{name}", "script": "main",
                                              "args": args}})


def test_main_returns_the_greeting(skill_run):
    result = call(skill_run(SKILL, legacy=True), {{"name": "world"}})
    assert not result.is_error, result.content
    assert result.structured == {{"greeting": "Hello, world!"}}


def test_main_refuses_a_missing_name(skill_run):
    result = call(skill_run(SKILL, legacy=True), {{}})
    assert result.error_code == "skill.run_script_execution_failed"
    assert "args.name must be a non-empty string" in result.content
'''


def scaffold_skill(name: str, directory: Path | str, *, legacy: bool = False) -> SkillPackage:
    """Write the package ``name`` into ``directory/name`` and return it validated. An
    existing target or a bad name is refused and nothing is written."""
    skill = validate_skill_name(name)
    target = Path(directory) / skill
    if target.exists() or target.is_symlink():
        raise InvalidSkillPackage(f"Refusing to overwrite {target}: it already exists")
    main = f"/skills/{skill}/scripts/main.js"
    files = {
        "SKILL.md": _SKILL_MD.format(
            name=skill, kind="legacy skill.run_script" if legacy else "V5",
            usage=(_LEGACY_USAGE if legacy else _V5_USAGE).format(name=skill)),
        "scripts/main.js": (_LEGACY_MAIN if legacy else _V5_MAIN).format(name=skill),
        "references/notes.md": _NOTES.format(name=skill),
        "tests/test_main.py": (_LEGACY_TEST if legacy else _V5_TEST).format(name=skill,
                                                                           main=main),
    }
    for relative, text in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (package,) = load_directory(target).require_valid()
    return package
