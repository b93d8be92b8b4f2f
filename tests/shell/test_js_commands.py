"""``js``/``node``/``deno`` inside the shell: cwd, stdin, arguments, exit status, deadline and
the shared input budget (docs/shell.md, docs/js-and-skills.md)."""

from __future__ import annotations

from .conftest import Workspace

TASK = """import { workspace, log } from '@tauritavern/runtime';
console.log(JSON.stringify(process.argv.slice(1)));
workspace.writeText('output/js.md', 'from js\\n');
log.info('diag');
"""


def test_js_runs_a_file_relative_to_the_shell_directory(ws: Workspace) -> None:
    (ws.dir / "scratch" / "task.js").write_text(TASK)
    result = ws.shell("js task.js a 'b c'", "/scratch")
    assert result.content == 'Exit code: 0\n["/scratch/task.js","a","b c"]\nstderr:\ndiag'
    assert ws.read("output/js.md") == "from js\n"
    assert result.resource_refs == ["output/js.md"]
    assert ws.scope.tracker.candidate == "output/js.md"


def test_js_reads_the_pipeline_stdin(ws: Workspace) -> None:
    (ws.dir / "scratch" / "task.js").write_text(TASK)
    piped = ws.shell("js - hello < /scratch/task.js; echo 'console.log(\"p\")' | node -")
    assert piped.stdout == '["-","hello"]\np\n'


def test_js_statuses_are_ordinary_exit_codes(ws: Workspace) -> None:
    failing = ws.shell("js -e 'process.exitCode = 3'")
    assert (failing.content, failing.error_code) == ("Exit code: 3", "workspace.shell_exit")
    bad_args = ws.shell("js --bogus")
    assert bad_args.content == ("Exit code: 2\njs: Unsupported or repeated argument `--bogus`. "
                                "See js --help.")
    thrown = ws.shell("deno eval 'throw new Error(\"x\")' || echo handled")
    assert thrown.exit_code == 0
    assert thrown.stdout == "handled\n"


def test_an_endless_js_loop_times_out_the_whole_call(ws: Workspace) -> None:
    result = ws.shell("js -e 'while (true) {}'; echo after > /scratch/after.txt", deadline_s=1.0)
    assert result.content.splitlines()[0] == "Command timed out."
    assert result.error_code == "workspace.shell_timeout"
    assert not ws.exists("scratch/after.txt")


def test_js_and_the_shell_share_the_input_budget(ws: Workspace) -> None:
    (ws.dir / "scratch" / "a.bin").write_bytes(b"a" * (5 * 1024 * 1024))
    (ws.dir / "scratch" / "b.txt").write_text("b" * (4 * 1024 * 1024))
    result = ws.shell("wc -c < /scratch/a.bin; js -e \"import { workspace } from "
                      "'@tauritavern/runtime'; workspace.readText('scratch/b.txt')\"")
    assert result.exit_code == 1
    assert result.stdout == f"{5 * 1024 * 1024}\n"
    assert "Shell input budget exceeded" in result.stderr
