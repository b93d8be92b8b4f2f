"""``workspace.shell`` through a real Lab run: stored results, events, auto-commits, explicit
commits, stale patches and cancellation (docs/shell.md,
docs/persist.md)."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tavernlab.host import Lab, Run
from tavernlab.shell import DESCRIPTION, ShellOutcome, ShellResult, ShellToolResult, shell_tools
from tavernlab.shell._tool import BASE_DESCRIPTION
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.roots._profile import WorkspaceSettings
from tavernlab.workspace.tools import ToolResult

from .conftest import lock_waiter_blocked
from .test_cancel import JS_TWO_WRITES, PYTHON_TWO_WRITES

DRAFT_UPDATED = "afb0dd9cdafff15c91cf0b7aefe8540054f943ac85300575dba5f02c6d61b688"
FINAL_UPDATED = "558d46463c665d63d467f2bb803262630eca6cf58feb5cddb18f10dbd4de103e"
MOVED_BODY = "2902dc0da1c302c92f4349498ec37757aa0d934496030e08ec2617b59f048df6"
FINAL = "9149a1639fd729ca74b4353844d37528182883bc3b68bda8c864cd7064dd1043"
KEPT = "78051faade059d70866df6a3fb83ef348721fd74a87e93ef95c493f87d0d236b"


def sha(text: str) -> str:
    """SHA-256 of UTF-8 text (cross-checks the pinned literals above)."""
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    """A fresh lab."""
    return Lab(tmp_path / "lab")


@pytest.fixture
def run(lab: Lab) -> Run:
    """A foreground Chat run with a 5 s shell deadline."""
    run = lab.start_run(chat_id="alice")
    run.internals.shell_deadline_s = 5.0
    return run


def shell(run: Run, command: str, workdir: str | None = None) -> ToolResult:
    """Call the tool the way the model does."""
    args: dict[str, Any] = {"command": command}
    if workdir is not None:
        args["workdir"] = workdir
    return run.call_tool("workspace.shell", args)


def stored(run: Run, result: ToolResult) -> dict[str, Any]:
    """The tool-result file of a call."""
    event = [e for e in run.events(types="tool_result_stored", journal=False)
             if e.payload.call_id == result.call_id][-1]
    return json.loads((run.workspace_dir / event.payload.path).read_text())


def commits(run: Run) -> list[tuple[str, bool, str]]:
    """``(path, isExplicit, sha256)`` of every chat commit request."""
    return [(e.payload.path, e.payload.is_explicit, e.payload.sha256)
            for e in run.events(types="chat_commit_requested", journal=False)]


def test_the_tool_is_registered_with_its_description() -> None:
    (spec,) = shell_tools()
    assert (spec.model_name, spec.mutating, spec.arguments) == (
        "workspace_shell", True, ("command", "workdir"))
    assert spec.description == BASE_DESCRIPTION
    assert "js --help" in DESCRIPTION and "ls, find" in DESCRIPTION


def test_stored_result_of_echo_hello(run: Run) -> None:
    # 6.2
    result = shell(run, "echo hello")
    assert stored(run, result) == {
        "callId": "call_1",
        "toolId": "workspace.shell",
        "content": "Exit code: 0\nhello",
        "structured": {"exitCode": 0, "outputTruncated": False},
        "isError": False,
        "errorCode": None,
        "resourceRefs": [],
    }
    completed = run.events(types="tool_call_completed", journal=False)[-1].payload
    assert (completed.is_error, completed.error_code, completed.resource_refs) == (
        False, None, [])


def test_hidden_input_fails_with_a_warn_event(run: Run) -> None:
    # 12.1 at tool level
    result = shell(run, "cat /input/prompt_snapshot.json")
    assert (result.is_error, result.error_code) == (True, "workspace.shell_exit")
    failed = run.events(types="tool_call_failed", journal=False)[-1]
    assert failed.level == "warn"
    assert (failed.payload.is_error, failed.payload.error_code) == (True, "workspace.shell_exit")
    assert failed.payload.message == result.content
    copy = shell(run, "cp /input/prompt_snapshot.json /scratch/leaked.json")
    assert copy.error_code == "workspace.shell_exit"
    assert not (run.workspace_dir / "scratch" / "leaked.json").exists()


@pytest.mark.parametrize(("args", "message"), [
    ({"command": "echo x > /scratch/x.txt", "cwd": "/"}, "cwd is not supported"),
    ({}, "command is required"),
    ({"command": 7}, "command must be a string"),
    ({"command": "echo x > /scratch/x.txt", "workdir": ["/"]}, "workdir must be a string"),
    ({"command": "echo x > /scratch/x.txt #" + "a" * 200 * 1024},
     "command exceeds the 131072-byte limit"),
])
def test_invalid_arguments_run_nothing(run: Run, args: dict[str, Any], message: str) -> None:
    result = run.call_tool("workspace.shell", args)
    assert (result.error_code, result.content) == ("tool.invalid_arguments", message)
    assert not (run.workspace_dir / "scratch" / "x.txt").exists()


def test_acceptance_21_an_unknown_key_is_not_supported(run: Run) -> None:
    result = run.call_tool("workspace.shell", {"command": "pwd", "cwd": "/output"})
    assert (result.is_error, result.error_code, result.content) == (
        True, "tool.invalid_arguments", "cwd is not supported")
    assert result.structured == {"error": {"code": "tool.invalid_arguments",
                                           "message": "cwd is not supported"}}
    # nothing ran: the result is the argument error, with no exit code or output
    assert "exitCode" not in result.structured


def test_bad_workdir_is_a_shell_failure(run: Run) -> None:
    result = shell(run, "pwd", "/input")
    assert (result.error_code, result.content) == (
        "workspace.shell_failed", "workdir `/input` is not a workspace directory")


PIPELINE = (
    "mkdir -p drafts/sub && "
    "printf 'draft one\\n' > drafts/sub/a.md && "
    "printf '{\"title\": \"Chapter\", \"tags\": [\"x\", \"y\"]}\\n' > data.json && "
    "jq -r '.title' data.json > title.txt && "
    "jq -r '.tags[]' data.json >> title.txt && "
    "cp title.txt drafts/copy.txt && "
    "mv drafts/sub drafts/moved && "
    "rm drafts/copy.txt && "
    "cat drafts/moved/a.md title.txt && "
    "printf 'appended\\n' >> drafts/moved/a.md"
)


def test_pipeline_in_output(run: Run) -> None:
    # 12.11
    result = shell(run, PIPELINE, "/output")
    assert result.content == "Exit code: 0\ndraft one\nChapter\nx\ny"
    out = run.workspace_dir / "output"
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "data.json", "drafts", "drafts/moved", "drafts/moved/a.md", "title.txt"]
    assert (out / "drafts/moved/a.md").read_text() == "draft one\nappended\n"
    assert (out / "title.txt").read_text() == "Chapter\nx\ny\n"
    assert result.resource_refs == [
        "output/data.json", "output/drafts", "output/drafts/copy.txt", "output/drafts/moved",
        "output/drafts/moved/a.md", "output/drafts/sub", "output/drafts/sub/a.md",
        "output/title.txt"]


def test_shell_edit_makes_an_earlier_read_stale(run: Run) -> None:
    # 12.12: the upstream sequence with its digests
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "draft\n"})
    first = run.call_tool("workspace.read_file", {"path": "output/main.md"})
    assert not first.is_error
    appended = shell(run, "printf 'updated by shell\\n' >> /output/main.md")
    assert appended.resource_refs == ["output/main.md"]
    patch = {"path": "output/main.md", "old_string": "draft\n", "new_string": "final draft\n"}
    stale = run.call_tool("workspace.apply_patch", patch)
    assert stale.error_code == "workspace.patch_stale_file"
    assert run.read("output/main.md") == "draft\nupdated by shell\n"
    run.call_tool("workspace.read_file", {"path": "output/main.md"})
    patched = run.call_tool("workspace.apply_patch", patch)
    assert not patched.is_error
    assert run.read("output/main.md") == "final draft\nupdated by shell\n"
    assert patched.structured["oldSha256"] == DRAFT_UPDATED == sha("draft\nupdated by shell\n")
    assert patched.structured["sha256"] == FINAL_UPDATED == sha(
        "final draft\nupdated by shell\n")


def test_shell_rounds_auto_commit_and_the_run_completes(run: Run) -> None:
    # 12.13 and workspace.md 10 Acceptance 1-3
    first = shell(run, "printf 'moved body\\n' > /output/main.md && "
                       "mv /output/main.md /output/Moved.MD && "
                       "printf '{\"ok\": true}\\n' > /output/data.json")
    assert first.content == "Exit code: 0"
    run.next_round()
    assert commits(run) == [("output/Moved.MD", False, MOVED_BODY)]
    assert sha("moved body\n") == MOVED_BODY
    shell(run, "mkdir -p /scratch/draft && printf 'final\\n' > /scratch/draft/final.md && "
               "mv /scratch/draft /scratch/finalized")
    run.next_round()
    assert commits(run)[1] == ("scratch/finalized/final.md", False, FINAL)
    assert sha("final\n") == FINAL
    explicit = run.call_tool("workspace.commit", {"path": "scratch/finalized/final.md"})
    assert not explicit.is_error
    assert commits(run)[2] == ("scratch/finalized/final.md", True, FINAL)
    finished = run.finish()
    assert not finished.is_error
    assert run.status == "completed"


def test_failed_shell_keeps_its_write_without_auto_commit(run: Run) -> None:
    # 12.14 and workspace.md 10 Acceptance 4
    result = shell(run, "printf 'kept\\n' > /output/main.md; exit 7")
    assert result.content.startswith("Exit code: 7")
    assert result.error_code == "workspace.shell_exit"
    record = stored(run, result)
    assert (record["structured"]["exitCode"], record["isError"]) == (7, True)
    assert record["resourceRefs"] == ["output/main.md"]
    run.next_round()
    assert commits(run) == []
    run.call_tool("workspace.commit", {"path": "output/main.md"})
    assert commits(run) == [("output/main.md", True, KEPT)]
    assert sha("kept\n") == KEPT


def test_timeout_at_tool_level(run: Run) -> None:
    # 12.16 through the dispatcher
    run.internals.shell_deadline_s = 0.5
    result = shell(run, "while true; do :; done")
    assert (result.content, result.error_code) == ("Command timed out.",
                                                   "workspace.shell_timeout")
    assert stored(run, result)["structured"] == {"exitCode": None, "outputTruncated": False}


def test_cancelled_call_ends_the_round_and_is_not_replayed(lab: Lab, run: Run) -> None:
    # 12.20
    target = run.workspace_dir / "output" / "main.md"
    box: dict[str, ToolResult] = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", shell(
        run, "printf 'cancelled shell write' > /output/main.md; sleep 60; "
             "printf ' + replayed' >> /output/main.md")))
    worker.start()
    while not target.exists() or target.read_text() != "cancelled shell write":
        time.sleep(0.005)
    assert run.cancel() == 1
    worker.join()
    cancelled = box["r"]
    assert (cancelled.content, cancelled.error_code) == ("Command cancelled.",
                                                         "workspace.shell_cancelled")
    assert stored(run, cancelled)["errorCode"] == "workspace.shell_cancelled"
    later = shell(run, "printf 'never' > /output/never.md")
    assert later.error_code == "tool.round_cancelled"
    assert not (run.workspace_dir / "output" / "never.md").exists()
    resumed = lab.open_run(run.id)
    appended = resumed.call_tool("workspace.shell",
                                 {"command": "printf ' + resumed' >> /output/main.md"})
    assert appended.content == "Exit code: 0"
    assert target.read_text() == "cancelled shell write + resumed"


def test_session_shell_uses_the_session_tmp_root(lab: Lab) -> None:
    session = lab.sessions.create("notes")
    run = lab.start_run(session=session.id)
    result = run.call_tool("workspace.shell", {"command": "echo kept > /tmp/n.txt; ls /"})
    assert result.content == "Exit code: 0\nskills\ntmp\ntool-results\nwork"
    assert (session.workspace_dir / "tmp" / "n.txt").read_text() == "kept\n"


def test_run_shell_returns_the_streams_and_the_stored_result(run: Run) -> None:
    result = run.shell("echo out; echo err >&2; exit 4", workdir="/scratch")
    assert (result.outcome, result.exit_code, result.stdout, result.stderr) == (
        ShellOutcome.COMPLETED, 4, "out\n", "err\n")
    assert result.output_truncated is False
    assert result.tool_result is not None
    assert result.tool_result.call_id == "call_1"
    assert stored(run, result.tool_result)["content"] == "Exit code: 4\nout\nstderr:\nerr"


def test_run_shell_reports_a_refusal_as_a_failure(run: Run) -> None:
    result = run.shell("pwd", workdir="/nope")
    assert (result.outcome, result.exit_code, result.stdout, result.stderr) == (
        ShellOutcome.FAILED, None, "", "workdir `/nope` is not a workspace directory")
    assert result.tool_result is not None
    assert result.tool_result.error_code == "workspace.shell_failed"


def test_a_stored_result_read_back_keeps_outcome_and_text(run: Run) -> None:
    result = shell(run, "echo out; exit 2")
    plain = ToolResult(content=result.content, structured=result.structured,
                       is_error=True, error_code=result.error_code)
    recovered = ShellResult.from_tool_result(plain)
    assert (recovered.outcome, recovered.exit_code, recovered.stdout) == (
        ShellOutcome.COMPLETED, 2, "out")


def cancel_in_flight(run: Run, command: str) -> ToolResult:
    """Run ``command`` as a tool call, hold the run lock shared until its first write waits
    inside storage, cancel with ``run.cancel()`` from this thread, then release."""
    box: dict[str, ToolResult] = {}
    with run.internals.fs.lock.shared():
        worker = threading.Thread(target=lambda: box.setdefault("r", shell(run, command)))
        worker.start()
        while not lock_waiter_blocked(run.internals.fs):
            time.sleep(0.002)
        assert run.cancel() == 1
    worker.join()
    return box["r"]


@pytest.mark.parametrize("command", [PYTHON_TWO_WRITES, JS_TWO_WRITES], ids=["python3", "js"])
def test_cancel_with_a_write_in_flight_at_tool_level(run: Run, command: str) -> None:
    # 12.19 through run.cancel()
    result = cancel_in_flight(run, command)
    assert result.content.splitlines()[0] == "Command cancelled."
    assert stored(run, result)["errorCode"] == "workspace.shell_cancelled"
    assert run.read("output/main.md") == "draft"
    assert not (run.workspace_dir / "output" / "next.txt").exists()
    assert run.events(types="run_cancel_requested", journal=False)
    run.next_round()
    assert commits(run) == []


def test_invocations_run_shells_in_parallel_with_their_own_views(run: Run) -> None:
    # shell.md 7: each Invocation has its own interpreter and policy view
    narrow = run.start_subagent("reader", Profile(workspace=WorkspaceSettings(
        visible_roots=["output"], writable_roots=["output"])))
    box: dict[str, ToolResult] = {}
    slow = threading.Thread(target=lambda: box.setdefault("main", shell(
        run, "sleep 0.5; ls /")))
    slow.start()
    sub = run.call_tool("workspace.shell", {"command": "ls /; cat /scratch/x.md"},
                        invocation=narrow)
    slow.join()
    assert sub.content == ("Exit code: 1\noutput\nskills\ntool-results\nstderr:\n"
                           "cat: /scratch/x.md: workspace path `scratch/x.md` was not found.")
    assert box["main"].content.splitlines()[1:] == [
        "output", "persist", "plan", "scratch", "skills", "summaries", "tool-results"]


def test_a_stored_result_read_back_takes_its_outcome_from_the_error_code(run: Run) -> None:
    # an interpreter failure has no status line; text that looks like one stays its text
    plain = ToolResult(content="Exit code: 7\nboom", structured={"exitCode": None,
                                                                 "outputTruncated": False},
                       is_error=True, error_code="workspace.shell_failed")
    recovered = ShellResult.from_tool_result(plain)
    assert (recovered.outcome, recovered.exit_code, recovered.stdout, recovered.stderr) == (
        ShellOutcome.FAILED, None, "", "Exit code: 7\nboom")
    timed_out = ShellResult.from_tool_result(ToolResult(
        content="Command timed out.\npartial", structured={"exitCode": None,
                                                          "outputTruncated": True},
        is_error=True, error_code="workspace.shell_timeout"))
    assert (timed_out.outcome, timed_out.stdout, timed_out.output_truncated) == (
        ShellOutcome.TIMED_OUT, "partial", True)
    ok = ShellResult.from_tool_result(ToolResult(
        content="Exit code: 0\nhi", structured={"exitCode": 0, "outputTruncated": False}))
    assert (ok.outcome, ok.exit_code, ok.stdout, ok.is_error) == (
        ShellOutcome.COMPLETED, 0, "hi", False)


def test_a_refused_workdir_carries_the_shell_result_it_was_built_with(run: Run) -> None:
    result = run.call_tool("workspace.shell", {"command": "pwd", "workdir": "/nope"})
    assert isinstance(result, ShellToolResult)
    assert result.shell == ShellResult(ShellOutcome.FAILED, None, "",
                                       "workdir `/nope` is not a workspace directory", False)
    assert stored(run, result) == {
        "callId": result.call_id, "toolId": "workspace.shell",
        "content": "workdir `/nope` is not a workspace directory",
        "structured": {"error": {"code": "workspace.shell_failed",
                                 "message": "workdir `/nope` is not a workspace directory"}},
        "isError": True, "errorCode": "workspace.shell_failed", "resourceRefs": []}
