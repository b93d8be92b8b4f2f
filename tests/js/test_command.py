"""The V5 ``js``/``node``/``deno`` command (docs/js-and-skills.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tavernlab.js._builtins import COMMAND_BUILTINS, BuiltinModule, BuiltinModules
from tavernlab.js._command import fit_failure_report
from tavernlab.js._command_line import parse_command_line
from tavernlab.js._help import HELP_TEXT, help_text
from tavernlab.js._limits import (
    EXIT_CODE_INVALID,
    INTERRUPT_REASONS,
    LINE_EXCEEDED,
    MODULE_NOT_AVAILABLE,
    OUTPUT_CAP,
    OUTPUT_EXCEEDED,
    PENDING_PROMISE,
)

from .conftest import JsRunner, write


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (to prove nothing was written)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".workspace.lock"}


def assert_healthy(js: JsRunner) -> None:
    """The sandbox still runs a normal job."""
    result = js("-e", "console.log(6 * 7)")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "42\n", "")


ARGV = "console.log(JSON.stringify(process.argv))"

# --- acceptance (section 3) -------------------------------------------------------------


def test_acceptance_1_node_dashdash_entry_keeps_every_argument_a_string(
        workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/-args.mjs", ARGV + "\n")
    result = js("--", "-args.mjs", "--help", "-1", "--", "", "two words", cwd="/scratch",
                command="node")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == ["node", "/scratch/-args.mjs", "--help", "-1", "--",
                                         "", "two words"]


def test_acceptance_2_eval_with_dashdash_then_help_is_an_argument(js: JsRunner) -> None:
    result = js("-e", ARGV, "--", "--help")
    assert (result.exit_code, result.stdout, result.stderr) == (0, '["js","--help"]\n', "")


def test_acceptance_3_deno_eval_has_no_entry_element(js: JsRunner) -> None:
    result = js("eval", ARGV, "alpha", "--help", command="deno")
    assert (result.exit_code, result.stdout) == (0, '["deno","alpha","--help"]\n')


def test_acceptance_4_stdin_module_with_log_diagnostic(workspace: Path, js: JsRunner) -> None:
    source = ("import { log } from '@tauritavern/runtime';\n"
              "console.log(JSON.stringify(process.argv[2]));\n"
              "log.info('diagnostic', 1);\n")
    task = write(workspace, "scratch/task.js", source)
    result = js("-", "hello", stdin=task.read_bytes(), cwd="/scratch")
    assert (result.exit_code, result.stdout, result.stderr) == (0, '"hello"\n', "diagnostic 1\n")


def test_acceptance_4_stdin_argv_layout(js: JsRunner) -> None:
    result = js("-", "a", "--b", stdin=ARGV.encode())
    assert json.loads(result.stdout) == ["js", "-", "a", "--b"]


def test_acceptance_5_help_wins_over_eval_code(js: JsRunner) -> None:
    result = js("-e", 'throw new Error("x")', "--help")
    assert (result.exit_code, result.stdout, result.stderr) == (0, HELP_TEXT, "")


@pytest.mark.parametrize("value", ['"1"', "1.5", "256", "-1", "null", "true", "7n", "NaN"])
def test_acceptance_6_invalid_exit_codes_stop_the_script(js: JsRunner, value: str) -> None:
    result = js("-e", f"process.exitCode = {value};\nconsole.log('after');")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith(f"js: /<eval>: TypeError: {EXIT_CODE_INVALID}\n"
                                    "    at <anonymous> (/<eval>:1:")


def test_acceptance_7_rejection_after_exit_code_7_exits_1(js: JsRunner) -> None:
    result = js("-e", "process.exitCode = 7; await Promise.reject(new Error('no'))")
    assert result.exit_code == 1
    assert result.stderr.startswith("js: /<eval>: Error: no\n")


def test_acceptance_8_pending_top_level_await(js: JsRunner) -> None:
    result = js("-e", "await new Promise(() => {})")
    assert (result.exit_code, result.stderr) == (1, f"js: /<eval>: {PENDING_PROMISE}\n")


def test_acceptance_9_endless_loop_hits_the_deadline(workspace: Path, js: JsRunner) -> None:
    before = tree(workspace)
    result = js("-e", "while (true) {}", timeout=0.5)
    assert result.exit_code == 1
    assert result.timed_out and not result.cancelled
    assert result.stderr == f"js: /<eval>: {INTERRUPT_REASONS['deadline']}\n"
    assert "time limit" in result.stderr
    assert tree(workspace) == before
    assert_healthy(js)


def test_acceptance_10_output_over_the_cap(js: JsRunner) -> None:
    result = js("-e", "for (let i = 0; ; i++) console.log('x'.repeat(1000));")
    assert result.exit_code == 1
    assert len(result.stdout.encode()) <= OUTPUT_CAP
    assert result.stdout == ("x" * 1000 + "\n") * (OUTPUT_CAP // 1001)
    assert result.stderr.startswith(f"js: /<eval>: Error: {OUTPUT_EXCEEDED}\n")
    assert "output" in result.stderr


def test_acceptance_11_wrong_extension_and_bogus_option(js: JsRunner) -> None:
    result = js("task.txt", cwd="/scratch")
    assert (result.exit_code, result.stderr) == (
        1, "js: `task.txt` must be an explicit .js or .mjs module path.\n")
    result = js("--bogus")
    assert (result.exit_code, result.stderr) == (
        2, "js: Unsupported or repeated argument `--bogus`. See js --help.\n")


def test_acceptance_12_bare_import_is_not_available(js: JsRunner) -> None:
    result = js("-e", "import 'lodash';")
    assert result.exit_code == 1
    assert result.stderr == f"js: /<eval>: {MODULE_NOT_AVAILABLE}\n    at /<eval>:1:8\n"


def test_acceptance_13_exit_code_3(js: JsRunner) -> None:
    result = js("-e", "process.exitCode = 3; console.log(process.exitCode)")
    assert (result.exit_code, result.stdout, result.stderr) == (3, "3\n", "")


# --- argument scanning ------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "command", "message"), [
    (["-e"], "js", "-e requires a value. See js --help."),
    (["--eval"], "js", "--eval requires a value. See js --help."),
    (["--"], "js", "-- requires a value. See js --help."),
    (["eval"], "deno", "deno eval requires a value. See js --help."),
    (["run", "--"], "deno", "-- requires a value. See js --help."),
    (["run", "-e"], "deno", "-e requires a value. See js --help."),
    (["-e", "1", "-e", "2"], "js", "Unsupported or repeated argument `-e`. See js --help."),
    (["-e", "1", "--eval", "2"], "js",
     "Unsupported or repeated argument `--eval`. See js --help."),
    ([], "js", "Provide a script file, -e SOURCE, or - for stdin. See js --help."),
    (["-e", "1", "--"], "js", None),
    ([], "deno", "Use deno run FILE or deno eval SOURCE. See js --help."),
    (["task.js"], "deno", "Use deno run FILE or deno eval SOURCE. See js --help."),
    (["-x"], "js", "Unsupported or repeated argument `-x`. See js --help."),
])
def test_argument_errors_exit_2(js: JsRunner, argv: list[str], command: str,
                                message: str | None) -> None:
    result = js(*argv, command=command)
    if message is None:  # `--` after the source is known just ends option parsing
        assert (result.exit_code, result.stderr) == (0, "")
    else:
        assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"js: {message}\n")


@pytest.mark.parametrize(("argv", "command"), [
    (["--help"], "js"), (["-h"], "node"), (["--help"], "deno"), (["-h"], "deno"),
    (["run", "--help"], "deno"), (["-e", "1", "-h"], "js"),
])
def test_help_before_option_parsing_stops(js: JsRunner, argv: list[str], command: str) -> None:
    result = js(*argv, command=command)
    assert (result.exit_code, result.stdout, result.stderr) == (0, HELP_TEXT, "")


def test_help_after_the_entry_is_a_script_argument() -> None:
    line = parse_command_line(["task.js", "--help", "-e", "x"])
    assert (line.help, line.kind, line.source, line.args) == (
        False, "file", "task.js", ("--help", "-e", "x"))
    line = parse_command_line(["-e", "code", "first", "-h"])
    assert (line.kind, line.source, line.args) == ("eval", "code", ("first", "-h"))
    line = parse_command_line(["run", "-", "x"], "deno", stdin=b"")
    assert (line.kind, line.args) == ("stdin", ("x",))


def test_help_text_covers_section_5() -> None:
    for needle in ("js FILE [ARG...]", "js -- FILE [ARG...]", "js - [ARG...] < FILE",
                   "js -e SOURCE [ARG...]", "deno run FILE", "deno eval SOURCE",
                   "process.argv", "@tauritavern/runtime", "workspace.readText/writeText/exists/"
                   "listFiles", "context.worldInfo, context.variables, context.macro",
                   "macros.render(text)", "128 KiB per stream", "process.exitCode (integer 0-255",
                   "Bundle other\n  libraries into the skill", "(scripts/vendor/)",
                   "No Node/Deno APIs"):
        assert needle in HELP_TEXT
    assert HELP_TEXT.endswith(
        "Built-in modules: @tauritavern/runtime and the kit: @tauritavern/kit/dayjs,\n"
        "  es-toolkit, fast-xml-parser, marked, papaparse, slugify. Bundle other\n"
        "  libraries into the skill (scripts/vendor/). No Node/Deno APIs, npm,\n"
        "  TypeScript, network, timers or processes.\n")
    assert help_text(COMMAND_BUILTINS) == HELP_TEXT


def test_help_lists_a_module_group_the_way_section_5_shows_the_kit() -> None:
    names = ["dayjs", "es-toolkit", "fast-xml-parser", "marked", "papaparse", "slugify"]
    with_kit = BuiltinModules([BuiltinModule("@tauritavern/runtime"), *(
        BuiltinModule(f"@tauritavern/kit/{name}", source=lambda: "export {};", group="kit")
        for name in names)])
    assert with_kit.runtime_names == ("@tauritavern/runtime",)
    assert help_text(with_kit).endswith(
        "Exit: process.exitCode (integer 0-255, default 0); an uncaught error exits 1.\n"
        "Built-in modules: @tauritavern/runtime and the kit: @tauritavern/kit/dayjs,\n"
        "  es-toolkit, fast-xml-parser, marked, papaparse, slugify. Bundle other\n"
        "  libraries into the skill (scripts/vendor/). No Node/Deno APIs, npm,\n"
        "  TypeScript, network, timers or processes.\n")


def test_deno_run_continues_like_js(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/t.js", ARGV)
    result = js("run", "/scratch/t.js", "x", command="deno")
    assert json.loads(result.stdout) == ["deno", "/scratch/t.js", "x"]


# --- entries -------------------------------------------------------------------------------


def test_file_entry_resolves_against_cwd_and_normalizes(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/t.mjs", ARGV)
    result = js("../scratch/./t.mjs", "a", cwd="/output")
    assert json.loads(result.stdout) == ["js", "/scratch/t.mjs", "a"]
    result = js("../../../scratch/t.mjs", cwd="/output")
    assert json.loads(result.stdout) == ["js", "/scratch/t.mjs"]


@pytest.mark.parametrize("path", ["scratch\\t.js", "a\0b.js", "C:/scratch/t.js", "c:t.js",
                                  "/scratch/\ud800.js"])
def test_invalid_entry_paths(js: JsRunner, path: str) -> None:
    result = js(path)
    assert (result.exit_code, result.stderr) == (
        1, f"js: Invalid workspace path `{path}`; use / separators and workspace paths.\n")


def test_missing_and_hidden_entries_look_the_same(js: JsRunner) -> None:
    missing = js("task.js", cwd="/scratch")
    assert (missing.exit_code, missing.stdout, missing.stderr) == (
        1, "", "js: Cannot read `/scratch/task.js`: path not found. Check the directory with "
               "workspace.listFiles.\n")
    result = js("/input/hidden.js")
    assert (result.exit_code, result.stdout, result.stderr) == (
        1, "", "js: Cannot read `/input/hidden.js`: path not found. Check the directory with "
               "workspace.listFiles.\n")


def test_directory_entry(workspace: Path, js: JsRunner) -> None:
    (workspace / "scratch" / "dir.js").mkdir()
    assert js("/scratch/dir.js").stderr == (
        "js: Cannot load module `/scratch/dir.js`: it is a directory.\n")


#: A stdin module that leaves a trace when it runs.
WRITES = (b"import { workspace } from '@tauritavern/runtime';\n"
          b"workspace.writeText('scratch/ran.txt', 'x');\n")


@pytest.mark.parametrize(("argv", "stdin", "line"), [
    (["-"], b"\xc3\x28", "js: JavaScript source must be UTF-8.\n"),
    (["-"], WRITES + b"// \xc3\x28\n", "js: JavaScript source must be UTF-8.\n"),
    (["-"], b"x" * 131_073,
     "js: JavaScript stdin exceeds the command size limit; use a workspace script file.\n"),
    (["-"], WRITES.ljust(131_073, b"/"),
     "js: JavaScript stdin exceeds the command size limit; use a workspace script file.\n"),
    (["-"], None, "js: js - requires module source on stdin.\n"),
    (["--", "-", "arg"], None, "js: js - requires module source on stdin.\n"),
])
def test_acceptance_15_stdin_problems_are_argument_errors(
        workspace: Path, js: JsRunner, argv: list[str], stdin: bytes | None, line: str) -> None:
    before = tree(workspace)
    result = js(*argv, stdin=stdin)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", line)
    assert tree(workspace) == before
    assert_healthy(js)


def test_stdin_at_the_limit_and_the_empty_module(workspace: Path, js: JsRunner) -> None:
    exact = js("-", stdin=WRITES.ljust(131_072, b"/"))
    assert (exact.exit_code, exact.stderr) == (0, "")
    assert (workspace / "scratch" / "ran.txt").read_text() == "x"
    assert js("-", stdin=b"").exit_code == 0
    assert parse_command_line(["-"], stdin=b"1").stdin == b"1"


def test_acceptance_14_missing_values(js: JsRunner) -> None:
    for argv, command, line in ((["--"], "js", "js: -- requires a value. See js --help.\n"),
                                (["--eval"], "js",
                                 "js: --eval requires a value. See js --help.\n"),
                                (["eval"], "deno",
                                 "js: deno eval requires a value. See js --help.\n")):
        result = js(*argv, command=command)
        assert (result.exit_code, result.stdout, result.stderr) == (2, "", line)


def test_non_utf8_file_entry(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/latin1.js", b"console.log('caf\xe9')\n")
    result = js("/scratch/latin1.js")
    assert (result.exit_code, result.stderr) == (1, "js: JavaScript source must be UTF-8.\n")


# --- execution model, globals and console ------------------------------------------------------


def test_the_runner_never_calls_default_or_main(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/lib.js", "export default function () { console.log('called'); }\n"
                                       "export function main() { console.log('called'); }\n")
    result = js("/scratch/lib.js")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_only_console_and_process_are_added(js: JsRunner) -> None:
    names = "console.log(JSON.stringify(Object.getOwnPropertyNames(globalThis).sort()))"
    command = set(json.loads(js("-e", names).stdout))
    from tavernlab.js import SkillScriptRequest, run_skill_script

    legacy = set(run_skill_script(SkillScriptRequest(
        skill="g", entry="scripts/g.js", args={}, visible_roots=(), writable_roots=(),
        modules={"scripts/g.js": "export default () => Object.getOwnPropertyNames(globalThis)"},
    )).value)
    assert command - legacy == {"console", "process"}
    assert legacy <= command
    probe = ("console.log([typeof $fs, typeof require, typeof module, typeof Buffer, "
             "typeof setTimeout, typeof setInterval, typeof setImmediate, typeof fetch, "
             "typeof XMLHttpRequest, typeof window, typeof document, typeof TextEncoder, "
             "typeof TextDecoder, typeof atob, typeof btoa, typeof process.exit, "
             "typeof __tavernlab_host, typeof __tavernlab_emit, typeof __tavernlab_core, "
             "typeof __tavernlab_config].every(t => t === 'undefined'))")
    assert js("-e", probe).stdout == "true\n"
    assert js("-e", "console.log(eval('1 + 1'), new Function('return 3')())").stdout == "2 3\n"


def test_the_sandbox_internals_are_out_of_reach(js: JsRunner) -> None:
    source = ("const name = ['<tavernlab:', 'core>'].join('');\n"
              "const core = await import(name);\n"
              "console.log(core.takeInternals(), typeof core.workspace.readText);")
    assert js("-e", source).stdout == "undefined function\n"


def test_user_eval_frames_stay_in_the_stack(js: JsRunner) -> None:
    result = js("-e", "eval('(function f() { throw new Error(1); })()');")
    assert result.stderr == ("js: /<eval>: Error: 1\n    at f (<input>:1:27)\n"
                             "    at <eval> (<input>:1:36)\n"
                             "    at <anonymous> (/<eval>:1:1)\n")


def test_console_maps_levels_and_stringifies_arguments(js: JsRunner) -> None:
    source = ("console.log('a', 1, {}, [1, 2], null, undefined, true);"
              "console.info('i'); console.debug('d'); console.warn('w', {}); console.error('e');"
              "console.log(); console.log('\\ud800x');")
    result = js("-e", source)
    assert result.stdout == "a 1 [object Object] 1,2 null undefined true\ni\nd\n\n\ufffdx\n"
    assert result.stderr == "w [object Object]\ne\n"


def test_output_before_a_failure_stays_and_stack_names_module_files(
        workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/lib.js", "export function fail() {\n"
                                       "  throw new Error('boom');\n"
                                       "}\n")
    write(workspace, "scratch/task.js", "import { fail } from './lib.js';\n"
                                        "console.log('before');\n"
                                        "fail();\n")
    result = js("task.js", cwd="/scratch")
    assert (result.exit_code, result.stdout) == (1, "before\n")
    assert result.stderr == ("js: /scratch/task.js: Error: boom\n"
                             "    at fail (/scratch/lib.js:2:13)\n"
                             "    at <anonymous> (/scratch/task.js:3:1)\n")


def test_thrown_values_are_reported_with_string_conversion(js: JsRunner) -> None:
    assert js("-e", "throw {a: 1}").stderr == "js: /<eval>: [object Object]\n"
    assert js("-e", "throw 'plain'").stderr == "js: /<eval>: plain\n"
    assert js("-e", "throw undefined").stderr == "js: /<eval>: undefined\n"


def test_a_thrown_null_is_reported_as_the_memory_limit(js: JsRunner) -> None:
    # QuickJS throws null when it cannot allocate its out-of-memory error (see worker.py).
    assert js("-e", "throw null").stderr == f"js: /<eval>: {INTERRUPT_REASONS['memory']}\n"


def test_syntax_error_names_file_and_line(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/bad.js", "export const a = 1;\nlet = = 2;\n")
    result = js("-e", "import '/scratch/bad.js';")
    assert result.exit_code == 1
    assert result.stderr.startswith("js: /<eval>: SyntaxError: ")
    assert "/scratch/bad.js:2:" in result.stderr


def test_async_work_is_awaited(js: JsRunner) -> None:
    source = ("async function work(x) { await null; return x * 2; }\n"
              "console.log(await work(21));")
    assert js("-e", source).stdout == "42\n"


# --- bad input: the process is unharmed and nothing is written ---------------------------------


@pytest.mark.parametrize(("source", "reason"), [
    ("let a = []; while (true) a.push('x'.repeat(64) + a.length);", "memory"),
    ("function f() { const a = []; for (;;) a.push('x'.repeat(64) + a.length); }\nf();",
     "memory"),
    ("const o = {}; for (let i = 0; ; i++) o['k' + i] = i;", "memory"),
    ("const m = new Map(); await null; for (let i = 0; ; i++) m.set(i, { i });", "memory"),
    ("function f(n) { return f(n + 1) + 1; }\nf(0);", "stack"),
])
def test_memory_bomb_and_deep_recursion(workspace: Path, js: JsRunner, source: str,
                                        reason: str) -> None:
    before = tree(workspace)
    result = js("-e", source)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"js: /<eval>: {INTERRUPT_REASONS[reason]}\n")
    assert reason == "memory" or "    at f (/<eval>:1:" in result.stderr
    assert not result.timed_out
    assert tree(workspace) == before
    assert_healthy(js)


def test_ten_megabytes_of_console_output(workspace: Path, js: JsRunner) -> None:
    before = tree(workspace)
    result = js("-e", "const line = 'y'.repeat(1023);\n"
                      "for (let i = 0; i < 10240; i++) console.log(line);")
    assert result.exit_code == 1
    assert result.stdout == ("y" * 1023 + "\n") * 128
    assert result.stderr.startswith(f"js: /<eval>: Error: {OUTPUT_EXCEEDED}\n")
    assert tree(workspace) == before
    assert_healthy(js)


def test_a_single_line_over_the_cap(js: JsRunner) -> None:
    result = js("-e", "console.log('small'); console.error('z'.repeat(200000))")
    assert (result.exit_code, result.stdout) == (1, "small\n")
    assert result.stderr.startswith(f"js: /<eval>: Error: {LINE_EXCEEDED}\n")


def test_the_caps_can_be_caught_by_the_script(js: JsRunner) -> None:
    source = ("try { console.log('q'.repeat(200000)); } catch (e) { console.error(e.message); }\n"
              "process.exitCode = 4;")
    result = js("-e", source)
    assert (result.exit_code, result.stdout, result.stderr) == (4, "", LINE_EXCEEDED + "\n")


def test_earlier_stderr_is_trimmed_so_the_report_fits(js: JsRunner) -> None:
    source = ("for (let i = 0; i < 131; i++) console.error('e'.repeat(999));\n"
              "throw new Error('final');")
    result = js("-e", source)
    assert result.exit_code == 1
    assert len(result.stderr.encode()) <= OUTPUT_CAP
    assert result.stderr.endswith("js: /<eval>: Error: final\n    at <anonymous> (/<eval>:2:11)\n")
    assert result.stderr.startswith("e" * 999 + "\n")


def test_fit_failure_report_cuts_on_utf8_boundaries() -> None:
    report = "js: m: boom\n"
    assert fit_failure_report("ab", report, cap=100) == "ab" + report
    assert fit_failure_report("é" * 50, report, cap=20) == "éééé" + report
    assert fit_failure_report("", "x" * 50, cap=10) == "x" * 10


@pytest.mark.parametrize(("specifier", "message"), [
    ("fs", MODULE_NOT_AVAILABLE),
    ("../../outside.js", "Cannot import `../../outside.js` from `/scratch/task.js`: the path "
                         "escapes the workspace root."),
    ("/input/hidden.js", "Cannot find module `/input/hidden.js` imported from "
                         "`/scratch/task.js`."),
    ("./notes.txt", "`/scratch/notes.txt` must be an explicit .js or .mjs module path."),
])
def test_bad_imports(workspace: Path, js: JsRunner, specifier: str, message: str) -> None:
    write(workspace, "scratch/notes.txt", "not a module")
    write(workspace, "scratch/task.js", f"import {{ workspace }} from '@tauritavern/runtime';\n"
                                        f"workspace.writeText('scratch/x.txt', 'x');\n"
                                        f"import '{specifier}';\n")
    before = tree(workspace)
    result = js("/scratch/task.js")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == f"js: /scratch/task.js: {message}\n    at /scratch/task.js:3:8\n"
    assert tree(workspace) == before
    assert_healthy(js)


def test_non_utf8_imported_module(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/bad.js", b"export const x = '\xff';\n")
    result = js("-e", "import '/scratch/bad.js';")
    assert result.stderr == ("js: /<eval>: JavaScript source must be UTF-8.\n"
                             "    at /<eval>:1:8\n")


def test_dynamic_import_failure_is_catchable(js: JsRunner) -> None:
    source = ("try { await import('./missing.js'); } catch (e) { console.log(e.message); }\n"
              "try { await import('fs'); } catch (e) { console.log(e.message); }")
    result = js("-e", source, cwd="/scratch")
    assert result.exit_code == 0
    assert result.stdout == ("Cannot find module `/scratch/missing.js` imported from "
                             f"`/scratch/<eval>`.\n{MODULE_NOT_AVAILABLE}\n")


def test_import_attributes_are_rejected(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/data.js", "export default 1;")
    result = js("-e", "import d from './data.js' with { type: 'json' };", cwd="/scratch")
    assert result.stderr == ("js: /scratch/<eval>: Import attributes are not supported; import "
                             "a .js/.mjs module.\n    at /scratch/<eval>:1:15\n")


def test_acceptance_16_import_attributes_on_a_json_file(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/cfg.json", '{"a": 1}')
    result = js("-e", "import cfg from './cfg.json' with { type: 'json' };", cwd="/scratch")
    assert (result.exit_code, result.stdout) == (1, "")
    assert ("Import attributes are not supported; import a .js/.mjs module."
            in result.stderr)
    runtime = js("-e", "import { log } from '@tauritavern/runtime' with { type: 'js' };")
    assert runtime.stderr == ("js: /<eval>: Import attributes are not supported; import a "
                              ".js/.mjs module.\n    at /<eval>:1:21\n")


def test_acceptance_17_an_oversized_log_line(js: JsRunner) -> None:
    result = js("-e", "console.log('y'.repeat(200000))")
    assert (result.exit_code, result.stdout) == (1, "")
    assert ("JavaScript log line exceeds the output limit; write large content to a workspace "
            "file." in result.stderr)
    assert LINE_EXCEEDED == ("JavaScript log line exceeds the output limit; write large "
                             "content to a workspace file.")


def test_skill_scripts_import_from_the_skills_mount_path(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/vendor/marked.js", "export const marked = (s) => `<p>${s}</p>`;\n")
    write(workspace, "scratch/main.js", "import { marked } from './vendor/marked.js';\n"
                                        "console.log(marked(process.argv[2]));\n")
    result = js("/scratch/main.js", "hi")
    assert (result.exit_code, result.stdout) == (0, "<p>hi</p>\n")
