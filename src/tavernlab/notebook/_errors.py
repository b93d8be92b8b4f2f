"""The notebook surface's errors: a ``%%js`` cell or a ``%ws_shell`` call that failed.

::

    NotebookError                   notebook.error
    ├── JSError                     notebook.js_exit    the script exited with a non-zero status
    └── ShellError                  workspace.shell_*   the shell call's error result code

Both carry the full result (``error.result``) and render in IPython without a single
tavernlab frame: :class:`ShellError` as the one line ``code: message`` of every tavernlab
error, :class:`JSError` as that line followed by the script's own stack, each frame of the
cell mapped to the cell's line and shown with that line of source and a caret.

The script's stack comes from the ``js`` command's failure report, whose shape upstream
fixes (``js: <module>: <message>`` then ``    at …`` frames, docs/js-and-skills.md); the
module name is the one the cell gave the job, so the report is found by that exact prefix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tavernlab.errors import NotebookError
from tavernlab.js import CommandResult
from tavernlab.shell import ShellResult, status_line

_FRAME = re.compile(r"^\s+at (?:(?P<function>.*?) \()?(?P<module>.+?):(?P<line>\d+):"
                    r"(?P<column>\d+)\)?$")


@dataclass(frozen=True)
class CellSource:
    """Where a cell's script came from: the module name the job ran it as, the cell's text
    (``None`` for a file run by the line form) and how many lines the module's line 1 lies
    below the cell's first line (1 when only the body was saved to a file)."""

    module: str
    text: str | None = None
    line_offset: int = 0
    cell_name: str | None = None


@dataclass(frozen=True)
class StackFrame:
    """One ``at …`` line of the script's stack."""

    function: str | None
    module: str
    line: int
    column: int


class JSError(NotebookError):
    """A ``%%js`` cell (or ``%js`` line) whose script exited with a non-zero status.

    ``result`` is the :class:`~tavernlab.js.CommandResult`; ``exit_code``,
    ``stdout`` and ``stderr`` are its fields; ``report`` the failure report's message (empty
    when the script only set ``process.exitCode``) and ``frames`` its stack. The code
    ``notebook.js_exit`` is a tavernlab choice (the ``js`` command reports exit statuses,
    not codes).
    """

    code = "notebook.js_exit"

    def __init__(self, result: CommandResult, source: CellSource) -> None:
        report, frames = parse_failure_report(result.stderr, source.module)
        notes = [n for n, on in (("timed out", result.timed_out),
                                 ("cancelled", result.cancelled)) if on]
        message = f"exit status {result.exit_code}" + "".join(f", {n}" for n in notes)
        hint = exit_call_hint(report, frames, source)
        super().__init__((f"{message}: {report}" if report else message) + hint)
        #: The one line a cell that does not raise prints after the streamed report (which
        #: already said what failed): the code and the exit status.
        self.streamed_note = f"{self.code}: {message}"
        self.result = result
        self.exit_code = result.exit_code
        self.stdout = result.stdout
        self.stderr = result.stderr
        self.report = report
        self.frames = frames
        self.source = source

    def _render_traceback_(self) -> list[str]:
        """``notebook.js_exit: exit status 1: TypeError: boom`` then each frame, those of the
        cell with their line of source and a caret under the column."""
        lines = [f"{self.code}: {self.message}"]
        for frame in self.frames:
            lines += render_frame(frame, self.source)
        return lines


class ShellError(NotebookError):
    """A ``%ws_shell`` call whose result is an error: ``code`` is the result's own
    (``workspace.shell_exit``, ``_cancelled``, ``_timeout``, ``_failed``), the message its
    status line (``Exit code: 7``), or for a failed interpreter its whole content."""

    def __init__(self, result: ShellResult) -> None:
        message = status_line(result.outcome, result.exit_code) or result.content
        super().__init__(message, code=result.error_code or "workspace.shell_failed")
        self.result = result
        self.exit_code = result.exit_code
        self.stdout = result.stdout
        self.stderr = result.stderr


#: What a script that calls ``process.exit`` is told: the sandbox has no such function.
PROCESS_EXIT_HINT = ("process.exit() is not supported in the sandbox; set process.exitCode = "
                     "N and let the script end to exit with status N")
_EXIT_CALL = re.compile(r"\bprocess\s*\.\s*exit\s*\(")


def exit_call_hint(report: str, frames: list[StackFrame], source: CellSource) -> str:
    """`` (process.exit() is not supported…)`` when the script failed calling
    ``process.exit`` (its "not a function" error points at a line of the cell that calls
    it); else empty."""
    if not report.startswith("TypeError: not a function") or not frames:
        return ""
    frame = frames[0]
    if frame.module != source.module or source.text is None:
        return ""
    lines = source.text.split("\n")
    index = frame.line + source.line_offset - 1
    if 0 <= index < len(lines) and _EXIT_CALL.search(lines[index]):
        return f" ({PROCESS_EXIT_HINT})"
    return ""


def cell_interrupted() -> KeyboardInterrupt:
    """The ``KeyboardInterrupt`` a magic re-raises once it has cancelled its job (so "Run
    all" stops). IPython renders it as the one line ``KeyboardInterrupt``, without the
    tavernlab frames the interrupt passed through; the magic has already printed
    ``cancelled after 1.2 s``."""
    error = KeyboardInterrupt()
    vars(error)["_render_traceback_"] = lambda: ["KeyboardInterrupt"]  # IPython's protocol
    return error


def parse_failure_report(stderr: str, module: str) -> tuple[str, list[StackFrame]]:
    """The message and frames of the last failure report of ``module`` in ``stderr``
    (``("", [])`` when there is none)."""
    prefix = f"js: {module}: "
    at = stderr.rfind("\n" + prefix)
    if at >= 0:
        start = at + 1
    elif stderr.startswith(prefix):
        start = 0
    else:
        return "", []
    message_lines: list[str] = []
    frames: list[StackFrame] = []
    for line in stderr[start + len(prefix):].rstrip("\n").split("\n"):
        match = _FRAME.match(line)
        if match is not None:
            frames.append(StackFrame(match["function"], match["module"], int(match["line"]),
                                     int(match["column"])))
        elif not frames:
            message_lines.append(line)
    return "\n".join(message_lines), frames


def render_frame(frame: StackFrame, source: CellSource) -> list[str]:
    """``  at f (<cell 4>:3:7)`` and, for a frame of the cell, its source line and caret
    (a file saved from the cell also names the cell line)."""
    where = f"{frame.module}:{frame.line}:{frame.column}"
    if frame.module == source.module and source.cell_name and source.line_offset:
        where = f"{source.cell_name}:{frame.line + source.line_offset}:{frame.column} ({where})"
    head = f"  at {frame.function} ({where})" if frame.function else f"  at {where}"
    if frame.module != source.module or source.text is None:
        return [head]
    cell_line = frame.line + source.line_offset
    lines = source.text.split("\n")
    if not 1 <= cell_line <= len(lines):
        return [head]
    number = f"{cell_line:>5} | "
    caret = " " * (len(number) - 2) + "| " + " " * max(frame.column - 1, 0) + "^"
    return [head, f"{number}{lines[cell_line - 1]}", caret]
