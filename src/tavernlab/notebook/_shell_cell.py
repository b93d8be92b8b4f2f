"""``%ws_shell CMD`` / ``%%ws_shell``: one ``workspace.shell`` tool call, as the model makes it.

The call is a real tool call of the current run's main agent (events, stored result, the
round's auto-commit rules), so it shows up in ``%tavern events`` and in the timeline. Output
streams into the cell from the shell's helper thread, routed to this cell. A kernel interrupt
cancels the call (the shell waits for file operations already started), prints
``cancelled after 1.2 s`` and re-raises ``KeyboardInterrupt``. An error result (non-zero
exit, timeout, failed interpreter) raises :class:`~tavernlab.notebook.ShellError`
unless raising is off; a call the host refused outright raises its ``ToolError``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tavernlab.host import Run
from tavernlab.notebook._errors import ShellError
from tavernlab.notebook._output import CellOutput, run_cell_job
from tavernlab.notebook._state import NotebookState
from tavernlab.shell import ShellResult


@dataclass(frozen=True)
class ShellRequest:
    """One ``%ws_shell`` invocation, its options already resolved."""

    run: Run
    command: str
    workdir: str = "/"
    raise_on_error: bool = True
    stream: bool = True


def run_shell(state: NotebookState, request: ShellRequest,
              keep: Callable[[ShellResult], None] | None = None) -> ShellResult:
    """Make the call and return its :class:`ShellResult`; ``keep`` receives it first
    (``--out VAR``), so it is kept even when :class:`ShellError` is raised."""
    state.enter_cell(request.run)
    output = CellOutput(state.shell, stream=request.stream)
    return run_cell_job(
        output, lambda: request.run.shell(request.command, request.workdir,
                                          on_output=output.shell_chunk),
        keep=keep, raise_on_error=request.raise_on_error,
        error_of=lambda result: ShellError(result) if result.is_error else None)
