"""The live view's pieces: one line per tool call, the outcome line and JSON, stored
arguments, and following a run's records from its start, each once and in order."""

from __future__ import annotations

from pathlib import Path

from tavernlab import Lab
from tavernlab.host import order_key
from tavernlab.models import Usage
from tavernlab.views import _agent as views


def test_a_tool_line_while_running_and_once_ended() -> None:
    args = {"path": "output/main.md", "content": "x" * 80}
    assert views.tool_call_line("builtin:workspace.write_file", args) == (
        '▶ workspace_write_file(path="output/main.md", content="'
        + "x" * 46 + '…(82 chars))')
    assert views.tool_call_line("workspace.finish", {}, status="ok", elapsed_ms=3) == (
        "✓ workspace_finish()  3 ms")
    assert views.tool_call_line("workspace.read_file", {"path": "a"}, status="error",
                                elapsed_ms=1, error_code="workspace.not_found",
                                message="no file a\nmore") == (
        '✗ workspace_read_file(path="a")  1 ms  workspace.not_found: no file a')
    assert views.tool_call_line("workspace.shell", None, status="cancelled",
                                error_code="workspace.shell_cancelled") == (
        "■ workspace_shell()  workspace.shell_cancelled")


def test_the_outcome_line_and_json() -> None:
    usage = Usage(input_tokens=20, output_tokens=10, total_tokens=30)
    assert views.outcome_line("completed", 2, usage, None, model_calls=2, run_id="run_1") == (
        "completed · 2 rounds · 2 model calls · tokens 20 in, 10 out, 30 total · run_1")
    failure = {"code": "agent.max_tool_rounds_exceeded", "message": "too many"}
    assert views.outcome_line("failed", 1, Usage(), failure) == (
        "failed · 1 round · tokens not reported · agent.max_tool_rounds_exceeded: too many")
    assert views.outcome_json("run_1", "failed", 1, Usage(output_tokens=4), failure, [],
                              run_dir="/r") == {
        "runId": "run_1", "status": "failed", "rounds": 1, "usage": {"outputTokens": 4},
        "failure": failure, "commits": [], "runDir": "/r"}


def test_stored_arguments_of_a_loop_call_and_of_a_call_by_hand() -> None:
    assert views.stored_arguments({"path": "a"}) == {"path": "a"}
    assert views.stored_arguments({"callId": "c", "toolId": "t",
                                   "arguments": {"path": "a"}}) == {"path": "a"}
    assert views.stored_arguments({"arguments": 1, "other": 2}) == {"arguments": 1, "other": 2}


def test_follow_shows_earlier_and_later_records_once_in_order(tmp_path: Path) -> None:
    with Lab(tmp_path / "lab") as lab:
        run = lab.start_run(chat_id="c")
        run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "a"})
        seen: list[tuple[str, str]] = []

        def show(record: object) -> None:
            seen.append((record.type, record.payload.call_id))  # type: ignore[attr-defined]

        types = frozenset({"tool_call_requested", "tool_call_completed"})
        subscription = views.follow(run, show, types, order_key)
        run.call_tool("workspace.write_file", {"path": "output/b.md", "content": "b"})
        subscription.close()
        run.call_tool("workspace.write_file", {"path": "output/c.md", "content": "c"})
    assert seen == [("tool_call_requested", "call_1"), ("tool_call_completed", "call_1"),
                    ("tool_call_requested", "call_2"), ("tool_call_completed", "call_2")]
