"""Run records on disk (docs/layout.md) and the run lifecycle."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from tavernlab.clock import SYSTEM_CLOCK, RandomIds
from tavernlab.errors import TavernlabError
from tavernlab.events import ContextAssembled, ContextSummary, EventLog, ToolCallFailed
from tavernlab.host import DEFAULT_TOOLS, Lab
from tavernlab.workspace.records import RunRecord, read_json
from tavernlab.workspace.roots import Profile, workspace_id
from tavernlab.workspace.tools import ToolResult, ToolSpec

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path / "lab")


def test_layout_run_json_and_manifest(lab: Lab) -> None:
    run = lab.start_run(chat_id="abc", context={"variables": {"local": {}, "global": {}}})
    wid = workspace_id("character", "abc")
    assert run.dir == lab.root / "_tauritavern" / "agent-workspaces" / "chats" / wid / "runs" \
        / run.id
    assert re.fullmatch(r"run_[0-9a-f]{32}", run.id)
    for name in ("output", "scratch", "plan", "summaries", "persist", "tool-results"):
        assert (run.dir / name).is_dir()
    assert not (run.dir / "skills").exists()
    for name in ("prompt_snapshot.json", "resolved_profile.json", "persist_snapshot.json"):
        assert (run.dir / "input" / name).is_file()
    record = read_json(run.dir / "run.json")
    assert record["target"] == {"kind": "chat", "workspaceId": wid, "stableChatId": "abc",
                                "chatRef": {"kind": "character", "stableChatId": "abc"},
                                "inputMessageCount": 0}
    assert record["presentation"] == "foreground"
    assert record["status"] == "calling_model"
    assert record["generationType"] == "normal"
    assert RFC3339.match(record["createdAt"]) and RFC3339.match(record["updatedAt"])
    index = lab.root / "_tauritavern" / "agent-workspaces" / "index"
    assert read_json(index / "runs" / f"{run.id}.json") == record
    assert read_json(index / "run-summaries" / f"{run.id}.json")["status"] == "calling_model"
    manifest = read_json(run.dir / "manifest.json")
    assert manifest["runId"] == run.id and manifest["stableChatId"] == "abc"
    roots = {r["path"]: r for r in manifest["roots"]}
    assert sorted(roots) == ["output", "persist", "plan", "scratch", "skills", "summaries",
                             "tool-results"]
    assert roots["persist"] == {"path": "persist", "lifecycle": "persistent", "scope": "chat",
                                "mount": "projected_overlay", "visible": True,
                                "writable": True, "commit": "on_run_completed"}
    assert roots["output"] == {"path": "output", "lifecycle": "run", "scope": "run",
                               "mount": "materialized", "visible": True, "writable": True,
                               "commit": "never"}
    assert roots["skills"]["writable"] is False and roots["tool-results"]["writable"] is False
    assert manifest["artifacts"] == [{"id": "message_body", "path": "output/main.md",
                                      "kind": "markdown", "target": "message_body",
                                      "required": False, "assemblyOrder": 0}]
    assert manifest["commitPolicy"] == {"defaultTarget": "message_body",
                                        "storeArtifactsInExtra": True}
    assert manifest["input"] == {"mode": "snapshot",
                                 "promptSnapshotPath": "input/prompt_snapshot.json",
                                 "resolvedProfilePath": "input/resolved_profile.json"}


def test_events_are_contiguous_and_pin_their_payloads(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "hi"},
                  call_id="call_1")
    failed = run.call_tool("workspace.read_file", {"path": "output/none.md"})
    lines = (run.dir / "events.jsonl").read_text().splitlines()
    raw = [json.loads(line) for line in lines]
    assert [e["seq"] for e in raw] == list(range(1, len(raw) + 1))
    assert all(e["runId"] == run.id and RFC3339.match(e["timestamp"]) for e in raw)
    assert all(re.fullmatch(r"evt_[0-9a-f]{32}", e["id"]) for e in raw)
    assert raw[0]["type"] == "run_created"
    stored = next(e for e in raw if e["type"] == "tool_result_stored")["payload"]
    inv = run.internals.main.id
    assert stored == {"invocationId": inv, "round": 1, "callId": "call_1",
                      "toolId": "workspace.write_file",
                      "path": f"tool-results/{inv}/round-001-call_74196fe72e4cdc13.json"}
    completed = next(e for e in raw if e["type"] == "tool_call_completed")
    assert completed["level"] == "info"
    assert set(completed["payload"]) == {"round", "invocationId", "callId", "toolId",
                                         "snapshotId", "name", "isError", "errorCode",
                                         "message", "elapsedMs", "resourceRefs"}
    assert completed["payload"]["name"] == "workspace_write_file"
    assert completed["payload"]["resourceRefs"] == ["output/main.md"]
    fail = next(e for e in run.events() if isinstance(e, ToolCallFailed))
    assert fail.level == "warn"
    assert (fail.payload.is_error, fail.payload.error_code, fail.payload.call_id) == (
        True, "workspace.file_not_found", failed.call_id)
    stored_file = read_json(run.dir / stored["path"])
    assert stored_file == {"callId": "call_1", "toolId": "workspace.write_file",
                           "content": "Wrote 2 chars / 1 words to output/main.md.",
                           "structured": {"path": "output/main.md", "mode": "replace",
                                          "chars": 2, "words": 1,
                                          "sha256": stored_file["structured"]["sha256"]},
                           "isError": False, "errorCode": None,
                           "resourceRefs": ["output/main.md"]}
    args_file = run.dir / "tool-args" / inv / "round-001-call_74196fe72e4cdc13.json"
    assert read_json(args_file)["arguments"] == {"path": "output/main.md", "content": "hi"}
    statuses = [e.payload.status for e in run.events(types="status_changed", journal=False)]
    moves = list(zip(["created", *statuses], statuses, strict=False))
    assert statuses[:3] == ["initializing_workspace", "assembling_context", "calling_model"]
    assert ("calling_model", "dispatching_tool") in moves
    assert ("dispatching_tool", "calling_model") in moves


def test_concurrent_event_appends_stay_contiguous(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    log = EventLog(run.dir / "events.jsonl", run.id, clock=SYSTEM_CLOCK, ids=RandomIds())

    def emit() -> None:
        for _ in range(50):
            log.append(ContextAssembled, ContextSummary(has_host_context=False))

    threads = [threading.Thread(target=emit) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seqs = [e.seq for e in run.events(journal=False)]
    assert seqs == list(range(1, len(seqs) + 1))


@pytest.fixture
def echo_lab(tmp_path: Path) -> Lab:
    """A lab whose registry adds ``test.echo`` to the default tools."""
    def handler(ctx, args):  # type: ignore[no-untyped-def]
        return ToolResult(content=args.string("text", required=True), structured={"ok": 1})

    spec = ToolSpec(id="test.echo", handler=handler, mutating=False, description="echo",
                    arguments=("text",))
    return Lab(tmp_path / "echo-lab", tools=[*DEFAULT_TOOLS, spec])


def test_long_external_results_get_a_readable_view(echo_lab: Lab) -> None:
    run = echo_lab.start_run(chat_id="alice",
                             profile={"tools": {"externalResultInlineCharLimit": 5000}})
    text = "".join(chr(ord("a") + i % 26) for i in range(7000))
    result = run.call_tool("test.echo", {"text": text}, call_id="call_x")
    inv = run.internals.main.id
    view = f"tool-results/{inv}/round-001-{_stem('call_x')}.txt"
    audit = f"tool-results/{inv}/round-001-{_stem('call_x')}.json"
    assert result.structured == {"externalized": True, "path": view, "auditPath": audit,
                                 "charCount": 7000, "charLimit": 5000}
    assert result.content.startswith("This tool result is too large to include in full "
                                     f"(7000 characters). The full result is saved at `{view}`.")
    assert result.content.endswith("\n\n" + text[:3000])
    assert result.resource_refs == [view, audit]
    assert run.read(view).split("\n") == [text[:3000], text[3000:6000], text[6000:]]
    assert read_json(run.workspace_dir / audit)["content"] == text
    payload = run.events(types="tool_result_readable_view_stored", journal=False)[0].payload
    assert (payload.path, payload.audit_path) == (view, audit)
    short = run.call_tool("test.echo", {"text": "hi"})
    assert short.content == "hi" and short.structured == {"ok": 1}


def _stem(call_id: str) -> str:
    import hashlib

    return "call_" + hashlib.sha256(call_id.encode()).hexdigest()[:16]


def test_unknown_tools_budgets_and_legacy_tools(lab: Lab) -> None:
    profile = Profile.model_validate({"tools": {"maxCallsPerRun": 5,
                                                "maxCallsPerTool": {"workspace.list_files": 2}}})
    run = lab.start_run(chat_id="alice", profile=profile)
    assert run.call_tool("nope.tool", {}).content == "Unknown tool `nope.tool`."
    legacy = run.call_tool("skill.run_script", {"skill": "x", "script": "y"})
    assert legacy.error_code == "tool.unknown"
    run.call_tool("workspace.list_files", {})
    run.call_tool("workspace.list_files", {})
    over_tool = run.call_tool("workspace.list_files", {})
    assert (over_tool.error_code, over_tool.content) == (
        "agent.tool_budget_exhausted",
        "`workspace.list_files` has reached its call limit for this task (2 calls).")
    over_run = run.call_tool("workspace.read_file", {"path": "output/x"})
    assert (over_run.error_code, over_run.content) == (
        "agent.tool_budget_exhausted",
        "The tool call limit for this task has been reached (5 calls).")


def test_rounds_budget(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice", profile={"tools": {"maxRounds": 1}})
    assert not run.call_tool("workspace.list_files", {}).is_error
    run.next_round()
    assert run.call_tool("workspace.list_files", {}).error_code == "tool.budget_exceeded"


def test_reopened_runs_continue_in_a_new_round_without_read_records(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "v1"})
    run.call_tool("workspace.commit", {})
    again = lab.open_run(run.id)
    assert again.round == 2 and again.internals.explicit_commits == 1
    assert again.internals.output_target == (0, 0)
    refused = again.call_tool("workspace.write_file", {"path": "output/main.md",
                                                       "content": "v2"})
    assert refused.error_code == "workspace.write_requires_read"
    assert again.call_tool("workspace.read_file", {"path": "output/main.md"}).is_error is False
    assert not again.call_tool("workspace.write_file", {"path": "output/main.md",
                                                        "content": "v2"}).is_error
    assert again._core.counters.call_seq == 5
    again.call_tool("workspace.commit", {})
    assert lab.chat("alice").messages[0].body == "v2"
    assert not again.finish().is_error
    assert [r.id for r in lab.runs()] == [run.id]


def test_record_readers_map_legacy_values() -> None:
    record = RunRecord.model_validate({
        "id": "run_1", "target": {"kind": "session", "sessionId": "ses_1"},
        "status": "awaiting_commit", "presentation": None,
        "createdAt": "2025-01-01T00:00:00Z", "updatedAt": "2025-01-01T00:00:00Z"})
    assert record.status == "awaiting_host_commit"
    assert record.presentation == "foreground"


@pytest.mark.parametrize(("kwargs", "code", "message"), [
    ({"chat_id": " "}, "workspace.invalid_data", "stableChatId cannot be empty"),
    ({"chat_id": "x" * 513}, "workspace.invalid_data", "stableChatId exceeds 512 characters"),
    ({"chat_id": "a", "profile": {"workspace": {"visibleRoots": ["input"]}}},
     "workspace.invalid_data", "Workspace root name is reserved: input"),
    ({"chat_id": "a", "profile": {"workspace": {"writableRoots": ["a/b"]}}},
     "workspace.invalid_data", "Workspace root must be a single path segment: a/b"),
    ({"chat_id": "a", "presentation": "sideways"}, "workspace.invalid_data",
     "presentation must be `foreground` or `background`"),
    ({"chat_id": "a", "context": {"macroContext": {"names": {"user": [1]}}}},
     "agent.invalid_macro_context", "macroContext.names.user must be a string or a number"),
    ({"chat_id": "a", "skills": ["ghost"]}, "workspace.not_found",
     "Skill is not available: skills/ghost"),
    ({}, "workspace.invalid_data", "start_run needs exactly one of chat_id or session"),
])
def test_bad_start_arguments_write_nothing(lab: Lab, kwargs: dict[str, object], code: str,
                                           message: str) -> None:
    base = lab.root / "_tauritavern" / "agent-workspaces"
    before = sorted(p.relative_to(base) for p in base.rglob("*"))
    with pytest.raises(TavernlabError) as info:
        lab.start_run(**kwargs)  # type: ignore[arg-type]
    assert (info.value.code, info.value.message) == (code, message)
    assert sorted(p.relative_to(base) for p in base.rglob("*")) == before


def test_arguments_that_are_not_json_are_invalid_and_recorded(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    bad = run.call_tool("workspace.write_file", {"path": "output/\udcff.md", "content": "x"})
    assert (bad.error_code, bad.content) == (
        "tool.invalid_arguments",
        "arguments must be valid Unicode text (found a lone surrogate)")
    odd = run.call_tool("workspace.list_files", {"depth": object()})
    assert odd.error_code == "tool.invalid_arguments"
    assert odd.content.startswith("arguments must be JSON values: ")
    assert run.status == "calling_model"
    assert [e.payload.error_code for e in run.events(types="tool_call_failed", journal=False)] == [
        "tool.invalid_arguments", "tool.invalid_arguments"]


def test_a_sub_agent_profile_root_is_created_for_it(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    profile = Profile.model_validate({"workspace": {"visibleRoots": ["research"],
                                                    "writableRoots": ["research"]}})
    sub = run.start_subagent("researcher", profile=profile)
    listing = run.call_tool("workspace.list_files", {"depth": 1}, invocation=sub)
    assert listing.content == "research/\nskills/\ntool-results/"
    wrote = run.call_tool("workspace.write_file", {"path": "research/a.md", "content": "x"},
                          invocation=sub)
    assert not wrote.is_error
    hidden = run.call_tool("workspace.read_file", {"path": "output/main.md"}, invocation=sub)
    assert hidden.error_code == "workspace.path_not_visible"
