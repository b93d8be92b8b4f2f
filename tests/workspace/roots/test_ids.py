"""Identifiers (docs/layout.md) and tool-result file names (docs/tool-calls.md)."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from tavernlab.clock import RANDOM_IDS
from tavernlab.errors import InvalidData
from tavernlab.host import Lab, Run
from tavernlab.layout import call_stem, tool_record_name
from tavernlab.workspace.roots import check_dir_name, check_stable_chat_id, workspace_id


def test_workspace_ids_of_the_acceptance_list() -> None:
    assert workspace_id("character", "abc") == "chat_b30dd8f137c0e127"
    assert workspace_id("group", "abc") == "chat_84134139c4785d9f"


def test_stable_chat_id_is_trimmed_and_bounded() -> None:
    assert workspace_id("character", "  abc\t\n") == "chat_b30dd8f137c0e127"
    assert check_stable_chat_id(" abc ") == "abc"
    assert check_stable_chat_id("x" * 512) == "x" * 512
    assert workspace_id("character", "x" * 512).startswith("chat_")
    with pytest.raises(InvalidData, match="stableChatId exceeds 512 characters"):
        workspace_id("character", "x" * 513)
    for blank in ("", "   ", "\t\n"):
        with pytest.raises(InvalidData, match="stableChatId cannot be empty"):
            workspace_id("character", blank)
    with pytest.raises(InvalidData, match="chat kind"):
        workspace_id("channel", "abc")  # type: ignore[arg-type]


def test_rejected_chat_ids_create_nothing(lab: Lab) -> None:
    before = sorted(p.relative_to(lab.root) for p in lab.root.rglob("*"))
    for bad in ("x" * 513, "   "):
        with pytest.raises(InvalidData):
            lab.start_run(chat_id=bad)
    assert sorted(p.relative_to(lab.root) for p in lab.root.rglob("*")) == before


def test_random_ids_are_uuid4_hex() -> None:
    for prefix in ("run", "inv", "evt"):
        value = RANDOM_IDS.new(prefix)
        assert re.fullmatch(rf"{prefix}_[0-9a-f]{{32}}", value)
        assert uuid.UUID(hex=value.split("_", 1)[1]).version == 4
    assert RANDOM_IDS.new("run") != RANDOM_IDS.new("run")


def test_run_invocation_and_event_ids(run: Run) -> None:
    assert re.fullmatch(r"run_[0-9a-f]{32}", run.id)
    assert re.fullmatch(r"inv_[0-9a-f]{32}", run.internals.main.id)
    assert all(re.fullmatch(r"evt_[0-9a-f]{32}", e.id) for e in run.events(journal=False))
    assert run.dir.name == run.id
    assert run.dir.parent.parent.name == workspace_id("character", "alice")


def test_directory_names() -> None:
    assert check_dir_name("A-z_09") == "A-z_09"
    assert check_dir_name("x" * 128) == "x" * 128
    for bad in ("", "x" * 129, "a/b", "a.b", "..", "a b", "é", "a\n"):
        with pytest.raises(InvalidData, match=r"must match \[A-Za-z0-9_-\]\{1,128\}"):
            check_dir_name(bad)


def test_tool_result_names() -> None:
    # Acceptance 8.4.1
    assert call_stem("call_1") == "call_74196fe72e4cdc13"
    assert tool_record_name(3, "call_1") == "round-003-call_74196fe72e4cdc13"
    assert tool_record_name(12, "call_1") == "round-012-call_74196fe72e4cdc13"
    assert tool_record_name(1234, "call_1") == "round-1234-call_74196fe72e4cdc13"


def test_tool_result_file_of_a_chat_run(run: Run) -> None:
    run.next_round()
    run.next_round()
    assert run.round == 3
    inv = run.start_subagent("helper")
    result = run.call_tool("workspace.list_files", {"path": "output"}, invocation=inv,
                           call_id="call_1")
    stored = run.workspace_dir / "tool-results" / inv.id / "round-003-call_74196fe72e4cdc13.json"
    text = stored.read_text(encoding="utf-8")
    assert text.startswith("{\n  \"callId\": \"call_1\",\n")  # pretty-printed
    assert json.loads(text) == {
        "callId": "call_1",
        "toolId": "workspace.list_files",
        "content": "No visible workspace files found.",
        "structured": {"entries": [], "truncated": False},
        "isError": False,
        "errorCode": None,
        "resourceRefs": [],
    }
    assert json.loads(text) == result.to_json()
    # visible to the model as a read-only file
    read = run.call_tool("workspace.read_file", {
        "path": f"tool-results/{inv.id}/round-003-call_74196fe72e4cdc13.json"})
    assert not read.is_error
    assert read.structured["totalLines"] == len(text.split("\n"))


def test_tool_result_file_of_a_session_run(lab: Lab) -> None:
    session = lab.sessions.create("t")
    run = lab.start_run(session=session.id)
    result = run.call_tool("workspace.read_file", {"path": "work/missing.md"}, call_id="call_1")
    assert result.error_code == "workspace.file_not_found"
    stored = (session.workspace_dir / "tool-results" / run.id
              / "round-001-call_74196fe72e4cdc13.json")
    assert json.loads(stored.read_text(encoding="utf-8")) == {
        "callId": "call_1",
        "toolId": "workspace.read_file",
        "content": "workspace path `work/missing.md` was not found.",
        "structured": {"error": {"code": "workspace.file_not_found",
                                 "message": "workspace path `work/missing.md` was not found."}},
        "isError": True,
        "errorCode": "workspace.file_not_found",
        "resourceRefs": [],
    }
