"""Output streaming (``on_output``) and named eval modules (``eval_name``)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from tavernlab.cancel import CancelToken
from tavernlab.js._output import OutputStream

from .conftest import JsRunner, write

RUNTIME = "import { workspace, log } from '@tauritavern/runtime';\n"


class Recorder:
    """An ``on_output`` callback that keeps every chunk and can react to one."""

    def __init__(self, workspace: Path | None = None) -> None:
        self.chunks: list[tuple[OutputStream, str]] = []
        self.workspace = workspace

    def __call__(self, stream: OutputStream, text: str) -> None:
        self.chunks.append((stream, text))
        if self.workspace is not None and text == "first\n":
            (self.workspace / "scratch" / "go.txt").write_text("go")


def test_the_first_chunk_arrives_while_the_script_still_runs(workspace: Path,
                                                             js: JsRunner) -> None:
    # The script prints, then busy-loops for up to a second waiting for a file that only the
    # callback creates when it receives that first line: "released" proves the chunk reached
    # the caller before the job ended.
    source = (RUNTIME + "console.log('first');\n"
              "const end = Date.now() + 1000;\n"
              "while (Date.now() < end && !workspace.exists('scratch/go.txt')) {}\n"
              "console.log(workspace.exists('scratch/go.txt') ? 'released' : 'not streamed');")
    recorder = Recorder(workspace)
    result = js("-e", source, on_output=recorder)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "first\nreleased\n", "")
    assert recorder.chunks == [("stdout", "first\n"), ("stdout", "released\n")]


def test_output_of_a_script_that_only_computes_still_streams(js: JsRunner) -> None:
    # No capability call follows the first line: the parent takes it from the worker's output
    # pipe on its own (at most OUTPUT_DELAY after the job started), while the script still
    # spins for a second; a chunk held until the end would arrive after the job returned.
    source = ("console.log('first');\n"
              "const end = Date.now() + 1000;\nwhile (Date.now() < end) {}\n"
              "console.log('second');")
    arrivals: list[tuple[str, float]] = []

    def record(stream: OutputStream, text: str) -> None:
        arrivals.append((text, time.monotonic()))

    result = js("-e", source, on_output=record)
    ended = time.monotonic()
    assert (result.exit_code, result.stdout) == (0, "first\nsecond\n")
    assert [text for text, _ in arrivals] == ["first\n", "second\n"]
    assert ended - arrivals[0][1] > 0.5  # "first" reached the caller long before the end


def test_many_chunks_and_calls_interleave_in_order(js: JsRunner) -> None:
    # Enough console output to fill the output pipe several times over, interleaved with
    # log calls that travel on the socket: every chunk arrives once, in the script's order.
    source = (RUNTIME + "for (let i = 0; i < 300; i++) {\n"
              "  console.log(String(i).padStart(200, '.'));\n"
              "  if (i % 50 === 0) log.warn('w' + i);\n}\nconsole.error('end');")
    recorder = Recorder()
    result = js("-e", source, on_output=recorder)
    expected: list[tuple[OutputStream, str]] = []
    for i in range(300):
        expected.append(("stdout", str(i).rjust(200, ".") + "\n"))
        if i % 50 == 0:
            expected.append(("stderr", f"w{i}\n"))
    expected.append(("stderr", "end\n"))
    assert recorder.chunks == expected
    assert result.exit_code == 0
    assert result.stdout == "".join(text for stream, text in expected if stream == "stdout")


def test_output_before_a_kill_is_delivered(js: JsRunner) -> None:
    # A pure CPU loop cannot be stopped from outside: the cancel kills the worker. What it
    # printed before, and the cancel report after it, both reach the caller, in that order.
    token = CancelToken()
    chunks: list[tuple[OutputStream, str]] = []

    def record(stream: OutputStream, text: str) -> None:
        chunks.append((stream, text))
        if text == "before\n":
            threading.Timer(0.05, token.cancel).start()

    result = js("-e", "console.log('before');\nfor (;;) {}", on_output=record, token=token)
    assert result.cancelled and result.stdout == "before\n"
    assert chunks == [("stdout", "before\n"), ("stderr", result.stderr)]


def test_chunks_keep_the_scripts_order_across_streams(js: JsRunner) -> None:
    source = (RUNTIME + "console.log('a'); console.error('b'); log.info('c', 1);\n"
              "console.log('d');\nthrow new Error('e');")
    recorder = Recorder()
    result = js("-e", source, on_output=recorder)
    report = "js: /<eval>: Error: e\n    at <anonymous> (/<eval>:4:11)\n"
    assert recorder.chunks == [("stdout", "a\n"), ("stderr", "b\n"), ("stderr", "c 1\n"),
                               ("stdout", "d\n"), ("stderr", report)]
    assert (result.exit_code, result.stdout, result.stderr) == (1, "a\nd\n", "b\nc 1\n" + report)


def test_help_and_argument_errors_are_streamed_too(js: JsRunner) -> None:
    recorder = Recorder()
    result = js("--bogus", on_output=recorder)
    assert recorder.chunks == [("stderr", result.stderr)]
    assert result.exit_code == 2
    recorder = Recorder()
    result = js("--help", on_output=recorder)
    assert recorder.chunks == [("stdout", result.stdout)]


def test_a_failing_callback_cancels_the_job_and_propagates(workspace: Path,
                                                           js: JsRunner) -> None:
    def explode(stream: OutputStream, text: str) -> None:
        raise RuntimeError(f"display broke on {text!r}")

    source = (RUNTIME + "console.log('x');\n"
              "for (let i = 0; ; i++) workspace.writeText('scratch/n.txt', String(i));")
    with pytest.raises(RuntimeError, match="display broke on 'x\\\\n'"):
        js("-e", source, on_output=explode)
    after = js("-e", "console.log('healthy')")
    assert (after.exit_code, after.stdout) == (0, "healthy\n")


# --- named eval modules ------------------------------------------------------------------


def test_a_named_module_reports_its_own_lines(js: JsRunner) -> None:
    cell = "const a = 1;\nconst b = 2;\nnull.x;\n"
    result = js("-e", cell, eval_name="<cell 4>")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == ("js: <cell 4>: TypeError: cannot read property 'x' of null\n"
                             "    at <anonymous> (<cell 4>:3:1)\n")
    thrown = js("-e", "const a = 1;\n\nfunction f() {\n  throw new Error('boom');\n}\nf();",
                eval_name="<cell 4>")
    assert thrown.stderr == ("js: <cell 4>: Error: boom\n"
                             "    at f (<cell 4>:4:13)\n"
                             "    at <anonymous> (<cell 4>:6:1)\n")


def test_a_named_module_syntax_error_points_into_the_cell(js: JsRunner) -> None:
    result = js("-e", "const a = 1;\nlet = = 2;\n", eval_name="<cell 7>")
    assert result.exit_code == 1
    assert result.stderr.startswith("js: <cell 7>: SyntaxError: ")
    assert result.stderr.endswith("    at <cell 7>:2:5\n")


def test_a_named_module_imports_relative_to_the_cwd(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/lib.js", "export function fail() {\n  throw new Error('deep');\n}\n"
                                       "export const answer = 42;\n")
    ok = js("-e", "import { answer } from './lib.js';\n"
                  "console.log(answer, JSON.stringify(process.argv));",
            "--", "x", cwd="/scratch", eval_name="<cell 2>")
    assert (ok.exit_code, ok.stdout, ok.stderr) == (0, '42 ["js","x"]\n', "")
    failed = js("-e", "import { fail } from './lib.js';\nfail();", cwd="/scratch",
                eval_name="<cell 3>")
    assert failed.stderr == ("js: <cell 3>: Error: deep\n"
                             "    at fail (/scratch/lib.js:2:13)\n"
                             "    at <anonymous> (<cell 3>:2:1)\n")
    missing = js("-e", "\nimport './missing.js';", cwd="/scratch", eval_name="<cell 5>")
    assert missing.stderr == ("js: <cell 5>: Cannot find module `/scratch/missing.js` imported "
                              "from `<cell 5>`.\n    at <cell 5>:2:8\n")


@pytest.mark.parametrize("name", ["", "/scratch/x.js", "./x", "<tavernlab:core>",
                                  "@tauritavern/runtime", "a\0b"])
def test_eval_names_that_could_collide_are_refused(js: JsRunner, name: str) -> None:
    with pytest.raises(ValueError, match="eval_name"):
        js("-e", "1", eval_name=name)


def test_eval_name_is_only_for_eval_entries(workspace: Path, js: JsRunner) -> None:
    write(workspace, "scratch/t.js", "console.log(1)")
    with pytest.raises(ValueError, match="file entry"):
        js("/scratch/t.js", eval_name="<cell 1>")
    with pytest.raises(ValueError, match="stdin entry"):
        js("-", stdin=b"1", eval_name="<cell 1>")
    assert json.loads(js("-e", "console.log('[1]')", eval_name="<c>").stdout) == [1]
