"""Shell outcomes (docs/shell.md): exit mapping, content format, truncation, timeouts."""

from __future__ import annotations

import threading

import pytest

from tavernlab.errors import ToolError
from tavernlab.shell import ShellOutcome
from tavernlab.shell._result import format_content

from .conftest import Workspace


def test_success_content_and_structured(ws: Workspace) -> None:
    result = ws.shell("echo hello")
    assert result.content == "Exit code: 0\nhello"
    assert result.structured == {"exitCode": 0, "outputTruncated": False}
    tool = result.to_tool_result()
    assert (tool.is_error, tool.error_code, tool.resource_refs) == (False, None, [])


def test_failed_write_then_exit_keeps_the_file(ws: Workspace) -> None:
    # 12.14 (adapter level; the stored result and auto-commit are in test_tool.py)
    result = ws.shell("printf 'kept\\n' > /output/main.md; exit 7")
    assert result.content.startswith("Exit code: 7")
    assert result.error_code == "workspace.shell_exit"
    assert result.structured == {"exitCode": 7, "outputTruncated": False}
    assert result.to_tool_result().is_error
    assert result.resource_refs == ["output/main.md"]
    assert ws.read("output/main.md") == "kept\n"


def test_exit_3(ws: Workspace) -> None:
    # 12.15
    result = ws.shell("exit 3")
    assert result.content == "Exit code: 3"
    assert result.error_code == "workspace.shell_exit"


def test_endless_loop_times_out(ws: Workspace) -> None:
    # 12.16 with a short injected deadline
    result = ws.shell("while true; do :; done", deadline_s=0.5)
    assert result.outcome is ShellOutcome.TIMED_OUT
    assert result.content == "Command timed out."
    assert result.error_code == "workspace.shell_timeout"
    assert result.structured == {"exitCode": None, "outputTruncated": False}


def test_output_printed_before_a_timeout_is_kept(ws: Workspace) -> None:
    result = ws.shell("echo started; echo warn >&2; while :; do :; done", deadline_s=0.5)
    assert result.content == "Command timed out.\nstarted\nstderr:\nwarn"


def test_fork_bomb_ends_at_the_deadline_and_the_process_stays_responsive(ws: Workspace
                                                                         ) -> None:
    # bad input: a fork bomb; afterwards the same process runs the next call normally
    result = ws.shell(":(){ :|:& };:", deadline_s=0.5)
    assert result.outcome in (ShellOutcome.TIMED_OUT, ShellOutcome.FAILED)
    assert result.error_code in ("workspace.shell_timeout", "workspace.shell_failed")
    assert ws.shell("echo alive").content == "Exit code: 0\nalive"


def test_python_busy_loop_times_out(ws: Workspace) -> None:
    # section 10: the Python subset shares the deadline
    result = ws.shell("python3 -c 'while True: pass'", deadline_s=0.5)
    assert result.content.splitlines()[0] == "Command timed out."
    assert result.exit_code is None
    assert result.error_code == "workspace.shell_timeout"


def test_sleep_past_the_deadline_times_out(ws: Workspace) -> None:
    result = ws.shell("sleep 30; echo late > /scratch/late.txt", deadline_s=0.3)
    assert result.content == "Command timed out."
    assert not ws.exists("scratch/late.txt")


def test_stdout_over_128_kib_is_truncated(ws: Workspace) -> None:
    # 12.17: 2000 lines of 100 bytes = 200 000 bytes
    result = ws.shell("for i in $(seq 1 2000); do printf '%099d\\n' $i; done; exit 5")
    assert result.content.endswith("\nOutput truncated.")
    assert result.structured == {"exitCode": 5, "outputTruncated": True}
    assert len(result.stdout.encode()) == 131_072
    assert result.stdout.startswith("0" * 98 + "1\n")


def test_stderr_cap_is_separate(ws: Workspace) -> None:
    result = ws.shell("echo out; for i in $(seq 1 1400); do printf '%099d\\n' $i >&2; done")
    assert result.output_truncated
    assert result.stdout == "out\n"
    assert len(result.stderr.encode()) == 131_072
    assert result.exit_code == 0


def test_stdout_then_stderr_formatting(ws: Workspace) -> None:
    # 12.18
    assert ws.shell("echo out; echo err >&2").content == "Exit code: 0\nout\nstderr:\nerr"
    assert ws.shell("echo err >&2").content == "Exit code: 0\nerr"


def test_interpreter_failure_reports_the_error_as_stderr(ws: Workspace) -> None:
    result = ws.shell("echo before; if then fi")
    assert result.outcome is ShellOutcome.FAILED
    assert result.error_code == "workspace.shell_failed"
    assert result.exit_code is None
    assert result.content == ("parse error at line 1, column 17: syntax error near unexpected "
                              "token `then'")


def test_over_long_command_is_refused_before_running(ws: Workspace) -> None:
    # bad input: 200 KiB of command text
    command = "echo x > /scratch/ran.txt; #" + "a" * (200 * 1024)
    with pytest.raises(ToolError) as caught:
        ws.shell(command)
    assert caught.value.code == "tool.invalid_arguments"
    assert caught.value.message == "command exceeds the 131072-byte limit"
    assert not ws.exists("scratch/ran.txt")


def test_command_at_the_limit_runs(ws: Workspace) -> None:
    command = "echo ok #"
    command += "a" * (131_072 - len(command))
    assert ws.shell(command).stdout == "ok\n"


@pytest.mark.parametrize("workdir", ["/nope", "/input", "/output/main.md", "/..\\x"])
def test_bad_workdir_fails_and_runs_nothing(ws: Workspace, workdir: str) -> None:
    ws.scope.tracker.candidate = "output/main.md"
    ws.scope.tracker.changed = True
    with pytest.raises(ToolError) as caught:
        ws.shell("echo x > /scratch/ran.txt", workdir)
    assert caught.value.code == "workspace.shell_failed"
    assert caught.value.message == f"workdir `{workdir}` is not a workspace directory"
    assert not ws.exists("scratch/ran.txt")
    assert ws.scope.tracker.candidate is None


def test_the_process_stays_responsive_during_a_runaway_call(ws: Workspace) -> None:
    outcome: dict[str, object] = {}
    worker = threading.Thread(
        target=lambda: outcome.setdefault("r", ws.shell("while :; do :; done", deadline_s=1.0)))
    worker.start()
    assert ws.shell("echo meanwhile").stdout == "meanwhile\n"
    worker.join()
    assert outcome["r"].content == "Command timed out."  # type: ignore[attr-defined]


@pytest.mark.parametrize(("args", "expected"), [
    (("completed", 0, "hello\n", "", False), "Exit code: 0\nhello"),
    (("completed", 3, "partial output\n", "something went wrong\n", False),
     "Exit code: 3\npartial output\nstderr:\nsomething went wrong"),
    (("timed_out", None, "", "", False), "Command timed out."),
    (("cancelled", None, "a\n\n", "", True), "Command cancelled.\na\n\nOutput truncated."),
    (("failed", None, "", "boom\n", False), "boom"),
    (("completed", 0, "", "", False), "Exit code: 0"),
])
def test_format_content(args: tuple[str, int | None, str, str, bool], expected: str) -> None:
    outcome, code, out, err, truncated = args
    assert format_content(ShellOutcome(outcome), code, out, err, truncated) == expected


def test_inner_timeout_stops_a_sleep(ws: Workspace) -> None:
    result = ws.shell("timeout 0.2 sleep 30; echo status=$?")
    assert result.content == "Exit code: 0\nstatus=124"


def test_a_lone_surrogate_is_an_invalid_argument(ws: Workspace) -> None:
    with pytest.raises(ToolError) as caught:
        ws.shell("echo \ud800")
    assert (caught.value.code, caught.value.message) == (
        "tool.invalid_arguments", "command must be valid Unicode text")
