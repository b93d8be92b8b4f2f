"""``%%js`` and ``%js``: run a cell (or a workspace file) in the current run's sandbox.

The cell form runs the body exactly like ``js -e BODY -- ARG…`` but as the module
``<cell N>`` (N the cell's execution count). The source given to the sandbox is one empty line
(standing for the ``%%js`` line) followed by the body, so the line numbers in a stack trace
are the cell's own as JupyterLab numbers them: ``<cell 4>:3:7`` is line 3 of cell 4. With
``--save PATH`` the body is first written to that workspace file (through the model's view,
like a shell write) and the file is run instead; its frames are mapped back to cell lines.
The line form ``%js ARGV…`` is ``js ARGV…``: a workspace script and its arguments.

Output streams into the cell while the job runs (:mod:`tavernlab.notebook._output`), except the
failure report of a script that fails when the cell is to raise: the raised JSError shows it
once, its frames mapped to the cell's lines. A kernel
interrupt cancels the job (the sandbox stops or kills the worker within its 0.25 s grace),
prints ``cancelled after 1.2 s`` and re-raises ``KeyboardInterrupt`` so "Run all" stops. A
non-zero exit raises :class:`~tavernlab.notebook.JSError` unless raising is off.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tavernlab.host import Run
from tavernlab.js import CommandResult, shell_path
from tavernlab.notebook._errors import CellSource, JSError
from tavernlab.notebook._output import CellOutput, Stream, run_cell_job
from tavernlab.notebook._state import NotebookState
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage import WriteGuard

JsCommand = Literal["js", "node", "deno"]


@dataclass(frozen=True)
class JsRequest:
    """One ``%%js``/``%js`` invocation, its options already resolved."""

    run: Run
    args: list[str]
    body: str | None = None
    magic_line: str = ""
    cwd: str = "/"
    stdin: str | bytes | None = None
    command: JsCommand = "js"
    save: str | None = None
    raise_on_error: bool = True
    show: bool = True
    stream: bool = True


def cell_name(number: int) -> str:
    """``<cell 4>``: the module name of cell 4's script."""
    return f"<cell {number}>"


def _line_module(args: list[str], cwd: str) -> str:
    """The module name the ``js`` command gives the line form's entry: a file's
    shell path, ``<cwd>/<eval>`` for ``-e``, ``<cwd>/<stdin>`` for ``-``."""
    first = args[0] if args else ""
    if first in ("-e", "--eval"):
        return shell_path(cwd, "<eval>")
    if first == "-":
        return shell_path(cwd, "<stdin>")
    return shell_path(cwd, first)


def _plan(request: JsRequest, number: int) -> tuple[list[str], str | None, CellSource]:
    """``(argv, eval_name, source)`` for the job (the cell saved to a file when asked)."""
    args = request.args
    if request.body is None:
        return list(args), None, CellSource(_line_module(args, request.cwd))
    text = f"%%js {request.magic_line}".rstrip() + "\n" + request.body
    name = cell_name(number)
    if request.save is not None:
        path = shell_path(request.cwd, request.save)
        request.run.internals.scope.write_text(WorkspacePath.parse(path.lstrip("/")), request.body,
                                     WriteGuard.unchecked())
        return [path, *args], None, CellSource(path, text, line_offset=1, cell_name=name)
    argv = ["-e", "\n" + request.body, *(["--", *args] if args else [])]
    return argv, name, CellSource(name, text, cell_name=name)


def run_js(state: NotebookState, request: JsRequest,
           keep: Callable[[CommandResult], None] | None = None) -> CommandResult:
    """Run the request (see the module docstring) and return the command's result; ``keep``
    receives it first (``--out VAR``), so it is kept even when :class:`JSError` is raised
    for a non-zero exit (``raise_on_error``)."""
    state.enter_cell(request.run)
    argv, eval_name, source = _plan(request, state.cell)
    output = CellOutput(state.shell, show=request.show, stream=request.stream)
    report = f"js: {source.module}: "
    held: list[str] = []

    def show(stream: Stream, text: str) -> None:
        # The failure report comes as one chunk at the end; the JSError raised for it shows
        # it (its frames mapped to the cell's lines), so it is not also streamed.
        if request.raise_on_error and stream == "stderr" and text.startswith(report):
            held.append(text)
        else:
            output.js_chunk(stream, text)

    def job() -> CommandResult:
        try:
            return request.run.js(argv, cwd=request.cwd, stdin=request.stdin,
                                  command=request.command, on_output=show,
                                  eval_name=eval_name)
        except KeyboardInterrupt:
            for text in held:
                output.js_chunk("stderr", text)
            raise

    return run_cell_job(
        output, job, keep=keep, raise_on_error=request.raise_on_error,
        error_of=lambda result: JSError(result, source) if result.exit_code != 0 else None)
