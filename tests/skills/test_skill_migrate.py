"""``tavernlab skill migrate``: legacy scripts become V5 scripts with the same output.

The corpus is every legacy script the tests use: the ``skill.run_script`` tool tests' package
and the legacy engine's successful scripts (both read from their test modules' own source with
``ast``, so the corpus follows them), the demo's ``count-legacy`` and the README's
``greet-legacy``. Each runs through the legacy tool in one lab and, migrated, through ``js`` in
another lab with the same workspace and context; stdout's JSON must equal the tool's result and
the files written must be the same — unless the migration itself reports the difference.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tavernlab.cli import main
from tavernlab.demo._skills import write_skill
from tavernlab.errors import NotFound
from tavernlab.host import Lab, Run
from tavernlab.skills import (
    SkillStorageError,
    lint_source,
    load_directory,
    load_inline,
    plan_migration,
    write_migration,
)

TESTS = Path(__file__).resolve().parents[1]
CONTEXT: dict[str, Any] = {
    "worldInfoActivation": {"entries": [
        {"uid": "1", "ref": "worldinfo:lore#1", "content": "The tower is old.",
         "constant": True, "position": "before", "displayName": "Tower", "world": "lore"},
        {"uid": "2", "ref": "worldinfo:lore#2", "content": "Rain.", "constant": False,
         "world": "lore"}]},
    "variables": {"local": {"score": 3, "ratio": 1.5, "name": "Ann", "flags": [True, None],
                            "nested": {"k": "v"}}, "global": {"theme": "dark"}},
    "macroContext": {"names": {"char": "Frozen Alice", "user": "Bob"},
                     "chat": {"lastMessageId": 7}},
}
#: Engine-test scripts whose V5 output differs by design, and the note the migration gives
#: for each (or why no note can: the value is not the script's own output).
DIFFERS_BY_DESIGN = {
    "test_acceptance_13_exists_and_listing_over_the_snapshot": "listfiles-roots",
    # The script returns the runtime's own error messages: the overlay's (7.5) and V5's (4.1)
    # are worded differently.
    "test_acceptance_12_overlay_policy_messages": None,
    "test_acceptance_15_logs_are_collected_and_forwarded": None,  # log.info(42) is fine in V5
    "test_acceptance_16_no_early_build_globals": None,  # `typeof process` is V5's own global
    "test_acceptance_18_eight_concurrent_executions": None,  # timestamps
}


class _Strings(ast.NodeVisitor):
    """Evaluates the string expressions of a test module: literals, names bound to strings,
    ``+``, dict displays."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: dict[str, Any] = {}
        for node in tree.body:
            self.bind(node, self.names)

    def bind(self, node: ast.AST, scope: dict[str, Any]) -> None:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name) and (value := self.value(node.value, scope)):
            scope[node.targets[0].id] = value

    def value(self, node: ast.AST, scope: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return scope.get(node.id, self.names.get(node.id))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, scope), self.value(node.right, scope)
            return left + right if isinstance(left, str) and isinstance(right, str) else None
        if isinstance(node, ast.Dict):
            pairs = {self.value(k, scope): self.value(v, scope)
                     for k, v in zip(node.keys, node.values, strict=True) if k is not None}
            return pairs if all(isinstance(v, str) for v in pairs.values()) else None
        return None


def _engine_scripts() -> dict[str, str]:
    """``run(<source>)`` calls (one argument, no overrides) of the legacy engine tests."""
    tree = ast.parse((TESTS / "js" / "test_legacy_engine.py").read_text())
    strings = _Strings(tree)
    found: dict[str, str] = {}
    for function in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        scope: dict[str, Any] = {}
        for node in ast.walk(function):
            strings.bind(node, scope)
        calls = [n for n in ast.walk(function) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Name) and n.func.id == "run"
                 and len(n.args) == 1 and not n.keywords]
        for number, call in enumerate(sorted(calls, key=lambda c: c.lineno)):
            source = strings.value(call.args[0], scope)
            if isinstance(source, str):
                found[f"{function.name}#{number}"] = source
    return found


def _tool_scripts() -> dict[str, str]:
    """The ``SCRIPTS`` package of the ``skill.run_script`` tool tests."""
    tree = ast.parse((TESTS / "js" / "test_run_script_tool.py").read_text())
    scripts = _Strings(tree).names["SCRIPTS"]
    assert isinstance(scripts, dict) and "main.js" in scripts
    return scripts


def _write_package(folder: Path, name: str, scripts: dict[str, str]) -> Path:
    for path, text in {"SKILL.md": f"---\nname: {name}\ndescription: Corpus.\n---\n",
                       **{f"scripts/{p}": t for p, t in scripts.items()}}.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    return folder


def _compare(source: Path, name: str, cases: list[tuple[str, dict[str, Any]]],
             tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, tuple[Any, Any]]:
    """Run each ``(script, args)`` through the legacy tool and, migrated, through ``js``;
    returns the pairs that differ."""
    migrated = tmp_path / f"{name}-v5"
    shutil.copytree(source, migrated)
    assert main(["skill", "migrate", str(migrated), "--write"]) == 0
    capsys.readouterr()
    assert main(["skill", "lint", str(migrated)]) == 0, capsys.readouterr().out
    legacy_lab, v5_lab = Lab(tmp_path / f"{name}-legacy-lab"), Lab(tmp_path / f"{name}-v5-lab")
    legacy_lab.skills.install(source)
    v5_lab.skills.install(migrated)
    differing = {}
    for index, (script, args) in enumerate(cases):
        old = legacy_lab.start_run(chat_id=f"c{index}", legacy_run_script=True, context=CONTEXT)
        new = v5_lab.start_run(chat_id=f"c{index}", context=CONTEXT)
        for run in (old, new):
            run.call_tool("workspace.write_file", {"path": "output/data.txt", "content": "hello"})
        result = old.call_tool("skill.run_script", {"skill": name, "script": script,
                                                    "args": args})
        done = new.js([f"/skills/{name}/scripts/{script}.js", json.dumps(args)])
        if result.is_error:
            outcome = (done.exit_code, done.stdout)
            expected: Any = (1, "")
        else:
            # The tool's compact JSON (content) is exactly what the V5 script prints.
            outcome = (done.exit_code, done.stdout,
                       {ref: _read_or_none(new, ref) for ref in result.resource_refs})
            expected = (0, result.content.split("Result:\n", 1)[1] + "\n",
                        {ref: old.read(ref) for ref in result.resource_refs})
        if outcome != expected:
            differing[script] = (expected, outcome)
    return differing


def _read_or_none(run: Run, path: str) -> str | None:
    """A file the script should have written, or ``None`` when it did not (it failed)."""
    try:
        return run.read(path)
    except NotFound:
        return None


def test_migrated_tool_test_scripts_print_what_the_tool_returned(tmp_path, capsys) -> None:
    source = _write_package(tmp_path / "demo", "demo", _tool_scripts())
    lint = lint_source(load_directory(source))
    assert sorted({(f.path, f.code) for f in lint.findings if f.severity == "error"}) == [
        ("scripts/0helper.js", "legacy-entry"), ("scripts/helper-2.js", "legacy-entry"),
        ("scripts/helper.js", "legacy-entry"), ("scripts/main.js", "legacy-entry"),
        ("scripts/main.js", "runtime-v1"), ("scripts/snapshot.js", "legacy-entry"),
        ("scripts/snapshot.js", "runtime-v1"), ("scripts/write.js", "legacy-entry"),
        ("scripts/write.js", "runtime-v1")]
    writes = [["output/b.md", "B"], ["log", "hello"], ["scratch/data.json", "{}"]]
    cases = [("main", {"x": 21}), ("helper", {}), ("helper-2", {}), ("0helper", {}),
             ("write", {"writes": writes}), ("snapshot", {})]
    differing = _compare(source, "demo", cases, tmp_path, capsys)
    assert set(differing) == {"snapshot"}  # listFiles()/exists('skills/demo'): reported
    (plan,) = [plan_migration(p) for p in load_directory(source).packages]
    assert [(n.path, n.code) for n in plan.notes] == [
        ("scripts/snapshot.js", "listfiles-roots"), ("scripts/snapshot.js", "exists-throws"),
        ("scripts/snapshot.js", "exists-throws"), ("scripts/write.js", "deferred-writes")]


def test_migrated_engine_test_scripts_print_the_same_value(tmp_path, capsys) -> None:
    found = _engine_scripts()
    assert len(found) >= 15
    names = {key: f"e{number:02}" for number, key in enumerate(sorted(found))}
    source = _write_package(tmp_path / "engine", "engine",
                            {f"{names[key]}.js": text for key, text in found.items()})
    differing = _compare(source, "engine", [(names[key], {"x": 1}) for key in sorted(found)],
                         tmp_path, capsys)
    (plan,) = [plan_migration(p) for p in load_directory(source).packages]
    noted = {(n.path, n.code) for n in plan.notes}
    expected_differences = set()
    for key in found:
        test = key.split("#")[0]
        if test in DIFFERS_BY_DESIGN:
            expected_differences.add(names[key])
            if DIFFERS_BY_DESIGN[test] is not None:
                assert (f"scripts/{names[key]}.js", DIFFERS_BY_DESIGN[test]) in noted
    assert set(differing) == expected_differences, differing


def test_migrated_demo_and_readme_scripts_print_the_same_value(tmp_path, readme_greet,
                                                               capsys) -> None:
    demo = write_skill(tmp_path / "wordcount")
    cases = [("count-legacy", {"path": "output/data.txt"}),
             ("count-legacy", {"path": "output/data.txt", "top": 2}),
             ("count-legacy", {"path": "output/missing.txt"})]  # fails in both
    assert _compare(demo, "wordcount", cases, tmp_path, capsys) == {}
    assert _compare(readme_greet, "greet",
                    [("greet-legacy", {"name": "Bob", "from": "Alice", "loud": True})],
                    tmp_path, capsys) == {}


ENTRY_BLOCK = """
// V5 entry, added by `tavernlab skill migrate`: the V5 runner never calls the `{exported}`
// export, so read the JSON arguments from process.argv[2], call it and print the result.
try {{
  const stringify = JSON.stringify;  // taken before the call, like the legacy serializer
  const args = JSON.parse(process.argv[2] ?? '{{}}');
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {{
    throw new TypeError('args must be an object');
  }}
  const result = await {name}(args);
  if (result === undefined || typeof result === 'function') {{
    throw new TypeError('skill script must return a JSON-serializable value');
  }}
  console.log(stringify(result));
}} catch (error) {{
  console.error(error instanceof Error ? `${{error}}\\n${{error.stack ?? ''}}`.trimEnd()
    : String(error));
  process.exitCode = 1;
}}
"""

FORMS = {
    "SKILL.md": "---\nname: forms\ndescription: D.\n---\nCall `anon` or `expr` with "
                "skill_run_script.\n",
    "scripts/anon.js": 'import { log } from "@tauritavern/runtime/v1";\n'
                       "export default async function (a) { return a; }\n",
    "scripts/expr.js": "const legacyEntry = 1;\nexport default\n  (a) => a.x + legacyEntry",
    "scripts/named.js": "export function main({ x }) { return x; }\n",
    "scripts/bound.js": "const run = (a) => a;\nexport { run as default };\n",
    "scripts/klass.js": "export default class Tool {}\n",
    "scripts/shared.js": "export default (a) => a;\n",
    "scripts/user.js": "import f from './shared.js';\nexport const main = (a) => f(a);\n",
    "scripts/lib/x.js": "export * from '@tauritavern/runtime/v1';\n",
    "scripts/v5.js": "export default () => 1;\nconsole.log(process.argv[2]);\n",
}


def test_every_entry_form_is_rewritten_byte_exactly() -> None:
    (package,) = load_inline(FORMS).packages
    plan = plan_migration(package)
    after = {s.path: (s.calls, s.after.decode()) for s in plan.scripts}
    assert after == {
        "scripts/anon.js": ("legacyEntry", 'import { log } from "@tauritavern/runtime";\n'
                            "export default async function legacyEntry(a) { return a; }\n"
                            + ENTRY_BLOCK.format(exported="default", name="legacyEntry")),
        "scripts/expr.js": ("legacyEntry2", "const legacyEntry = 1;\nconst legacyEntry2 =\n"
                            "  (a) => a.x + legacyEntry; export { legacyEntry2 as default };\n"
                            + ENTRY_BLOCK.format(exported="default", name="legacyEntry2")),
        "scripts/named.js": ("main", FORMS["scripts/named.js"]
                             + ENTRY_BLOCK.format(exported="main", name="main")),
        "scripts/bound.js": ("run", FORMS["scripts/bound.js"]
                             + ENTRY_BLOCK.format(exported="default", name="run")),
        "scripts/user.js": ("main", FORMS["scripts/user.js"]
                            + ENTRY_BLOCK.format(exported="main", name="main")),
        "scripts/lib/x.js": (None, "export * from '@tauritavern/runtime';\n"),
    }
    assert [str(n) for n in plan.notes] == [
        "scripts/klass.js:1:1 manual-entry error: the `default` export is a class; add the V5 "
        "entry by hand (read process.argv, call the function, print JSON)",
        "scripts/shared.js:1:1 manual-entry error: imported by scripts/user.js: entry code "
        "added here would run on import; move the shared code into a library module first"]
    assert plan.usage_lines == ((5, "Call `anon` or `expr` with skill_run_script."),)
    assert not plan.complete


def test_dry_run_then_write_on_the_demo(tmp_path: Path, capsys) -> None:
    folder = write_skill(tmp_path / "wordcount")
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    (package,) = load_directory(folder).packages
    (script,) = plan_migration(package).scripts
    assert main(["skill", "migrate", str(folder)]) == 0
    out = capsys.readouterr().out
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert out == script.diff() + (
        "SKILL.md shows skill.run_script calls; update them to the V5 command line "
        "(js /skills/wordcount/scripts/count-legacy.js '<args JSON>'):\n"
        "  SKILL.md:19: ## Legacy (`skill.run_script`)\n"
        "  SKILL.md:21: script `count-legacy`, args `{\"path\": string, \"top\"?: number}`; "
        "returns the same object.\n"
        "Not migrated automatically:\n"
        "  scripts/count-legacy.js:6:3 deferred-writes note: V5 writes at once and keeps the "
        "write if the script fails later; the legacy overlay wrote only after success, guarded "
        "against concurrent changes\n"
        "would rewrite 1 script; run again with --write to apply\n")
    assert script.diff().startswith("--- a/scripts/count-legacy.js\n"
                                    "+++ b/scripts/count-legacy.js\n")
    target = folder / "scripts" / "count-legacy.js"
    target.chmod(0o640)
    assert main(["skill", "migrate", str(folder), "--write"]) == 0
    assert capsys.readouterr().out.startswith("migrated scripts/count-legacy.js\n")
    assert target.read_bytes() == script.after
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["count-legacy.js", "count.js",
                                                               "lib"]
    assert main(["skill", "migrate", str(folder)]) == 0  # SKILL.md still needs the author
    assert capsys.readouterr().out == (
        "SKILL.md shows skill.run_script calls; update them to the V5 command line "
        "(js /skills/wordcount/scripts/<file>.js '<args JSON>'):\n"
        "  SKILL.md:19: ## Legacy (`skill.run_script`)\n"
        f"nothing to migrate in {folder}\n")


def test_a_file_changed_after_planning_is_not_overwritten(tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "wordcount")
    (package,) = load_directory(folder).packages
    plan = plan_migration(package)
    target = folder / "scripts" / "count-legacy.js"
    target.write_text("// edited meanwhile\n")
    with pytest.raises(SkillStorageError) as caught:
        write_migration(folder, plan)
    assert caught.value.message == f"{target} changed since it was read; run migrate again"
    assert target.read_text() == "// edited meanwhile\n"


def test_migrate_refuses_what_it_cannot_do(tmp_path: Path, capsys, write_files) -> None:
    root = write_files(tmp_path / "pack", {
        **{f"forms/{p}": t for p, t in FORMS.items()}, "torn/SKILL.md": "no front matter\n"})
    assert main(["skill", "migrate", str(root)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("invalid torn: SKILL.md must start with YAML frontmatter\n"
                          "--- a/forms/scripts/anon.js\n")
    assert "  forms/scripts/klass.js:1:1 manual-entry error: " in out
    assert out.endswith("would rewrite 6 scripts; run again with --write to apply\n")
    assert main(["skill", "migrate", str(root / "forms" / "SKILL.md")]) == 1
    assert capsys.readouterr().err == (
        f"error: skill.invalid_package: migrate needs a skill directory: "
        f"{root / 'forms' / 'SKILL.md'}\n")
