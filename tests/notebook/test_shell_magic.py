"""``%ws_shell`` / ``%%ws_shell``: one ``workspace.shell`` tool call as the model makes it."""

from __future__ import annotations

import threading
import time

from IPython.core.error import UsageError
from notebook_support import Notebook

from tavernlab.errors import ToolError
from tavernlab.host import Run
from tavernlab.notebook import ShellError, current_state
from tavernlab.shell import ShellOutcome


def test_the_line_form_reaches_the_shell_exactly_as_typed(nb: Notebook) -> None:
    ran = nb.cell("%ws_shell echo \"a  b\" '$HOME' | tr a-z A-Z; echo ${X:-unset}")
    assert ran.error is None
    assert ran.stdout == "A  B $HOME\nunset\n"


def test_the_cell_form_and_out(nb: Notebook) -> None:
    ran = nb.cell("%%ws_shell --out r\ncd /scratch\necho one > a.txt\ncat a.txt\necho err >&2")
    assert (ran.stdout, ran.stderr) == ("one\n", "err\n")
    result = nb.ns["r"]
    assert (result.outcome, result.exit_code, result.stdout, result.stderr) == (
        ShellOutcome.COMPLETED, 0, "one\n", "err\n")
    assert result.resource_refs == ["scratch/a.txt"]


def test_workdir(nb: Notebook) -> None:
    nb.cell("%ws_shell mkdir -p /scratch/deep")
    assert nb.cell("%ws_shell --workdir /scratch/deep pwd").stdout == "/scratch/deep\n"
    assert nb.cell("%ws_shell --workdir /output -- ls -d .").stdout == ".\n"


def test_the_call_is_a_tool_call_of_the_run(nb: Notebook) -> None:
    nb.cell("%ws_shell echo hi")
    events = nb.cell("%tavern events --type tool_call_completed").value
    assert [(e.payload.tool_id, e.payload.is_error) for e in events] == [
        ("workspace.shell", False)]


def test_an_error_result_raises_shell_error_as_one_line(nb: Notebook) -> None:
    ran = nb.cell("%ws_shell echo before; exit 7")
    assert ran.stdout.startswith("before\n")
    error = ran.error
    assert isinstance(error, ShellError)
    assert (error.code, error.message, error.exit_code) == ("workspace.shell_exit",
                                                            "Exit code: 7", 7)
    assert error._render_traceback_() == ["workspace.shell_exit: Exit code: 7"]
    assert ran.stdout == "before\nworkspace.shell_exit: Exit code: 7\n"


def test_no_raise_and_out(nb: Notebook) -> None:
    ran = nb.cell("%ws_shell --no-raise --out r exit 3")
    assert ran.error is None
    assert ran.stderr == "workspace.shell_exit: Exit code: 3\n"
    assert nb.ns["r"].exit_code == 3


def _cancel_once_running(run: Run) -> threading.Thread:
    """A thread that cancels ``run``'s call as soon as one is in flight."""
    def cancel() -> None:
        deadline = time.monotonic() + 10
        while not run.cancel() and time.monotonic() < deadline:
            time.sleep(0.01)

    thread = threading.Thread(target=cancel)
    thread.start()
    return thread


def test_a_refused_call_raises_its_tool_error(nb: Notebook) -> None:
    nb.cell("%config TavernMagics.round_per_cell = False")
    canceller = _cancel_once_running(current_state(nb.shell).run)
    cancelled = nb.cell("%ws_shell while true; do :; done")
    canceller.join()
    assert isinstance(cancelled.error, ShellError)
    assert cancelled.error.code == "workspace.shell_cancelled"
    refused = nb.cell("%ws_shell echo next")
    assert isinstance(refused.error, ToolError)
    assert refused.error.code == "tool.round_cancelled"
    assert refused.stdout == ("tool.round_cancelled: An earlier tool call of this round was "
                              "cancelled, so this call was not executed.\n")


def test_round_per_cell_starts_a_fresh_round_after_a_cancelled_call(nb: Notebook) -> None:
    canceller = _cancel_once_running(current_state(nb.shell).run)
    cancelled = nb.cell("%ws_shell while true; do :; done")
    canceller.join()
    assert isinstance(cancelled.error, ShellError)
    after = nb.cell("%ws_shell echo fresh")
    assert after.error is None and after.stdout == "fresh\n"


def test_bad_arguments(nb: Notebook) -> None:
    cases = {
        "%ws_shell": "%ws_shell: give a command (%ws_shell CMD) or use %%ws_shell",
        "%ws_shell --workdir": "%ws_shell: argument --workdir: expected one argument",
        "%%ws_shell extra\necho": "%%ws_shell: the command is the cell; unexpected 'extra'",
        "%ws_shell --bogus x": "%ws_shell: unrecognized arguments: --bogus",
    }
    for source, message in cases.items():
        ran = nb.cell(source)
        assert isinstance(ran.error, UsageError), source
        assert str(ran.error) == message



def test_no_raise_error_is_accepted_as_ipythons_script_magic_spells_it(nb: Notebook) -> None:
    ran = nb.cell("%ws_shell --no-raise-error --out r exit 3")
    assert ran.error is None
    assert ran.stderr == "workspace.shell_exit: Exit code: 3\n"
    assert nb.ns["r"].exit_code == 3


def test_help_ends_with_examples(nb: Notebook) -> None:
    shown = nb.cell("%ws_shell?").stdout
    assert "--no-raise, --no-raise-error" in shown
    examples = shown.split("Examples\n--------\n", 1)[1]
    assert "%ws_shell ls -l /output" in examples and "%%ws_shell --workdir /output" in examples
