"""The legacy ``skill.run_script`` engine (docs/js-and-skills.md, "The legacy engine")."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import pytest

from tavernlab.js import (
    SkillScriptError,
    SkillScriptRequest,
    SkillScriptValidationError,
    SnapshotFile,
    legacy_context,
    run_skill_script,
)
from tavernlab.js._errors import SkillScriptContextError
from tavernlab.js._legacy import ScriptWrite, SkillScriptOutcome
from tavernlab.workspace.macros import FrozenMacros

from .conftest import SNAPSHOT, frozen, max_overlap

V1 = "import { workspace, context, log, macros } from '@tauritavern/runtime/v1';\n"
VISIBLE = ("output", "persist", "plan", "scratch", "skills", "summaries", "tool-results")
WRITABLE = ("output", "persist", "plan", "scratch", "summaries")


def request(main: str, extra: dict[str, str] | None = None, **overrides: Any
            ) -> SkillScriptRequest:
    """A request for ``scripts/main.js`` = ``main`` with the default roots and context."""
    modules = {"scripts/main.js": main, **(extra or {})}
    fields: dict[str, Any] = {
        "skill": "demo", "entry": "scripts/main.js", "modules": modules, "args": {"x": 1},
        "visible_roots": VISIBLE, "writable_roots": WRITABLE,
        "files": {"output/data.txt": SnapshotFile("hello", "0" * 64)},
        "context": legacy_context(SNAPSHOT, frozen().macros), "macros": frozen().macros,
    }
    fields.update(overrides)
    return SkillScriptRequest(**fields)


def run(main: str, extra: dict[str, str] | None = None, **overrides: Any) -> SkillScriptOutcome:
    """Execute and return the outcome."""
    return run_skill_script(request(main, extra, **overrides))


def failure(main: str, extra: dict[str, str] | None = None, **overrides: Any
            ) -> SkillScriptError:
    """Execute and return the :class:`SkillScriptError` it must raise."""
    with pytest.raises(SkillScriptError) as caught:
        run(main, extra, **overrides)
    return caught.value


# --- acceptance -----------------------------------------------------------------------------


def test_acceptance_1_default_then_main() -> None:
    assert run("export default (a) => a.x + 1").value == 2
    assert run("export function main(a) { return ['main', a.x]; }").value == ["main", 1]
    assert run("export default () => 'default';\nexport function main() { return 'main'; }"
               ).value == "default"


def test_acceptance_2_exception_with_stack() -> None:
    error = failure("export default () => {\n  throw new Error('boom');\n};")
    assert error.code == "skill.run_script_execution_failed"
    assert error.message == ("Skill script scripts/main.js failed: Error: boom\n"
                             "    at default (scripts/main.js:2:13)")


def test_acceptance_3_endless_loop_times_out() -> None:
    error = failure("export default () => { while (true) {} };", time_limit=0.3)
    assert error.code == "skill.run_script_execution_failed"
    assert error.message == ("Skill script scripts/main.js timed out after 0.3s and was "
                             "interrupted.")


def test_acceptance_4_result_too_large() -> None:
    error = failure("export default () => 'x'.repeat(300 * 1024);")
    assert error.code == "skill.run_script_result_too_large"
    assert error.message == (
        f"Skill script result is {300 * 1024 + 2} bytes, exceeding the 262144-byte limit. "
        "Return less data from the script and write large output to the workspace with "
        "workspace.writeText instead.")


def test_acceptance_5_relative_imports_and_failures() -> None:
    modules = {"scripts/helper.js": "export const h = () => 'H';",
               "scripts/lib/parser.js": "import { h } from '../helper.js';\n"
                                        "export const p = () => h() + 'P';"}
    main = ("import { h } from './helper.js';\nimport { p } from './lib/parser.js';\n"
            "export default () => h() + p();")
    assert run(main, modules).value == "HHP"
    outside = failure("import '../outside.js';\nexport default () => 1;")
    assert outside.message == (
        "Skill script scripts/main.js failed: Cannot find module `../outside.js` imported from "
        "`scripts/main.js` in the skill's scripts/ snapshot.\n    at scripts/main.js:1:8")
    marked = failure("import { marked } from 'marked';\nexport default () => 1;")
    assert marked.message == (
        "Skill script scripts/main.js failed: Module `marked` is not available: import "
        "@tauritavern/runtime/v1 or a relative module from the skill's scripts/ directory.\n"
        "    at scripts/main.js:1:24")


def test_acceptance_6_async_entries_and_top_level_await() -> None:
    assert run("export default async (a) => { await null; return a.x * 10; };").value == 10
    rejected = failure("export default async () => { throw new Error('rejected'); };")
    assert "Error: rejected" in rejected.message
    assert run("const v = await Promise.resolve(5);\nexport default () => v;").value == 5
    pending = failure("await new Promise(() => {});\nexport default () => 1;")
    assert pending.message == ("Skill script scripts/main.js failed: The awaited Promise is "
                               "still pending, but no work remains to resolve it.")
    never = failure("export default () => new Promise(() => {});")
    assert "still pending" in never.message


def test_acceptance_7_no_entry_function() -> None:
    for source in ("export const x = 1;", "export default 42;", "export const main = 'no';"):
        assert failure(source).message == ("Skill script scripts/main.js failed: Error: skill "
                                           "script must export a `default` or `main` function")


NOT_JSON = ("Skill script scripts/main.js failed: Error: skill script must return a "
            "JSON-serializable value; `undefined` and functions cannot be returned (return "
            "`null` explicitly instead)")


@pytest.mark.parametrize(("body", "message"), [
    ("const a = {}; a.self = a; return a;",
     "Skill script scripts/main.js failed: TypeError: circular reference\n"
     "    at stringify (native)"),
    ("return undefined;", NOT_JSON),
    ("return () => 1;", NOT_JSON),
    ("return Symbol('s');", NOT_JSON),
    ("return 10n;", "Skill script scripts/main.js failed: TypeError: BigInt are forbidden in "
                    "JSON.stringify\n    at stringify (native)"),
    ("return { n: 1n };", "Skill script scripts/main.js failed: TypeError: BigInt are "
                          "forbidden in JSON.stringify\n    at stringify (native)"),
])
def test_acceptance_8_bad_return_values(body: str, message: str) -> None:
    error = failure(f"export default () => {{ {body} }};")
    assert (error.code, error.message) == ("skill.run_script_execution_failed", message)
    assert "circular" in message or "undefined" in message or "BigInt" in message


def test_acceptance_8_null_and_dropped_members() -> None:
    assert run("export default () => null;").value is None
    outcome = run("export default () => ({ f() {}, s: Symbol('x'), u: undefined, "
                  "a: [undefined, () => 1, Symbol('y'), 2] });")
    assert outcome.result_json == '{"a":[null,null,null,2]}'


def test_acceptance_9_replacing_json_changes_nothing() -> None:
    source = ("export default () => {\n"
              "  globalThis.JSON = { stringify: () => '\"hacked\"', parse: () => 0 };\n"
              "  JSON.stringify = () => 'x';\n"
              "  return { ok: true };\n"
              "};")
    outcome = run(source)
    assert (outcome.value, outcome.result_json) == ({"ok": True}, '{"ok":true}')


def test_acceptance_10_overlay_reads_own_writes_final_state() -> None:
    source = V1 + ("export default () => {\n"
                   "  workspace.writeText('output/a.txt', 'first');\n"
                   "  const seen = workspace.readText('output/a.txt');\n"
                   "  workspace.writeText('output/a.txt', 'second!');\n"
                   "  return [seen, workspace.readText('output/a.txt')];\n"
                   "};")
    outcome = run(source)
    assert outcome.value == ["first", "second!"]
    assert outcome.writes == (ScriptWrite("output/a.txt", "second!"),)


def test_acceptance_10_one_path_written_twice_is_budgeted_once() -> None:
    big = 600 * 1024
    source = V1 + ("export default () => {\n"
                   f"  workspace.writeText('output/a.txt', 'a'.repeat({big}));\n"
                   f"  workspace.writeText('output/a.txt', 'b'.repeat({big}));\n"
                   "  return 1;\n"
                   "};")
    outcome = run(source)
    assert outcome.writes == (ScriptWrite("output/a.txt", "b" * big),)


def test_acceptance_11_delta_sorted_last_write_in_call_order() -> None:
    source = V1 + ("export default () => {\n"
                   "  workspace.writeText('scratch/z.md', 'z');\n"
                   "  workspace.writeText('output/b.md', 'b');\n"
                   "  workspace.writeText('output/a.md', 'a');\n"
                   "  workspace.writeText('scratch/m.json', 'm');\n"
                   "  return null;\n"
                   "};")
    outcome = run(source)
    assert [w.path for w in outcome.writes] == ["output/a.md", "output/b.md", "scratch/m.json",
                                                "scratch/z.md"]
    assert outcome.last_write_path == "scratch/m.json"


def test_acceptance_12_overlay_policy_messages() -> None:
    source = V1 + ("export default () => {\n"
                   "  const out = [];\n"
                   "  const attempts = [\n"
                   "    () => workspace.readText('input/prompt_snapshot.json'),\n"
                   "    () => workspace.writeText('output', 'x'),\n"
                   "    () => workspace.writeText('skills/demo/x.md', 'x'),\n"
                   "    () => workspace.writeText('input/x.md', 'x'),\n"
                   "    () => workspace.readText('/etc/passwd'),\n"
                   "    () => workspace.readText('output/../../escape'),\n"
                   "    () => workspace.readText('output/\\0x'),\n"
                   "    () => workspace.readText('output/missing.txt'),\n"
                   "    () => workspace.listFiles('input'),\n"
                   "  ];\n"
                   "  for (const f of attempts) {\n"
                   "    try { f(); out.push('no error'); } catch (e) { out.push(e.message); }\n"
                   "  }\n"
                   "  return out;\n"
                   "};")
    assert run(source).value == [
        "path is outside the visible workspace roots: input/prompt_snapshot.json",
        "path is outside the writable workspace roots: output",
        "path is outside the writable workspace roots: skills/demo/x.md",
        "path is outside the writable workspace roots: input/x.md",
        "absolute paths are not allowed",
        "path escapes the workspace",
        "path contains NUL",
        "file not found: output/missing.txt",
        "path is outside the visible workspace roots: input",
    ]


def test_acceptance_12_a_write_outside_the_writable_roots_fails_the_script() -> None:
    error = failure(V1 + "export default () => {\n"
                         "  workspace.writeText('scratch/ok.txt', 'ok');\n"
                         "  workspace.writeText('tool-results/x.txt', 'x');\n"
                         "};")
    assert error.message.startswith(
        "Skill script scripts/main.js failed: Error: path is outside the writable workspace "
        "roots: tool-results/x.txt\n    at default (scripts/main.js:4:")


def test_acceptance_13_exists_and_listing_over_the_snapshot() -> None:
    source = V1 + ("export default () => [\n"
                   "  workspace.exists('output'), workspace.exists('output/data.txt'),\n"
                   "  workspace.exists('missing.txt'), workspace.exists('/output'),\n"
                   "  workspace.exists('input/prompt_snapshot.json'), workspace.exists('\\0'),\n"
                   "  workspace.listFiles(), workspace.listFiles('output'),\n"
                   "  (workspace.writeText('scratch/n/new.txt', 'n'), workspace.listFiles()),\n"
                   "  workspace.exists('scratch/n'),\n"
                   "];")
    assert run(source).value == [True, True, False, False, False, False, ["output"],
                                 ["data.txt"], ["output", "scratch"], True]


def test_acceptance_14_context_has_raw_json_types() -> None:
    source = V1 + ("export default () => [context.worldInfo.entries.map(e => [e.uid, e.ref, "
                   "e.constant, e.position ?? null, e.displayName ?? null, e.world]),\n"
                   "  context.variables.local, context.variables.global,\n"
                   "  context.variables.local.missing === undefined,\n"
                   "  context.macro.names.char, macros.render('{{char}}')];")
    value = run(source).value
    assert value[0] == [["1", "worldinfo:lore#1", True, "before", "Tower", "lore"],
                        ["2", "worldinfo:lore#2", False, None, None, "lore"]]
    assert value[1] == SNAPSHOT["variables"]["local"]
    assert value[2] == {"theme": "dark"}
    assert value[3:] == [True, "Frozen Alice", "Frozen Alice"]


def test_acceptance_15_logs_are_collected_and_forwarded(caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    source = V1 + ("export default () => {\n"
                   "  log.info('started'); log.warn('careful'); log.error('bad');"
                   " log.debug('detail');\n"
                   "  let typeError = '';\n"
                   "  try { log.info(42); } catch (e) { typeError = e.name; }\n"
                   "  return { typeError, keys: Object.keys(log).sort() };\n"
                   "};")
    with caplog.at_level(logging.DEBUG, logger="tavernlab.skill_script"):
        outcome = run(source)
    assert outcome.value == {"typeError": "TypeError", "keys": ["debug", "error", "info", "warn"]}
    assert [(log.level, log.message) for log in outcome.logs] == [
        ("info", "started"), ("warn", "careful"), ("error", "bad"), ("debug", "detail")]
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("tavernlab.skill_script", logging.INFO, "[skill-script] started"),
        ("tavernlab.skill_script", logging.WARNING, "[skill-script] careful"),
        ("tavernlab.skill_script", logging.ERROR, "[skill-script] bad"),
        ("tavernlab.skill_script", logging.DEBUG, "[skill-script] detail"),
    ]
    assert "started" not in outcome.result_json


def test_acceptance_16_no_early_build_globals() -> None:
    source = ("export default () => [typeof $fs, typeof $log, typeof $worldInfo, "
              "typeof $variables, typeof console, typeof process, typeof require, "
              "typeof setTimeout, typeof TextEncoder];")
    assert run(source).value == ["undefined"] * 9


def test_acceptance_17_input_budget() -> None:
    files = {f"output/f{i}.txt": SnapshotFile("x" * (1024 * 1024), "0" * 64) for i in range(8)}
    error = failure("export default () => 1;", files=files)
    size = 8 * 1024 * 1024 + len("export default () => 1;") + len('{"x": 1}') + len(
        json.dumps(legacy_context(SNAPSHOT, frozen().macros), ensure_ascii=False))
    assert (error.code, error.message) == ("skill.run_script_execution_failed", (
        f"total skill script input is {size} bytes (modules + workspace snapshot + args + "
        "context), exceeding the 8388608-byte limit"))


def test_acceptance_17_output_budget_for_writes_logs_and_result() -> None:
    writes = failure(V1 + "export default () => {\n"
                          "  for (let i = 0; ; i++) workspace.writeText('output/f' + i + '.txt',"
                          " 'w'.repeat(100000));\n"
                          "};")
    total = 10 * (len("output/f0.txt") + 100000 + 64) + len("output/f10.txt") + 100000 + 64
    assert writes.message.startswith(
        f"Skill script scripts/main.js failed: Error: total skill script output is {total} "
        "bytes (writes + logs + result), exceeding the 1048576-byte limit\n")
    logs = failure(V1 + "export default () => { for (;;) log.info('l'.repeat(1000)); };")
    assert "exceeding the 1048576-byte limit" in logs.message
    result = failure(V1 + "export default () => {\n"
                          "  workspace.writeText('output/big.txt', 'b'.repeat(900000));\n"
                          "  return 'r'.repeat(200000);\n"
                          "};")
    size = len("output/big.txt") + 900000 + 64 + 200002
    assert result.message == (f"total skill script output is {size} bytes (writes + logs + "
                              "result), exceeding the 1048576-byte limit")


def test_acceptance_18_eight_concurrent_executions() -> None:
    source = ("export default () => {\n"
              "  const start = performance.timeOrigin + performance.now();\n"
              "  let x = 0; for (let i = 0; i < 3e6; i++) x += i;\n"
              "  return [start, performance.timeOrigin + performance.now()];\n"
              "};")
    results: list[Any] = [None] * 8

    def worker(index: int) -> None:
        results[index] = run(source).value

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(isinstance(r, list) and len(r) == 2 for r in results)
    assert max_overlap([(start, end) for start, end in results]) <= 2


# --- more of the contract -------------------------------------------------------------------


def test_the_v3_module_name_is_the_same_module() -> None:
    source = ("import * as v1 from '@tauritavern/runtime/v1';\n"
              "import * as v3 from '@tauritavern/runtime';\n"
              "export default () => [v1.workspace === v3.workspace, Object.keys(v1).sort()];")
    assert run(source).value == [True, ["context", "log", "macros", "workspace"]]


def test_memory_and_stack_exhaustion_fail_the_script() -> None:
    memory = failure("export default () => { const a = []; for (;;) a.push('m'.repeat(64) + "
                     "a.length); };")
    assert memory.message.startswith("Skill script scripts/main.js failed: JavaScript exceeded "
                                     "the 32 MiB memory limit.")
    stack = failure("function f(n) { return f(n + 1) + 1; }\nexport default () => f(0);")
    assert stack.message.startswith("Skill script scripts/main.js failed: JavaScript exceeded "
                                    "the 256 KiB stack limit.\n    at f (scripts/main.js:1:")


def test_module_snapshot_limits_abort_before_execution() -> None:
    many = {f"scripts/m{i}.js": "export {};" for i in range(64)}
    with pytest.raises(SkillScriptValidationError) as caught:
        run("export default () => 1;", many)
    assert caught.value.message == ("skill `demo` scripts exceed the 64-module / "
                                    "2097152-byte snapshot limit")
    big = {"scripts/big.js": "//" + "x" * (2 * 1024 * 1024)}
    with pytest.raises(SkillScriptValidationError):
        run("export default () => 1;", big)
    assert run("export default () => 1;", {f"scripts/m{i}.js": "" for i in range(63)}
               ).value == 1


def test_missing_entry_is_not_found() -> None:
    with pytest.raises(SkillScriptError) as caught:
        run_skill_script(request("export default () => 1;", entry="scripts/other.js"))
    assert caught.value.code == "skill.run_script_not_found"


def test_args_and_context_are_private_copies() -> None:
    source = V1 + ("export default (a) => { a.x = 5; context.variables.local.score = 0;\n"
                   "  return [a.x, context.variables.local.score]; };")
    assert run(source).value == [5, 0]
    assert SNAPSHOT["variables"]["local"]["score"] == 3


def test_legacy_context_validation() -> None:
    macros = FrozenMacros()
    assert legacy_context(None, macros) == {
        "worldInfo": {"entries": []}, "variables": {"local": {}, "global": {}},
        "macro": {"names": {}, "character": {}, "system": {}, "chat": {}}}
    assert legacy_context({"variables": {"local": None}}, macros)["variables"] == {
        "local": {}, "global": {}}
    for snapshot, detail in [
        ({"worldInfoActivation": {"entries": {}}}, "worldInfoActivation.entries must be an array"),
        ({"worldInfoActivation": []}, "worldInfoActivation must be an object"),
        ({"variables": {"local": []}}, "variables.local must be an object"),
        ({"variables": "x"}, "variables must be an object"),
    ]:
        with pytest.raises(SkillScriptContextError) as caught:
            legacy_context(snapshot, macros)
        assert caught.value.message == f"agent.invalid_skill_script_context: {detail}"
        assert caught.value.code == "agent.invalid_skill_script_context"
