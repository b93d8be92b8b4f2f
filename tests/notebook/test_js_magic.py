"""``%%js`` and ``%js`` in IPython's testing shell: every option, the cell's own line numbers in
stack traces, errors, and bad arguments."""

from __future__ import annotations

import json

from IPython.core.error import UsageError
from notebook_support import Notebook

from tavernlab.js import CommandResult
from tavernlab.notebook import JSError


def test_a_cell_runs_in_the_sandbox_with_its_output_in_the_cell(nb: Notebook) -> None:
    ran = nb.cell("%%js\nconsole.log('hi', 1 + 1)\nconsole.error('careful')")
    assert ran.error is None
    assert ran.stdout == "hi 2\n"
    assert ran.stderr == "careful\n"
    assert ran.value is None  # the output was shown as it came; nothing to display twice


def test_args_reach_process_argv_unchanged(nb: Notebook) -> None:
    ran = nb.cell("%%js a $x ${y} 'two words' -- -b\nconsole.log(JSON.stringify(process.argv))")
    assert json.loads(ran.stdout) == ["js", "a", "$x", "${y}", "two words", "--", "-b"]
    leading_dash = nb.cell("%%js -- -v --flag\nconsole.log(JSON.stringify(process.argv))")
    assert json.loads(leading_dash.stdout) == ["js", "-v", "--flag"]


def test_a_stack_trace_points_at_the_cells_own_lines(nb: Notebook) -> None:
    number = nb.next_cell
    ran = nb.cell("%%js\nconst x = 1;\nfunction f() {\n  throw new TypeError('boom ' + x);\n}"
                  "\nf();")
    error = ran.error
    assert isinstance(error, JSError)
    assert error.code == "notebook.js_exit"
    assert error.exit_code == 1
    assert error.message == "exit status 1: TypeError: boom 1"
    name = f"<cell {number}>"
    assert error._render_traceback_() == [
        "notebook.js_exit: exit status 1: TypeError: boom 1",
        f"  at f ({name}:4:33)",
        "    4 |   throw new TypeError('boom ' + x);",
        "      |                                 ^",
        f"  at <anonymous> ({name}:6:1)",
        "    6 | f();",
        "      | ^",
    ]
    # the error is shown once: the traceback, not also the sandbox's report on stderr; the
    # traceback has no Python frame
    assert ran.stderr == ""
    assert error.stderr == (f"js: {name}: TypeError: boom 1\n    at f ({name}:4:33)\n"
                            f"    at <anonymous> ({name}:6:1)\n")
    assert "Traceback" not in ran.stdout and "tavernlab" not in ran.stdout
    assert ran.stdout.startswith("notebook.js_exit: exit status 1: TypeError: boom 1\n")


def test_process_exit_says_to_set_process_exit_code(nb: Notebook) -> None:
    ran = nb.cell("%%js\nconsole.log('a');\nprocess.exit(2)")
    assert isinstance(ran.error, JSError)
    assert ran.error.message == (
        "exit status 1: TypeError: not a function (process.exit() is not supported in the "
        "sandbox; set process.exitCode = N and let the script end to exit with status N)")
    # another "not a function" says nothing about process.exit
    other = nb.cell("%%js\nconst f = 1;\nf()")
    assert isinstance(other.error, JSError)
    assert other.error.message == "exit status 1: TypeError: not a function"


def test_out_keeps_the_result_even_when_the_script_fails(nb: Notebook) -> None:
    ran = nb.cell("%%js --out r\nconsole.log('partial'); process.exitCode = 3")
    assert isinstance(ran.error, JSError) and ran.error.message == "exit status 3"
    assert nb.ns["r"] == CommandResult(3, "partial\n", "")


def test_no_raise_reports_the_status_in_one_line_instead(nb: Notebook) -> None:
    ran = nb.cell("%%js --no-raise\nprocess.exitCode = 4")
    assert ran.error is None
    assert ran.stderr == "notebook.js_exit: exit status 4\n"


def test_raise_on_error_off_for_every_cell(nb: Notebook) -> None:
    nb.cell("%config TavernMagics.raise_on_error = False")
    ran = nb.cell("%%js\nthrow new Error('x')")
    assert ran.error is None
    # the sandbox's report says what failed; the note after it only the status
    name = f"<cell {nb.next_cell - 1}>"
    assert ran.stderr.startswith(f"js: {name}: Error: x\n    at ")
    assert ran.stderr.endswith("\nnotebook.js_exit: exit status 1\n")
    assert ran.stderr.count("Error: x") == 1


def test_quiet_shows_nothing_and_out_still_has_it(nb: Notebook) -> None:
    ran = nb.cell("%%js --quiet --out r\nconsole.log('hidden'); console.error('also')")
    assert (ran.stdout, ran.stderr) == ("", "")
    assert nb.ns["r"] == CommandResult(0, "hidden\n", "also\n")


def test_stream_off_shows_the_output_when_the_job_ends(nb: Notebook) -> None:
    nb.cell("%config TavernMagics.stream = False")
    ran = nb.cell("%%js\nconsole.log('a'); console.error('b'); console.log('c')")
    assert (ran.stdout, ran.stderr) == ("a\nc\n", "b\n")


def test_cwd_stdin_and_command(nb: Notebook) -> None:
    nb.cell("%ws_shell mkdir -p /scratch/lib && echo 'export const v = 7;' > /scratch/lib/v.js")
    ran = nb.cell("%%js --cwd /scratch --command node\nimport { v } from './lib/v.js';\n"
                  "console.log(v, process.argv[0])")
    assert ran.stdout == "7 node\n"
    nb.ns["src"] = "console.log('from stdin', process.argv.slice(1).join(','))"
    piped = nb.cell("%js --stdin src - x y")
    assert piped.stdout == "from stdin -,x,y\n"
    nb.ns["bad"] = "throw new RangeError('from stdin')"
    failed = nb.cell("%js --cwd /scratch --stdin bad -")
    assert isinstance(failed.error, JSError)
    assert failed.error.message == "exit status 1: RangeError: from stdin"
    inline = nb.cell("%js -- -e \"throw new Error('inline')\"")
    assert isinstance(inline.error, JSError)
    assert inline.error.message == "exit status 1: Error: inline"


def test_save_writes_the_cell_then_runs_the_file_with_cell_lines(nb: Notebook) -> None:
    number = nb.next_cell
    ran = nb.cell("%%js --save scratch/task.js one\nconsole.log(process.argv.join(' '))\n"
                  "throw new Error('late')")
    assert ran.stdout.startswith("js /scratch/task.js one\nnotebook.js_exit: ")
    assert isinstance(ran.error, JSError)
    assert ran.error._render_traceback_() == [
        "notebook.js_exit: exit status 1: Error: late",
        f"  at <anonymous> (<cell {number}>:3:11 (/scratch/task.js:2:11))",
        "    3 | throw new Error('late')",
        "      |           ^",
    ]
    saved = nb.cell("%js /scratch/task.js again")
    assert saved.stdout.startswith("js /scratch/task.js again\n")
    assert isinstance(saved.error, JSError)
    # the line form has no cell to map to: the frame stays as the file names it
    assert saved.error._render_traceback_() == [
        "notebook.js_exit: exit status 1: Error: late", "  at <anonymous> (/scratch/task.js:2:11)"]


def test_run_var_selects_another_run(nb: Notebook) -> None:
    nb.cell("other = %tavern run new --chat other --background")
    nb.cell("%tavern run new --chat main")
    nb.cell("%%js --run other\nimport { workspace } from '@tauritavern/runtime';\n"
            "workspace.writeText('scratch/mark.txt', 'x')")
    other = nb.ns["other"]
    assert other.files("scratch") == ["scratch/mark.txt"]
    assert nb.cell("%tavern tree scratch --static").value.children == []


def test_bad_arguments_are_one_line_usage_errors(nb: Notebook) -> None:
    cases = {
        "%%js --bogus\n1": "%%js: unrecognized arguments: --bogus (arguments for the script "
                          "go after --: %%js -- --bogus; or --help for the options)",
        "%%js --cwd / -n 3\n1": "%%js: unrecognized arguments: -n (arguments for the "
                                "script go after --: %%js -- -n 3; or --help for the "
                                "options)",
        "%%js --command python\n1": "%%js: argument --command: invalid choice: 'python' "
                                    "(choose from 'js', 'node', 'deno')",
        "%%js --run missing\n1": "%%js: --run missing: no variable 'missing' in the namespace",
        "%%js --run n\n1": "%%js: --run n: expected a Run, got int",
        "%%js --stdin n\n1": "%%js: --stdin n: expected str or bytes, got int",
        "%%js --out 2x\n1": "%%js: --out 2x: not a Python identifier",
        "%js": "%js: give a script to run (%js FILE ARG...), or use %%js",
        "%js --save x.js f.js": "%js: --save needs the cell form %%js",
        "%%js 'unbalanced\n1": "%%js: No closing quotation",
    }
    nb.ns["n"] = 5
    for source, message in cases.items():
        ran = nb.cell(source)
        assert isinstance(ran.error, UsageError), source
        assert str(ran.error) == message
        assert ran.stderr == f"UsageError: {message}\n"


def test_each_cell_that_uses_the_run_is_one_round(nb: Notebook) -> None:
    nb.cell("%%js\n1")
    nb.cell("%%js\n2")
    nb.cell("%ws_shell true\n%ws_shell true")
    rounds = [e.payload.round for e in nb.cell("%tavern events --type round_ended").value]
    assert rounds == [1, 2]


def test_no_raise_error_is_accepted_as_ipythons_script_magic_spells_it(nb: Notebook) -> None:
    ran = nb.cell("%%js --no-raise-error\nprocess.exitCode = 4")
    assert ran.error is None
    assert ran.stderr == "notebook.js_exit: exit status 4\n"


def test_help_ends_with_examples_that_run(nb: Notebook) -> None:
    shown = nb.cell("%%js?").stdout
    assert "--no-raise, --no-raise-error" in shown
    examples = shown.split("Examples\n--------\n", 1)[1]
    assert "%%js Mika\n" in examples and "%js /output/hello.js Mika" in examples
    first = nb.cell("%%js --save /output/hello.js Mika\n"
                    "console.log(`Hello, ${process.argv.at(-1)}!`)")
    assert (first.error, first.stdout) == (None, "Hello, Mika!\n")
    again = nb.cell("%js /output/hello.js Mika")
    assert (again.error, again.stdout) == (None, "Hello, Mika!\n")
