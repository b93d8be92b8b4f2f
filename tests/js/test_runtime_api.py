"""``@tauritavern/runtime`` (V5), docs/js-and-skills.md."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tavernlab.js import InputBudget
from tavernlab.skills import BoundSkillsMount, SkillBinding
from tavernlab.skills._index import GLOBAL_SCOPE
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.scope._scope import Policy
from tavernlab.workspace.storage import WorkspaceFs

from .conftest import JsRunner, frozen, write

RUNTIME = "import { workspace, context, macros, log } from '@tauritavern/runtime';\n"


def run_module(js: JsRunner, body: str, **kwargs: object):  # type: ignore[no-untyped-def]
    """Run ``body`` after the runtime import as an eval module."""
    return js("-e", RUNTIME + body, **kwargs)


def test_acceptance_1_write_creates_parents_and_reads_back(workspace: Path,
                                                           js: JsRunner) -> None:
    result = run_module(js, "workspace.writeText('scratch/a/b.txt', 'x');\n"
                            "console.log(workspace.readText('scratch/a/b.txt'));")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "x\n", "")
    assert (workspace / "scratch" / "a").is_dir()
    assert (workspace / "scratch" / "a" / "b.txt").read_text() == "x"


def test_acceptance_2_absolute_paths_are_rejected(js: JsRunner) -> None:
    result = run_module(js, "workspace.readText('/scratch/a/b.txt');")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "js: /<eval>: Error: Invalid data: Workspace path must be relative\n")


def test_acceptance_2_exists_throws_for_invalid_paths(js: JsRunner) -> None:
    body = ("for (const p of ['/output', '../x.md']) {\n"
            "  try { console.log(workspace.exists(p)); } catch (e) { console.log(e.message); }\n"
            "}")
    assert run_module(js, body).stdout == ("Invalid data: Workspace path must be relative\n"
                                           "Invalid data: Workspace path cannot contain ..\n")
    uncaught = run_module(js, "workspace.exists('/output');")
    assert (uncaught.exit_code, uncaught.stdout) == (1, "")
    assert uncaught.stderr.startswith(
        "js: /<eval>: Error: Invalid data: Workspace path must be relative\n")


@pytest.mark.parametrize(("path", "message"), [
    ("", "Invalid data: Workspace path cannot be empty"),
    ("a\\u0000b", "Invalid data: Workspace path cannot contain NUL"),
    ("C:/x", "Invalid data: Workspace path cannot use a Windows drive prefix"),
    ("scratch/../x", "Invalid data: Workspace path cannot contain .."),
])
def test_every_function_parses_its_path_first(js: JsRunner, path: str, message: str) -> None:
    calls = ["workspace.readText(p)", "workspace.writeText(p, 'x')", "workspace.exists(p)",
             "workspace.listFiles(p)"]
    body = (f"const p = '{path}';\n"
            f"for (const f of [{', '.join('() => ' + c for c in calls)}]) {{\n"
            "  try { f(); console.log('no error'); } catch (e) { console.log(e.message); }\n"
            "}")
    assert run_module(js, body).stdout.splitlines() == [message] * 4


def test_acceptance_7_messages_use_the_shell_form_of_the_path(workspace: Path,
                                                              js: JsRunner) -> None:
    write(workspace, "scratch/raw.bin", b"\xff\xfe")
    write(workspace, "scratch/note.txt", "file")
    body = ("for (const f of [() => workspace.readText('scratch/none.md'),\n"
            "                 () => workspace.readText('scratch/raw.bin'),\n"
            "                 () => workspace.writeText('scratch/note.txt/inner.md', 'x'),\n"
            "                 () => workspace.readText('scratch/./none.md'),\n"
            "                 () => workspace.listFiles('scratch/none')]) {\n"
            "  try { f(); } catch (e) { console.log(e.message); }\n"
            "}")
    assert run_module(js, body).stdout.splitlines() == [
        "Cannot read `/scratch/none.md`: path not found. Check the directory with "
        "workspace.listFiles.",
        "`/scratch/raw.bin` is not UTF-8 text.",
        "Parent of `/scratch/note.txt/inner.md` is not a directory.",
        "Cannot read `/scratch/none.md`: path not found. Check the directory with "
        "workspace.listFiles.",
        "Cannot list `/scratch/none`: path not found. Check the directory with "
        "workspace.listFiles.",
    ]


def test_acceptance_3_hidden_paths_do_not_exist_and_skills_are_read_only(
        workspace: Path, js: JsRunner) -> None:
    result = run_module(js, "console.log(workspace.exists('input/prompt_snapshot.json'));\n"
                            "workspace.writeText('skills/x.md', '');")
    assert (result.exit_code, result.stdout) == (1, "false\n")
    assert result.stderr.startswith(
        "js: /<eval>: Error: `skills/x.md` is not writable for this task.\n")
    assert not (workspace / "skills").exists()


def test_acceptance_4_list_files(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/a/b.txt", "x")
    result = run_module(js, "console.log(JSON.stringify(workspace.listFiles()));\n"
                            "console.log(JSON.stringify(workspace.listFiles('scratch')));")
    roots, scratch = result.stdout.splitlines()
    assert json.loads(roots) == ["output", "persist", "plan", "scratch", "skills", "summaries",
                                 "tool-results"]
    assert json.loads(scratch) == ["a/b.txt"]


def test_list_files_never_drops_a_planted_node(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/a.txt", "x")
    os.mkfifo(workspace / "scratch" / "pipe")
    result = run_module(js, "try { workspace.listFiles('scratch') } catch (e) "
                            "{ console.log(e.message) }")
    assert result.stdout == "workspace supports regular files and directories\n"


def test_acceptance_5_session_run_has_no_host_context(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/n.txt", "note")
    body = ("console.log(workspace.readText('scratch/n.txt'));\n"
            "for (const field of ['worldInfo', 'variables', 'macro']) {\n"
            "  try { context[field]; } catch (e) { console.log(e.message); }\n"
            "}\n"
            "context.worldInfo;")
    result = run_module(js, body, context=frozen(None))
    assert result.exit_code == 1
    assert result.stdout == ("note\n"
                             "context.worldInfo is unavailable for this task.\n"
                             "context.variables is unavailable for this task.\n"
                             "context.macro is unavailable for this task.\n")
    assert result.stderr.startswith(
        "js: /<eval>: Error: context.worldInfo is unavailable for this task.\n")


def test_acceptance_6_macros_render_uses_frozen_values(js: JsRunner) -> None:
    result = run_module(js, "console.log(macros.render('{{char}} meets {{user}}'));")
    assert result.stdout == "Frozen Alice meets Bob\n"


# --- workspace details ----------------------------------------------------------------------


def test_read_text_errors(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/bin.dat", b"\xff\xfe")
    body = ("for (const p of ['scratch/missing.txt', 'scratch/bin.dat', 'input/prompt_snapshot"
            ".json', 'scratch']) {\n"
            "  try { workspace.readText(p); } catch (e) { console.log(e.message); }\n"
            "}")
    result = run_module(js, body)
    assert result.stdout.splitlines() == [
        "Cannot read `/scratch/missing.txt`: path not found. Check the directory with "
        "workspace.listFiles.",
        "`/scratch/bin.dat` is not UTF-8 text.",
        "`input/prompt_snapshot.json` is not readable for this task.",
        "workspace path `scratch` is a directory",
    ]


def test_write_text_under_a_file_fails(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/f.txt", "file")
    result = run_module(js, "workspace.writeText('scratch/f.txt/x.txt', 'y');")
    assert result.stderr.startswith(
        "js: /<eval>: Error: Parent of `/scratch/f.txt/x.txt` is not a directory.\n")
    assert (workspace / "scratch" / "f.txt").read_text() == "file"


def test_writes_are_unchecked_immediate_and_tracked(workspace: Path, js: JsRunner,
                                                    scope: ScopedWorkspaceFs) -> None:
    write(workspace, "output/main.md", "old")
    result = run_module(js, "workspace.writeText('output/main.md', 'new');\n"
                            "workspace.writeText('scratch/data.json', '{}');\n"
                            "throw new Error('late');")
    assert result.exit_code == 1
    assert (workspace / "output" / "main.md").read_text() == "new"
    assert scope.tracker.candidate == "output/main.md"
    assert scope.tracker.touched == {"output/main.md", "scratch/data.json"}


def test_exists_never_throws_for_valid_paths(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/a/b.txt", "x")
    body = ("console.log(JSON.stringify(['scratch/a/b.txt', 'scratch/a', 'scratch/none', "
            "'input', 'input/prompt_snapshot.json', 'run.json', 'skills', 'skills/none']"
            ".map(p => workspace.exists(p))));")
    assert run_module(js, body).stdout == "[true,true,false,false,false,false,true,false]\n"


def test_list_files_is_recursive_sorted_and_files_only(workspace: Path, js: JsRunner) -> None:
    for name in ("z.txt", "a/y.txt", "a/b/x.txt", "m.md"):
        write(workspace, f"output/{name}", name)
    (workspace / "output" / "empty").mkdir()
    result = run_module(js, "console.log(JSON.stringify(workspace.listFiles('output')));")
    assert json.loads(result.stdout) == ["a/b/x.txt", "a/y.txt", "m.md", "z.txt"]


def test_list_files_errors(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/f.txt", "x")
    body = ("for (const p of ['scratch/none', 'scratch/f.txt', 'input']) {\n"
            "  try { workspace.listFiles(p); } catch (e) { console.log(e.message); }\n"
            "}")
    assert run_module(js, body).stdout.splitlines() == [
        "Cannot list `/scratch/none`: path not found. Check the directory with "
        "workspace.listFiles.",
        "Cannot list `/scratch/f.txt`: it is not a directory.",
        "`input` is not readable for this task.",
    ]


def test_list_files_over_4096_entries(workspace: Path, js: JsRunner) -> None:
    big = workspace / "scratch" / "big"
    big.mkdir()
    for i in range(4097):
        os.close(os.open(big / f"{i}.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    result = run_module(js, "workspace.listFiles('scratch');")
    assert result.stderr.startswith("js: /<eval>: Error: Directory listing exceeds 4096 "
                                    "entries; choose a narrower directory.\n")
    (big / "0.txt").unlink()
    result = run_module(js, "console.log(workspace.listFiles('scratch/big').length);")
    assert result.stdout == "4096\n"


def test_arguments_must_be_strings(js: JsRunner) -> None:
    body = ("for (const f of [() => workspace.readText(1), () => workspace.writeText('scratch/x',"
            " 2), () => macros.render(null)]) {\n"
            "  try { f(); } catch (e) { console.log(e.name + ': ' + e.message); }\n"
            "}")
    assert run_module(js, body).stdout.splitlines() == [
        "TypeError: path must be a string", "TypeError: text must be a string",
        "TypeError: text must be a string"]


def test_read_text_bytes_count_toward_the_input_budget(workspace: Path,
                                                       js: JsRunner) -> None:
    write(workspace, "scratch/big.txt", "b" * 5000)
    budget = InputBudget(limit=8000)
    body = ("console.log(workspace.readText('scratch/big.txt').length);\n"
            "workspace.readText('scratch/big.txt');")
    result = js("-e", RUNTIME + body, budget=budget)
    assert result.stdout == "5000\n"
    assert "Error: Shell input budget exceeded" in result.stderr
    assert budget.used == len((RUNTIME + body).encode()) + 5000


# --- context, macros and log ------------------------------------------------------------


def test_context_keeps_raw_json_types_and_is_a_private_copy(js: JsRunner) -> None:
    body = ("const v = context.variables;\n"
            "console.log(JSON.stringify([v.local.score, v.local.ratio, v.local.name, "
            "v.local.flags, v.local.nested, v.global.theme, v.local.missing === undefined]));\n"
            "v.local.score = 99;\n"
            "console.log(context.variables.local.score);\n"
            "const e = context.worldInfo.entries;\n"
            "console.log(JSON.stringify(e.map(x => [x.ref, x.constant, x.position ?? null])));\n"
            "console.log(context.macro.names.char, typeof context.macro.chat.lastMessageId, "
            "context.macro.chat.lastMessageId);")
    result = run_module(js, body)
    lines = result.stdout.splitlines()
    assert json.loads(lines[0]) == [3, 1.5, "Ann", [True, None], {"k": "v"}, "dark", True]
    assert lines[1] == "99"
    assert json.loads(lines[2]) == [["worldinfo:lore#1", True, "before"],
                                    ["worldinfo:lore#2", False, None]]
    assert lines[3] == "Frozen Alice string 7"


def test_log_writes_to_stderr_like_console(js: JsRunner) -> None:
    result = run_module(js, "log.log('a', 1); log.info({}); log.warn('w'); log.error('e');"
                            " log.debug([1, 2]); console.log('out');")
    assert (result.stdout, result.stderr) == ("out\n", "a 1\n[object Object]\nw\ne\n1,2\n")


def test_log_shares_the_stderr_cap(js: JsRunner) -> None:
    result = run_module(js, "for (let i = 0; ; i++) log.info('l'.repeat(999));")
    assert result.exit_code == 1
    assert "JavaScript output exceeds 131072 bytes." in result.stderr
    assert len(result.stderr.encode()) <= 131072


def test_macros_render_input_limit(js: JsRunner) -> None:
    result = run_module(js, "macros.render('a'.repeat(16 * 1024 * 1024 + 1));")
    assert result.exit_code == 1
    assert "macro input exceeds 16777216 bytes" in result.stderr


# --- skills mount --------------------------------------------------------------------------


@pytest.fixture
def skilled_scope(tmp_path: Path, workspace: Path) -> ScopedWorkspaceFs:
    """The default view with a bound skill ``style`` whose script imports a vendored lib."""
    package = tmp_path / "packages" / "style"
    write(package, "SKILL.md", "---\nname: style\ndescription: Style.\n---\nFor {{char}}.\n")
    write(package, "scripts/run.js",
          "import { workspace } from '@tauritavern/runtime';\n"
          "import { shout } from './vendor/shout.js';\n"
          "// {{char}} stays raw in scripts\n"
          "console.log(shout(workspace.readText('skills/style/SKILL.md').trim()));\n"
          "console.log(JSON.stringify(process.argv.slice(2)));\n")
    write(package, "scripts/vendor/shout.js", "export const shout = (s) => s.toUpperCase();\n")
    binding = SkillBinding("style", "Style.", GLOBAL_SCOPE, package, "0" * 64)
    mount = BoundSkillsMount([binding], frozen().macros)
    return ScopedWorkspaceFs(WorkspaceFs(workspace), Policy.from_profile(), skills=mount)


def test_skill_scripts_run_from_the_read_only_mount(skilled_scope: ScopedWorkspaceFs) -> None:
    from tavernlab.js import run_js_command

    result = run_js_command(["/skills/style/scripts/run.js", "--flag", "x y"],
                            scope=skilled_scope, context=frozen())
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == ("---\nNAME: STYLE\nDESCRIPTION: STYLE.\n---\nFOR FROZEN ALICE.\n"
                             '["--flag","x y"]\n')
    relative = run_js_command(["scripts/run.js"], scope=skilled_scope, context=frozen(),
                              cwd="/skills/style")
    assert relative.exit_code == 0
    written = run_js_command(["-e", RUNTIME + "workspace.writeText('skills/style/x.js', '')"],
                             scope=skilled_scope, context=frozen())
    assert "`skills/style/x.js` is not writable for this task." in written.stderr


# --- the API's construction -------------------------------------------------------------


def test_the_api_ignores_globals_a_module_replaced_before_it(workspace: Path,
                                                             js: JsRunner) -> None:
    # The API module is evaluated after the modules the entry imports before it: it must not
    # depend on anything those could replace.
    write(workspace, "scratch/patch.js",
          "Object.defineProperty(Object.prototype, 'info', { set() { throw new Error('set'); },"
          " configurable: true });\n"
          "Object.prototype.get = 1;\n"
          "Object.freeze = () => { throw new Error('freeze'); };\n"
          "Object.defineProperty = () => { throw new Error('defineProperty'); };\n"
          "JSON.parse = () => { throw new Error('parse'); };\n"
          "String.prototype.toWellFormed = () => 'patched';\n"
          "Array.prototype[Symbol.iterator] = function* () { throw new Error('iterate'); };\n")
    write(workspace, "scratch/main.js",
          "import './patch.js';\n" + RUNTIME +
          "workspace.writeText('scratch/p.txt', 'x\\ud800');\n"
          "console.log(workspace.readText('scratch/p.txt'), workspace.exists('scratch/p.txt'));\n"
          "console.log(Object.isFrozen(workspace), Object.isFrozen(log), "
          "Object.isFrozen(context), Object.keys(log).join());\n"
          "log.info('i', 1);\n"
          "try { workspace.readText(1); } catch (e) { console.log(e.name, e.message); }\n"
          "console.log(context.variables.local.score);\n")
    result = js("/scratch/main.js")
    assert (result.exit_code, result.stderr) == (0, "i 1\n")
    assert result.stdout == ("x\ufffd true\ntrue true true log,info,warn,error,debug\n"
                             "TypeError path must be a string\n3\n")


def test_internal_parts_are_handed_out_once_and_raw_calls_are_checked(js: JsRunner) -> None:
    source = ("const start = await import(['<tavernlab:', 'start>'].join(''));\n"
              "console.log(start.take('job'));\n"
              "const { host } = start.take('runtime');\n"
              "console.log(start.take('runtime'));\n"
              "for (const args of [['readText', 1, null], ['writeText', 'scratch/x', null],\n"
              "                    ['listFiles', null, 2], ['nope', 'a', 'b'], [{}, 'a', 'b']]) {\n"
              "  console.log(JSON.stringify(host(...args)));\n"
              "}\n"
              "console.log(JSON.stringify(host('exists', 'scratch/none.txt', null)));\n")
    result = js("-e", source)
    refused = '[false,"TypeError","invalid runtime call"]'
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.splitlines() == ["undefined", "undefined", *[refused] * 5,
                                          "[true,false]"]
    assert js("-e", RUNTIME + "console.log(typeof workspace.readText)").stdout == "function\n"
