"""``tavernlab mcp serve`` driven by the ``mcp`` package's own client: over stdio (the real
command in a subprocess) and over streamable HTTP on 127.0.0.1. The served run's records
equal those of a loop run making the same calls one per round."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from process_tree import live_descendants, session_owned
from tests.agent.scripts import call, turn
from tests.agent.wire import Model

from tavernlab import Lab
from tavernlab.mcp_client import McpConnection, StdioServer

SRC = str(Path(__file__).resolve().parents[2] / "src")
ENV = {"PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


def serve_command(lab: Path, *extra: str) -> list[str]:
    return ["-m", "tavernlab.cli", "mcp", "serve", "--lab", str(lab), *extra]


@contextlib.contextmanager
def served(lab: Path, *extra: str) -> Iterator[McpConnection]:
    """A client of ``tavernlab mcp serve`` over stdio (the process ends with it)."""
    connection = McpConnection(StdioServer(sys.executable, serve_command(lab, *extra), ENV))
    try:
        yield connection
    finally:
        connection.close()


def text_of(result: Any) -> tuple[str, bool]:
    return "".join(block.text for block in result.content), bool(result.is_error)


_BEFORE: set[int] = set()


@pytest.fixture(autouse=True)
def _processes_before() -> None:
    """The descendants this test process already had (a session fixture's JupyterLab, the
    process-wide JS pool …): a test checks only for processes it started itself."""
    _BEFORE.clear()
    _BEFORE.update(live_descendants(os.getpid()))


def children() -> list[int]:
    """Live descendants this test started and left running (none of those already there,
    nor the session's own: the process-wide JavaScript pool's workers)."""
    owned = session_owned() | _BEFORE
    return [pid for pid in live_descendants(os.getpid()) if pid not in owned]


def write_profile(tmp_path: Path, profile: dict[str, Any]) -> Path:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile), encoding="utf-8")
    return path


def only_run(lab_dir: Path) -> Any:
    lab = Lab(lab_dir)
    (record,) = lab.runs()
    return lab, lab.open_run(record.id)


#: Event types of the tool calls themselves (what a served call and a loop call share).
CALL_EVENTS = frozenset({
    "tool_call_requested", "tool_call_started", "tool_result_stored", "tool_call_completed",
    "tool_call_failed", "workspace_file_written", "workspace_patch_applied", "round_ended",
    "chat_commit_requested", "chat_commit_confirmed", "chat_commit_rejected",
    "run_committed", "agent_loop_finished", "file_changed", "status_changed",
    "persistent_changes_committed", "agent_invocation_completed", "run_completed"})
HASH = re.compile(r"call_[0-9a-f]{16}")


def normalized(run: Any) -> dict[str, Any]:
    """The run's call records with call ids and record hashes (both ``call_<16 hex>``), run
    ids, times and elapsed milliseconds replaced: the events of :data:`CALL_EVENTS` from the
    first call on, and every stored tool-args and tool-results file."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()
                    if k not in ("elapsedMs", "timestamp", "id", "seq", "runId", "messageId",
                                 "commitId", "stateId")}
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, str):
            return HASH.sub("call_H", value.replace(run.id, "RUN"))
        return value

    lines = [json.loads(line) for line in
             (run.dir / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    first = next(i for i, e in enumerate(lines) if e["type"] == "tool_call_requested")
    events = [clean({"type": e["type"], "payload": e["payload"]}) for e in lines[first:]
              if e["type"] in CALL_EVENTS]
    files = {}
    for folder in ("tool-args", "tool-results"):
        for path in sorted((run.dir / folder).rglob("*.json")) if (
                run.dir / folder).is_dir() else []:
            files[clean(str(path.relative_to(run.dir)))] = clean(json.loads(path.read_text()))
    return {"events": events, "files": files}


def call_ids_of(run: Any) -> list[str]:
    ids: list[str] = []
    for line in (run.dir / "events.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["type"] == "tool_call_requested":
            ids.append(event["payload"]["callId"])
    return ids


def loop_twin(tmp_path: Path, profile: dict[str, Any], calls: list[tuple[str, dict[str, Any]]],
              presentation: str, chat_id: str = "mcp") -> Any:
    """The same calls made by a scripted model through the loop, one call per round."""
    turns = [turn(None, call(f"call_{i:016x}", alias, args)) for i, (alias, args) in
             enumerate(calls)]
    with contextlib.ExitStack() as stack, Lab(tmp_path / "twin") as lab:
        model = Model("scripted", turns, stack)
        outcome = lab.run_agent("An external agent drives this run through tavernlab's MCP "
                                "server.", model=model.provider, profile=profile,
                                chat_id=chat_id, presentation=presentation, stream=False)
        return outcome.run


def test_the_served_tools_are_the_tool_definitions(tmp_path: Path) -> None:
    profile = {"tools": {"deny": ["workspace.shell"]}}
    path = write_profile(tmp_path, profile)
    with served(tmp_path / "lab", "--profile", str(path)) as client:
        tools = client.list_tools()
    with Lab(tmp_path / "other") as lab:
        expected = lab.tool_definitions(profile)
    assert [(t.name, t.description, t.input_schema) for t in tools] == [
        (d["function"]["name"], d["function"]["description"], d["function"]["parameters"])
        for d in expected]
    assert "workspace_shell" not in [t.name for t in tools]
    assert children() == []


def test_write_read_refusal_and_budget_are_recorded_as_loop_calls(tmp_path: Path) -> None:
    profile = {"tools": {"maxCallsPerRun": 3}}
    path = write_profile(tmp_path, profile)
    calls = [("workspace_write_file", {"path": "output/main.md", "content": "hello\n"}),
             ("workspace_read_file", {"path": "output/main.md"}),
             ("workspace_write_file", {"path": "elsewhere/x.md", "content": "no"}),
             ("workspace_list_files", {})]
    with served(tmp_path / "lab", "--profile", str(path), "--presentation",
                "background") as client:
        answers = [text_of(client.call_tool(alias, args)) for alias, args in calls]
    assert answers[0] == ("Wrote 6 chars / 1 words to output/main.md.", False)
    assert answers[1] == ("output/main.md lines 1-2 of 2, chars 6 of 6, words 1 of 1\n"
                          "1 | hello\n2 | ", False)
    assert answers[2][1] is True and answers[2][0].startswith("## Tool error\n\n")
    assert "elsewhere/x.md" in answers[2][0]
    assert answers[3] == ("## Tool error\n\nThe tool call limit for this task has been "
                          "reached (3 calls).", True)
    lab, run = only_run(tmp_path / "lab")
    with lab:
        assert run.read("output/main.md") == "hello\n"
        assert run.status == "cancelled"  # the client went away before finishing
        twin = loop_twin(tmp_path, profile, calls, "background")
        served_records = normalized(run)
        twin_records = normalized(twin)
    assert served_records["files"] == twin_records["files"]
    calls_part = served_records["events"]  # up to the end of the last call
    calls_part = calls_part[:max(i for i, e in enumerate(calls_part) if e["type"] in (
        "tool_call_completed", "tool_call_failed")) + 1]
    assert [e["type"] for e in calls_part].count("tool_call_requested") == 4
    assert calls_part == twin_records["events"][:len(calls_part)]
    assert children() == []


def test_finish_ends_the_run_and_later_calls_name_it(tmp_path: Path) -> None:
    calls = [("workspace_write_file", {"path": "output/main.md", "content": "Done."}),
             ("workspace_commit", {}), ("workspace_finish", {"reason": "done"})]
    with served(tmp_path / "lab", "--chat", "alice") as client:
        answers = [text_of(client.call_tool(alias, args)) for alias, args in calls]
        after = text_of(client.call_tool("workspace_list_files", {}))
    assert answers[2] == ("Finished the Agent run.", False)
    lab, run = only_run(tmp_path / "lab")
    with lab:
        assert after == (f"## Tool error\n\nRun `{run.id}` is completed; it takes no more "
                         "tool calls. Start a new run to continue.", True)
        assert run.status == "completed"
        assert lab.chat("alice").messages[-1].body == "Done."
        twin = loop_twin(tmp_path, {}, calls, "foreground", "alice")
        assert twin.status == "completed"
        mine, theirs = normalized(run), normalized(twin)
        assert mine["files"] == theirs["files"]
        for index, (a, b) in enumerate(zip(mine["events"], theirs["events"], strict=False)):
            assert a == b, (index, a, b)
        assert len(mine["events"]) == len(theirs["events"])
    assert children() == []


def test_a_malformed_message_gets_a_json_rpc_error_and_serving_goes_on(tmp_path: Path
                                                                       ) -> None:
    process = subprocess.Popen([sys.executable, *serve_command(tmp_path / "lab")],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env={**os.environ, **ENV})
    assert process.stdin is not None and process.stdout is not None

    def send(message: Any) -> None:
        assert process.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        process.stdin.write(data + b"\n")
        process.stdin.flush()

    def answer() -> dict[str, Any]:
        assert process.stdout is not None
        found: dict[str, Any] = json.loads(process.stdout.readline())
        return found

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        assert answer()["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(b"{this is not json")
        assert answer() == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32700, "message": "Parse error: the line is not JSON"}}
        send({"hello": "world"})
        assert answer()["error"]["code"] == -32600
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "workspace_write_file",
            "arguments": {"path": "output/main.md", "content": "still here"}}})
        reply = answer()
        assert reply["id"] == 2
        assert reply["result"]["content"][0]["text"] == (
            "Wrote 10 chars / 2 words to output/main.md.")
    finally:
        process.stdin.close()
        process.wait(60)
    assert process.returncode == 0
    assert children() == []


def test_a_call_outside_the_snapshot_is_an_error_result(tmp_path: Path) -> None:
    with served(tmp_path / "lab") as client:
        assert text_of(client.call_tool("workspace_delete_everything", {})) == (
            "## Tool error\n\nUnknown tool `workspace_delete_everything`.", True)


def test_an_active_run_is_served_from_its_round(tmp_path: Path) -> None:
    with Lab(tmp_path / "lab") as lab:
        run = lab.start_run("bob", presentation="background")
        run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "by hand"})
        run_id = run.id
    with served(tmp_path / "lab", "--run", run_id) as client:
        text, is_error = text_of(client.call_tool("workspace_read_file",
                                                  {"path": "output/a.md"}))
    assert not is_error and text.endswith("1 | by hand")
    with Lab(tmp_path / "lab") as lab:
        reopened = lab.open_run(run_id)
        assert reopened.status not in ("completed", "failed", "cancelled")
        requested = [e for e in reopened.events() if e.type == "tool_call_requested"]
        assert [e.payload.tool_id for e in requested] == [  # type: ignore[union-attr]
            "workspace.write_file", "builtin:workspace.read_file"]


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, *serve_command(tmp_path / "lab", "--run", "r",
                                                          "--profile", "p.json")],
                          capture_output=True, text=True, env={**os.environ, **ENV},
                          timeout=120)
    assert done.returncode == 2
    assert "not with --run" in done.stderr


@pytest.fixture
def http_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_over_streamable_http_on_127_0_0_1(tmp_path: Path, http_port: int) -> None:
    process = subprocess.Popen([sys.executable, *serve_command(
        tmp_path / "lab", "--http", str(http_port), "--presentation", "background")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, **ENV})
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", http_port), timeout=1):
                break
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        with McpConnection(f"http://127.0.0.1:{http_port}/mcp") as client:
            names = [t.name for t in client.list_tools()]
            assert "workspace_write_file" in names
            assert text_of(client.call_tool("workspace_write_file", {
                "path": "output/main.md", "content": "over http"}))[1] is False
            assert text_of(client.call_tool("workspace_finish", {})) == (
                "Finished the Agent run.", False)
    finally:
        process.terminate()
        process.wait(60)
    lab, run = only_run(tmp_path / "lab")
    with lab:
        assert (run.status, run.read("output/main.md")) == ("completed", "over http")
    assert children() == []


def test_a_call_the_client_cancels_is_cancelled_in_the_run(tmp_path: Path) -> None:
    from tavernlab.cancel import CancelToken
    from tavernlab.mcp_client import McpCallCancelled

    with served(tmp_path / "lab", "--presentation", "background") as client:
        token = CancelToken()
        timer = threading.Timer(2.0, token.cancel)
        timer.start()
        with pytest.raises(McpCallCancelled):
            client.call_tool("workspace_shell", {"command": "sleep 60; echo late"},
                             timeout=120, cancel=token)
        answer = text_of(client.call_tool("workspace_write_file", {
            "path": "output/main.md", "content": "after"}))
        assert answer[1] is False  # the run goes on
    lab, run = only_run(tmp_path / "lab")
    with lab:
        failed = [e.payload for e in run.events() if e.type == "tool_call_failed"]
        assert [getattr(p, "error_code", None) for p in failed] == [
            "workspace.shell_cancelled"]
        assert run.read("output/main.md") == "after"
    assert children() == []


def test_a_served_run_offers_the_mcp_tools_its_profile_names(tmp_path: Path) -> None:
    server = str(Path(__file__).resolve().parents[1] / "agent" / "mcp_tool_server.py")
    profile = {"mcp": {"servers": {"s": {"command": sys.executable,
                                         "args": [server, "issues"]}}}}
    path = write_profile(tmp_path, profile)
    with served(tmp_path / "lab", "--profile", str(path), "--presentation",
                "background") as client:
        names = [t.name for t in client.list_tools()]
        assert names[-4:] == ["mcp__s__issue_create", "mcp__s__echo", "mcp__s__env",
                              "mcp__s__fail"]
        assert text_of(client.call_tool("mcp__s__echo", {"text": "through"})) == (
            "echo: through", False)
        assert text_of(client.call_tool("workspace_finish", {}))[1] is False
    lab, run = only_run(tmp_path / "lab")
    with lab:
        requested = [e.payload for e in run.events() if e.type == "tool_call_requested"]
        assert [getattr(p, "tool_id", None) for p in requested] == [
            "mcp/s/echo", "builtin:workspace.finish"]
    assert children() == []
