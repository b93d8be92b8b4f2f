"""External tools over MCP in the loop: real MCP servers made with the ``mcp`` package
(``mcp_tool_server.py``), over stdio and over streamable HTTP on 127.0.0.1, driven by the
scripted model and (one case) the real ``openai`` client against a local server."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from process_tree import live_descendants, session_owned
from tests.agent.mcp_tool_server import ISSUE_CHARS, big_text, issue_text
from tests.agent.scripts import by_call, call, finish, payloads, stored, turn, write
from tests.agent.wire import Model

from tavernlab import Lab
from tavernlab.agent._mcp import mcp_alias, unique_alias

SERVER = str(Path(__file__).with_name("mcp_tool_server.py"))
RECORD = "round-001-call_fe79da5f09df9787"


def stdio(variant: str, **extra: Any) -> dict[str, Any]:
    """A Profile's stdio server entry for ``variant``."""
    return {"command": sys.executable, "args": [SERVER, variant], **extra}


def mcp_profile(servers: dict[str, Any], **tools: Any) -> dict[str, Any]:
    """A background Profile with ``servers`` and ``tools`` settings."""
    return {"tools": tools, "mcp": {"servers": servers}}


_BEFORE: set[int] = set()


@pytest.fixture(autouse=True)
def _processes_before() -> None:
    """The descendants this test process already had (a session fixture's server, the
    process-wide JS pool …): a test checks only for processes it started itself."""
    import os

    _BEFORE.clear()
    _BEFORE.update(live_descendants(os.getpid()))


def children() -> list[int]:
    """The live processes this test started and left running."""
    import os

    owned = session_owned() | _BEFORE
    return [pid for pid in live_descendants(os.getpid()) if pid not in owned]


@pytest.fixture
def http_server() -> Iterator[Any]:
    """``http_server(variant)`` → the URL of a streamable-HTTP server on 127.0.0.1 (its
    process ends with the test)."""
    started: list[subprocess.Popen[bytes]] = []

    def start(variant: str) -> str:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        process = subprocess.Popen([sys.executable, SERVER, variant, "--http", str(port)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(process)
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", port), timeout=1):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the MCP test server did not start")
            time.sleep(0.05)
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for process in started:
        process.terminate()
        process.wait(10)


def scripted(turns: list[dict[str, Any]], stack: contextlib.ExitStack, kind: str = "scripted"
             ) -> Model:
    return Model(kind, turns, stack)


def externalized_case(lab: Lab, server: dict[str, Any], kind: str = "scripted") -> None:
    """Case 16 through ``server`` (a Profile server entry for the ``issues`` variant)."""
    txt = f"tool-results/inv_root/{RECORD}.txt"
    audit = f"tool-results/inv_root/{RECORD}.json"
    turns = [turn(None, call("call_mcp", "mcp__my_server__issue_create", {"title": "Bug"})),
             turn(None, call("call_read", "workspace_read_file", {"path": txt})),
             turn(None, finish())]
    profile = mcp_profile(
        {"my_server": {**server, "toolDescriptions": {
            "issue_create": {"description": "Registration description."}}}},
        externalResultInlineCharLimit=10_000,
        toolDescriptions={"mcp/my_server/issue_create": {
            "description": "Profile description.",
            "properties": {"title": "The issue's title."}}})
    with contextlib.ExitStack() as stack:
        model = scripted(turns, stack, kind)
        outcome = lab.run_agent("File the issue.", model=model.provider, profile=profile,
                                presentation="background")
        run = outcome.run
        assert (outcome.status, outcome.failure) == ("completed", None), outcome.failure
        assert "mcp__my_server__issue_create" in model.sent[0].tools
        snapshot = stored(run, "input/invocations/inv_root/tool_snapshot.json")
        binding = next(b for b in snapshot["bindings"]
                       if b["modelAlias"] == "mcp__my_server__issue_create")
        descriptor = binding["descriptor"]
        assert descriptor["id"] == "mcp/my_server/issue_create"
        assert descriptor["description"] == "Profile description."
        assert descriptor["inputSchema"]["properties"]["title"]["description"] == (
            "The issue's title.")
        assert descriptor["inputSchema"]["required"] == ["title"]
        content = model.sent[1].tool_texts[0]
        assert "preview" in content and "workspace_read_file" in content
        assert len(content) < 10_000
        assert f"`{txt}`" in content and audit not in content
        preview = content.split("is not the complete result.\n\n", 1)[1]
        assert preview == issue_text()[:3000]
        requested = by_call(run, "tool_call_requested", "call_mcp")[0]
        assert (requested["toolId"], requested["name"]) == (
            "mcp/my_server/issue_create", "mcp/my_server/issue_create")
        assert stored(run, requested["argumentsRef"]) == {"title": "Bug"}
        completed = by_call(run, "tool_call_completed", "call_mcp")[0]
        assert completed["resourceRefs"] == [txt, audit]
        views = payloads(run, "tool_result_readable_view_stored")
        assert views == [{"invocationId": "inv_root", "round": 1, "callId": "call_mcp",
                          "toolId": "mcp/my_server/issue_create", "path": txt,
                          "auditPath": audit}]
        record = stored(run, audit)
        assert record["content"] == issue_text() and len(record["content"]) == ISSUE_CHARS
        assert (record["toolId"], record["isError"]) == ("mcp/my_server/issue_create", False)
        view = (run.workspace_dir / txt).read_text(encoding="utf-8")
        assert all(len(line) <= 3000 for line in view.split("\n"))
        assert view.replace("\n", "") == issue_text().replace("\n", "")
        read = stored(run, f"tool-results/inv_root/round-002-call_{_hash('call_read')}.json")
        assert read["structured"]["fullRead"] is True
        assert read["structured"]["totalChars"] == len(view)
        if kind == "scripted":  # the structured facts the model's record keeps
            result = model.sent[1].body["messages"][-1]["parts"][0]["result"]
            assert result["structured"] == {
                "externalized": True, "path": txt, "auditPath": audit,
                "charCount": ISSUE_CHARS, "charLimit": 10_000}
            assert result["resourceRefs"] == [txt, audit]


def _hash(call_id: str) -> str:
    import hashlib

    return hashlib.sha256(call_id.encode()).hexdigest()[:16]


def test_agent_runtime_executes_cached_mcp_tool_through_readable_alias(lab: Lab) -> None:
    externalized_case(lab, stdio("issues"))
    assert children() == []


def test_the_externalized_case_over_streamable_http(lab: Lab, http_server: Any) -> None:
    externalized_case(lab, {"url": http_server("issues")})


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_the_externalized_case_through_the_real_clients(lab: Lab, kind: str) -> None:
    externalized_case(lab, stdio("issues"), kind=kind)
    assert children() == []


@pytest.mark.parametrize("kind", ["scripted", "openai", "anthropic"])
def test_agent_runtime_stops_after_unknown_mcp_call_outcome(lab: Lab, kind: str) -> None:
    turns = [turn(None, call("call_boom", "mcp__crashy__boom"),
                  write("call_after", "output/main.md", "never"))]
    with contextlib.ExitStack() as stack:
        model = scripted(turns, stack, kind)
        outcome = lab.run_agent("Go.", model=model.provider,
                                profile=mcp_profile({"crashy": stdio("crash")}),
                                presentation="background")
        run = outcome.run
        assert outcome.status == "failed"
        assert outcome.failure is not None
        assert outcome.failure["code"] == "mcp.call_outcome_unknown"
        failed = payloads(run, "run_failed")[0]
        assert failed["code"] == "mcp.call_outcome_unknown"
        tool_failed = by_call(run, "tool_call_failed", "call_boom")
        assert [f["errorCode"] for f in tool_failed] == ["mcp.call_outcome_unknown"]
        assert by_call(run, "tool_call_requested", "call_after") == []
        assert not (run.workspace_dir / "output/main.md").exists() or \
            run.read("output/main.md") != "never"
        assert len(model.sent) == 1
        blocked = stored(run, "run.json")["blockedReason"]
        assert blocked.startswith("Tool call_boom (mcp/crashy/boom) has no confirmed result: "
                                  "mcp.call_outcome_unknown: ")
        from tavernlab.errors import RunStateError

        with pytest.raises(RunStateError, match="cannot be resumed: Tool call_boom"):
            run.resume()
        assert lab.open_run(run.id).status == "failed"
    assert children() == []


def test_a_call_that_never_answers_is_an_unknown_outcome_after_the_timeout(lab: Lab) -> None:
    turns = [turn(None, call("call_hang", "mcp__slow__hang"),
                  write("call_after", "output/main.md", "never"))]
    with contextlib.ExitStack() as stack:
        model = scripted(turns, stack)
        profile = mcp_profile({"slow": stdio("hang")})
        profile["mcp"]["callTimeoutMs"] = 1000
        outcome = lab.run_agent("Go.", model=model.provider, profile=profile,
                                presentation="background")
        assert outcome.failure is not None
        assert outcome.failure["code"] == "mcp.call_outcome_unknown"
        assert "no answer within 1 s" in outcome.failure["message"]
        assert by_call(outcome.run, "tool_call_requested", "call_after") == []
    assert children() == []


def test_cancelling_the_run_cancels_the_started_call(lab: Lab) -> None:
    turns = [turn(None, call("call_hang", "mcp__slow__hang"),
                  write("call_after", "output/main.md", "never"))]
    with contextlib.ExitStack() as stack:
        model = scripted(turns, stack)
        handle = lab.start_agent("Go.", model=model.provider,
                                 profile=mcp_profile({"slow": stdio("hang")}),
                                 presentation="background")
        deadline = time.monotonic() + 60
        while not by_call(handle.run, "tool_call_started", "call_hang"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        handle.cancel()
        outcome = handle.wait(60)
        assert outcome.status == "cancelled"
        result = stored(outcome.run, by_call(outcome.run, "tool_result_stored",
                                             "call_hang")[0]["path"])
        assert (result["errorCode"], result["isError"]) == ("tool.cancelled", True)
        assert by_call(outcome.run, "tool_call_requested", "call_after") == []
    assert children() == []


def test_a_10_mib_result_is_externalized_whole(lab: Lab) -> None:
    turns = [turn(None, call("call_big", "mcp__big__big")), turn(None, finish())]
    with contextlib.ExitStack() as stack:
        model = scripted(turns, stack)
        outcome = lab.run_agent("Go.", model=model.provider,
                                profile=mcp_profile({"big": stdio("big")}),
                                presentation="background")
        run = outcome.run
        assert outcome.status == "completed"
        record_name = f"round-001-call_{_hash('call_big')}"
        record = stored(run, f"tool-results/inv_root/{record_name}.json")
        expected = big_text()
        assert record["content"] == expected
        content = model.sent[1].tool_texts[0]
        assert f"({len(expected)} characters)" in content
        assert content.endswith(expected[:3000])
        view = (run.workspace_dir / f"tool-results/inv_root/{record_name}.txt").read_text()
        assert view.replace("\n", "") == expected.replace("\n", "")
    assert children() == []


def test_colliding_names_get_unique_aliases_and_route_to_their_tools(lab: Lab) -> None:
    turns = [turn(None,
                  call("c1", "mcp__x__a_b"), call("c2", "mcp__x__a_b__2"),
                  call("c3", "mcp__x__a_b__3"), call("c4", "mcp__x__workspace_write_file"),
                  call("c5", "mcp__y__a_b"),
                  write("c6", "output/main.md", "builtin still writes")),
             turn(None, finish())]
    servers = {"x": stdio("collide"), "y": stdio("collide")}
    with contextlib.ExitStack() as stack:
        model = scripted(turns, stack)
        outcome = lab.run_agent("Go.", model=model.provider, profile=mcp_profile(servers),
                                presentation="background")
        run = outcome.run
        assert outcome.status == "completed", outcome.failure
        tools = model.sent[0].tools
        long_alias = mcp_alias("x", "n" * 80)
        assert len(long_alias.encode()) == 64
        assert tools[tools.index("workspace_finish") + 1:] == [
            "mcp__x__workspace_write_file", "mcp__x__a_b", "mcp__x__a_b__2", "mcp__x__a_b__3",
            long_alias, "mcp__y__workspace_write_file", "mcp__y__a_b", "mcp__y__a_b__2",
            "mcp__y__a_b__3", mcp_alias("y", "n" * 80)]
        assert "workspace_write_file" in tools
        texts = model.sent[1].tool_texts
        assert texts[:5] == ["dot", "underscore", "space", "external write", "dot"]
        assert [by_call(run, "tool_call_requested", c)[0]["toolId"]
                for c in ("c1", "c2", "c3", "c4", "c5", "c6")] == [
            "mcp/x/a.b", "mcp/x/a_b", "mcp/x/a b", "mcp/x/workspace_write_file", "mcp/y/a.b",
            "builtin:workspace.write_file"]
        assert run.read("output/main.md") == "builtin still writes"
    assert children() == []


def test_an_error_result_is_a_recoverable_tool_error(lab: Lab) -> None:
    turns = [turn(None, call("call_fail", "mcp__s__fail", {"text": "no"}),
                  call("call_echo", "mcp__s__echo", {"text": "hi", "extra": 1})),
             turn(None, finish())]
    with contextlib.ExitStack() as stack:
        model = scripted(turns, stack)
        outcome = lab.run_agent("Go.", model=model.provider,
                                profile=mcp_profile({"s": stdio("issues")}),
                                presentation="background")
        assert outcome.status == "completed"
        failed = by_call(outcome.run, "tool_call_failed", "call_fail")[0]
        assert failed["errorCode"] == "mcp.tool_error"
        assert model.sent[1].tool_texts == [
            "## Tool error\n\nError executing tool fail",
            "## Tool error\n\nextra is not supported"]


def test_a_denied_mcp_tool_is_not_shown(lab: Lab) -> None:
    turns = [turn(None, finish())]
    with contextlib.ExitStack() as stack:
        model = scripted(turns, stack)
        profile = mcp_profile({"s": stdio("issues")})
        profile["tools"]["deny"] = ["mcp/s/fail"]
        lab.run_agent("Go.", model=model.provider, profile=profile, presentation="background")
        assert [t for t in model.sent[0].tools if t.startswith("mcp__")] == [
            "mcp__s__issue_create", "mcp__s__echo", "mcp__s__env"]


def test_tool_definitions_list_the_servers_tools_and_stop_them(lab: Lab) -> None:
    shown = lab.tool_definitions(mcp_profile({"s": stdio("issues")}))
    names = [t["function"]["name"] for t in shown]
    assert names[-4:] == ["mcp__s__issue_create", "mcp__s__echo", "mcp__s__env",
                          "mcp__s__fail"]
    assert children() == []


@pytest.mark.parametrize("url", ["http://example.com/mcp", "http://10.0.0.1:80/mcp",
                                 "ftp://127.0.0.1/mcp"])
def test_a_server_not_on_this_machine_is_refused(lab: Lab, url: str) -> None:
    from tavernlab.errors import UsageError

    with pytest.raises((UsageError, ValueError), match="MCP server url"):
        lab.tool_definitions(mcp_profile({"far": {"url": url}}))


def test_a_server_that_cannot_start_fails_the_run(lab: Lab) -> None:
    with contextlib.ExitStack() as stack:
        model = scripted([turn(None, finish())], stack)
        outcome = lab.run_agent("Go.", model=model.provider, profile=mcp_profile(
            {"gone": {"command": sys.executable, "args": ["-c", "raise SystemExit(2)"]}}),
            presentation="background")
        assert outcome.failure is not None
        assert outcome.failure["code"] == "mcp.server_unavailable"
        assert model.sent == []
    assert children() == []


def test_aliases_are_normalized_cut_to_64_bytes_and_made_unique() -> None:
    assert mcp_alias("my.server", "issue create!") == "mcp__my_server__issue_create"
    assert mcp_alias("--a--", "__b__") == "mcp__--a--__b"
    base = mcp_alias("s", "t" * 100)
    assert base == ("mcp__s__" + "t" * 100)[:64]
    assert unique_alias(base, {base}) == base[:61] + "__2"
    assert unique_alias(base, {base, base[:61] + "__2"}) == base[:61] + "__3"
    assert unique_alias("inspect", {"workspace_write_file"}) == "inspect"


@pytest.mark.parametrize(("tool_id", "kind"), [
    ("mcp/my_server/issue_create", "mcp"), ("builtin:workspace.shell", "shell"),
    ("workspace.shell", "shell"), ("builtin:workspace.finish", "finish"),
    ("builtin:workspace.read_file", "tool")])
def test_the_timeline_marks_mcp_calls_as_their_own_kind(tool_id: str, kind: str) -> None:
    from tavernlab.notebook.widgets._timeline_state import kind_of_tool

    assert kind_of_tool(tool_id) == kind


def test_the_notice_names_only_the_readers_the_snapshot_has(lab: Lab) -> None:
    turns = [turn(None, call("call_mcp", "mcp__s__issue_create", {"title": "t"})),
             turn(None, call("call_fail", "mcp__s__fail", {"text": "x"})),
             turn(None, finish())]
    allow = ["workspace.read_file", "workspace.finish"]
    with contextlib.ExitStack() as stack:
        model = scripted(turns, stack)
        outcome = lab.run_agent("Go.", model=model.provider, profile=mcp_profile(
            {"s": stdio("issues")}, allow=allow, externalResultInlineCharLimit=1000),
            presentation="background")
        content = model.sent[1].tool_texts[0]
        assert "Use workspace_read_file with this path" in content
        assert "workspace_search_files" not in content
        failed = by_call(outcome.run, "tool_call_failed", "call_fail")[0]
        assert failed["message"] == ("External tool returned an error; full result: "
                                     f"tool-results/inv_root/round-002-call_"
                                     f"{_hash('call_fail')}.json")


def test_a_credential_reaches_the_server_from_the_environment_and_is_never_written(
        lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-" + "9" * 24
    monkeypatch.setenv("TAVERNLAB_TEST_MCP_TOKEN", secret)
    turns = [turn(None, call("c1", "mcp__s__env", {"name": "TAVERNLAB_TEST_MCP_TOKEN"}),
                  call("c2", "mcp__s__env", {"name": "PLAIN"})),
             turn(None, finish())]
    server = stdio("issues", env={"PLAIN": "plain value"},
                   envFrom=["TAVERNLAB_TEST_MCP_TOKEN"])
    with contextlib.ExitStack() as stack:
        model = scripted(turns, stack)
        outcome = lab.run_agent("Go.", model=model.provider,
                                profile=mcp_profile({"s": server}), presentation="background")
        assert model.sent[1].tool_texts == [secret, "plain value"]
        profile = stored(outcome.run, "input/resolved_profile.json")
        assert profile["mcp"]["servers"]["s"]["envFrom"] == ["TAVERNLAB_TEST_MCP_TOKEN"]
        # the result itself holds the value (the server returned it); nothing else does
        leaks = [p for p in outcome.run.dir.rglob("*") if p.is_file()
                 and secret in p.read_text(errors="replace")
                 and "tool-results" not in p.parts and "model-responses" not in p.parts
                 and p.name != "events.jsonl"]
        assert leaks == []
    monkeypatch.delenv("TAVERNLAB_TEST_MCP_TOKEN")
    with contextlib.ExitStack() as stack:
        model = scripted([turn(None, finish())], stack)
        missing = lab.run_agent("Go.", model=model.provider,
                                profile=mcp_profile({"s": server}), presentation="background")
        assert missing.failure is not None
        assert missing.failure["message"] == ("MCP server `s` needs the environment variable "
                                              "TAVERNLAB_TEST_MCP_TOKEN, which is not set")


def test_a_tool_listed_twice_is_a_duplicate_id_in_the_snapshot(lab: Lab) -> None:
    from tavernlab.agent import build_snapshot
    from tavernlab.errors import AgentError
    from tavernlab.workspace.roots import Profile
    from tavernlab.workspace.tools import ToolResult, ToolSpec

    tool = ToolSpec(id="mcp/s/t", handler=lambda ctx, args: ToolResult(content=""),
                    mutating=False, description="t", arguments=(),
                    input_schema={"type": "object"}, alias="mcp__s__t", builtin=False)
    shown = build_snapshot(lab.tools, Profile(), "inv_root", external=[tool])
    assert shown.bindings[-1].alias == "mcp__s__t"
    with pytest.raises(AgentError) as raised:
        build_snapshot(lab.tools, Profile(), "inv_root", external=[tool, tool])
    assert raised.value.code == "tool.snapshot_duplicate_id"


def test_a_servers_tools_are_declared_as_tool_specs_and_shown_from_them(lab: Lab) -> None:
    """An MCP tool is declared with the one tool contract (external: its own id, its
    declared alias); the snapshot shows what the declaration holds."""
    from tavernlab.agent import build_snapshot
    from tavernlab.agent._mcp import McpTools
    from tavernlab.workspace.roots import Profile
    from tavernlab.workspace.tools import ToolSpec

    profile = Profile.model_validate(mcp_profile(
        {"s": stdio("issues", toolDescriptions={"echo": {"description": "Say it again."}})}))
    tools = McpTools()
    try:
        specs = tools.tools_for(profile)
    finally:
        tools.close()
    assert all(isinstance(spec, ToolSpec) and not spec.builtin for spec in specs)
    assert [(spec.id, spec.full_id, spec.model_name) for spec in specs] == [
        ("mcp/s/issue_create", "mcp/s/issue_create", "mcp__s__issue_create"),
        ("mcp/s/echo", "mcp/s/echo", "mcp__s__echo"),
        ("mcp/s/env", "mcp/s/env", "mcp__s__env"),
        ("mcp/s/fail", "mcp/s/fail", "mcp__s__fail")]
    echo = specs[1]
    assert (echo.description, echo.arguments, echo.schema["properties"]["text"]["type"]) == (
        "Say it again.", ("text",), "string")
    snapshot = build_snapshot(lab.tools, profile, "inv_root", external=specs)
    for spec in specs:
        binding = snapshot.by_id(spec.full_id)
        assert binding is not None and binding.spec is spec
        assert binding.alias == spec.model_name
        assert binding.descriptor() == spec.descriptor()
    assert children() == []
