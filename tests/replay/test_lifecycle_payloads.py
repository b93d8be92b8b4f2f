"""The lifecycle events every run writes carry upstream's payloads, by hand and through the
loop; bundles recorded with the older payloads still replay identically."""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.agent.scripts import failure, turn, write

import tavernlab.agent  # registers Lab.run_agent
from tavernlab.host import Lab
from tavernlab.models import Scripted
from tavernlab.replay import FORMAT_VERSION, read_bundle, replay
from tavernlab.replay._actions import Resume
from tavernlab.workspace.records import read_json

from .conftest import deterministic_lab

FIXTURES = Path(__file__).parent / "fixtures"
assert tavernlab.agent


def lines(run_dir: Path) -> list[dict[str, Any]]:
    """Every event of a run directory."""
    return [json.loads(line) for line in
            (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()]


def payloads(run_dir: Path, kind: str) -> list[Any]:
    """The payloads of the ``kind`` events."""
    return [e["payload"] for e in lines(run_dir) if e["type"] == kind]


@pytest.fixture
def hand(tmp_path: Path) -> Any:
    """A hand-played Chat run: write, persist, commit, finish with a reason."""
    lab = deterministic_lab(tmp_path / "lab")
    lab.chat("alice").add_message("Write.")
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "A scene."})
    run.call_tool("workspace.write_file", {"path": "persist/notes.md", "content": "kept\n"})
    run.call_tool("workspace.commit", {})
    run.finish("scene written")
    yield run
    lab.close()


def test_a_hand_played_run_writes_upstreams_lifecycle_payloads(hand: Any) -> None:
    run_dir: Path = hand.dir
    target = read_json(run_dir / "run.json")["target"]
    assert payloads(run_dir, "run_created") == [{
        "workspaceId": target["workspaceId"], "stableChatId": "alice",
        "persistBaseStateId": None, "presentation": "foreground", "target": target,
        "generationType": "normal"}]
    assert payloads(run_dir, "workspace_initialized") == [
        {"workspaceId": target["workspaceId"], "target": target}]
    assert payloads(run_dir, "persistent_projection_initialized") == [{"roots": ["persist"]}]
    statuses = [p["status"] for p in payloads(run_dir, "status_changed")]
    assert statuses[:3] == ["initializing_workspace", "assembling_context", "calling_model"]
    assert statuses[-2:] == ["finishing", "completed"]
    main = hand._core.main.id
    assert payloads(run_dir, "agent_invocation_created") == [{
        "invocationId": main, "parentInvocationId": None, "profileId": "default",
        "kind": "root", "status": "created", "exitPolicy": "run_finish_allowed"}]
    assert payloads(run_dir, "agent_invocation_completed") == [{
        "invocationId": main, "parentInvocationId": None, "profileId": "default",
        "kind": "root", "status": "completed"}]
    assert payloads(run_dir, "run_completed") == [None]
    state = read_json(run_dir / "run.json")
    assert state["status"] == "completed"


def test_a_hand_played_metadata_update_is_upstreams_request_and_updated(hand: Any) -> None:
    run_dir: Path = hand.dir
    committed = payloads(run_dir, "persistent_changes_committed")[0]
    assert list(committed) == ["stateId", "baseStateId", "changeCount", "changes", "reused"]
    assert (committed["changeCount"], committed["reused"]) == (1, False)
    assert [c["path"] for c in committed["changes"]] == ["notes.md"]
    [request] = payloads(run_dir, "persistent_state_metadata_update_requested")
    assert request["changes"] == committed["changes"]
    target = read_json(run_dir / "run.json")["target"]
    assert list(request) == ["updateId", "runId", "workspaceId", "stableChatId", "chatRef",
                             "generationType", "profileId", "messageId", "stateId",
                             "baseStateId", "changeCount", "changes"]
    assert request["updateId"].startswith("update_")
    assert (request["runId"], request["workspaceId"], request["chatRef"]) == (
        hand.id, target["workspaceId"], target["chatRef"])
    assert (request["messageId"], request["stateId"], request["changeCount"]) == (
        "1", committed["stateId"], 1)
    assert [c["path"] for c in request["changes"]] == ["notes.md"]
    assert payloads(run_dir, "persistent_state_metadata_updated") == [
        {"updateId": request["updateId"], "messageId": "1", "stateId": committed["stateId"]}]
    assert payloads(run_dir, "persistent_state_metadata_update_updated") == []


def test_the_finish_reason_is_kept_in_the_finish_calls_stored_arguments(hand: Any) -> None:
    requested = [p for p in payloads(hand.dir, "tool_call_requested")
                 if p["toolId"] == "workspace.finish"]
    stored = read_json(hand.dir / requested[0]["argumentsPath"])
    assert stored["arguments"] == {"reason": "scene written"}


def test_a_hand_played_sub_agent_is_a_subagent_of_the_main_agent(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab")
    run = lab.start_run(chat_id="alice")
    critic = run.start_subagent("critic")
    created = payloads(run.dir, "agent_invocation_created")
    assert created[1] == {"invocationId": critic.id,
                          "parentInvocationId": run._core.main.id, "profileId": "default",
                          "kind": "subagent", "status": "created",
                          "exitPolicy": "task_return_required"}
    lab.close()


def test_a_model_driven_run_writes_the_same_lifecycle_payloads(tmp_path: Path) -> None:
    lab = deterministic_lab(tmp_path / "lab")
    outcome = lab.run_agent("Write a note.", model=Scripted([
        turn(None, write("c1", "output/main.md", "a note")), failure(status=401,
                                                                     message="no key")]))
    run_dir = outcome.run.dir
    assert outcome.status == "failed"
    assert [p["status"] for p in payloads(run_dir, "status_changed")][-1] == "failed"
    assert payloads(run_dir, "run_failed") == [{
        "code": "agent.unauthorized", "message": "no key",
        "technicalMessage": "Unauthorized: agent.unauthorized: no key", "retryable": False,
        "userRetryable": False, "details": {}, "preservedCommitCount": None,
        "preservedCommits": None}]
    assert payloads(run_dir, "agent_invocation_created") == [{
        "invocationId": "inv_root", "parentInvocationId": None, "profileId": "default",
        "kind": "root", "status": "created", "exitPolicy": "run_finish_allowed"}]
    assert payloads(run_dir, "agent_invocation_failed") == [{
        "invocationId": "inv_root", "parentInvocationId": None, "profileId": "default",
        "kind": "root", "status": "failed"}]
    assert payloads(run_dir, "persistent_projection_initialized") == [{"roots": ["persist"]}]
    lab.close()


def test_a_run_cancelled_during_its_first_model_call_used_one_round_and_says_why(
        tmp_path: Path) -> None:
    lab = deterministic_lab(tmp_path / "lab")
    slow = turn("Thinking " * 200, write("s1", "output/main.md", "never"))
    slow["delayMs"] = 5000  # the cancel ends the pause; a busy machine cannot outrun it
    handle = lab.start_agent("Write.", model=Scripted([slow]))
    started = threading.Event()

    def look(record: Any) -> None:
        if record.type == "model_call_attempt_started":
            started.set()
    with handle.run.subscribe(look):
        assert started.wait(60)
    assert handle.cancel("the user changed their mind") >= 1
    outcome = handle.wait(60)
    assert (outcome.status, outcome.rounds) == ("cancelled", 1)
    assert payloads(outcome.run.dir, "run_cancel_requested") == [None]
    assert payloads(outcome.run.dir, "run_cancelled") == [
        {"message": "the user changed their mind"}]
    bundle = outcome.run.export(tmp_path / "cancelled.tavernrun")
    lab.close()
    agent = read_bundle(bundle).manifest.agent
    assert agent is not None and agent.cancelled_attempt is not None
    assert agent.cancelled_attempt.message == "the user changed their mind"
    report = replay(bundle, lab=tmp_path / "replayed")
    assert report.identical, str(report)


def test_resume_is_detected_from_the_previous_status_changed(tmp_path: Path) -> None:
    lab = deterministic_lab(tmp_path / "lab")
    run = lab.start_run(chat_id="bob")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "one"})
    run.call_tool("workspace.commit", {})
    run.finish()
    run.resume()
    run.call_tool("workspace.commit", {})
    run.finish()
    statuses = [p["status"] for p in payloads(run.dir, "status_changed")]
    assert ("completed", "calling_model") in itertools.pairwise(statuses)
    bundle = run.export(tmp_path / "resumed.tavernrun")
    actions = read_bundle(bundle).manifest.actions
    assert [a.kind for a in actions] == ["tool_call", "tool_call", "tool_call", "resume",
                                         "tool_call", "tool_call"]
    assert isinstance(actions[3], Resume)
    assert replay(bundle).identical
    lab.close()


@pytest.mark.parametrize("name", ["format2-hand-persist", "format2-model-failed",
                                  "format2-hand-cancelled-job", "format2-model-persist"])
def test_a_bundle_recorded_with_the_older_payloads_replays_identically(name: str) -> None:
    bundle = read_bundle(FIXTURES / f"{name}.tavernrun")
    assert bundle.manifest.format_version == 2 < FORMAT_VERSION == 3
    upgraded = [json.loads(line) for line in bundle.recorded_events().splitlines()]
    recorded = [json.loads(line) for line in bundle.run_file("events.jsonl").splitlines()]
    assert [e["seq"] for e in upgraded] == [e["seq"] for e in recorded]
    assert [e["id"] for e in upgraded] == [e["id"] for e in recorded]
    statuses = [e["payload"] for e in upgraded if e["type"] == "status_changed"]
    assert statuses[0] == {"status": "initializing_workspace"}
    assert all(e["type"] != "persistent_state_metadata_update_updated" for e in upgraded)
    report = replay(bundle)
    assert report.identical, str(report)


def test_the_hand_played_old_bundle_upgrades_its_resume_and_metadata() -> None:
    bundle = read_bundle(FIXTURES / "format2-hand-persist.tavernrun")
    upgraded = [json.loads(line) for line in bundle.recorded_events().splitlines()]
    kinds = [a.kind for a in bundle.manifest.actions]
    assert "resume" in kinds
    updated = [e["payload"] for e in upgraded if e["type"] == "persistent_state_metadata_updated"]
    requests = [e["payload"] for e in upgraded
                if e["type"] == "persistent_state_metadata_update_requested"]
    assert [u["updateId"] for u in updated] == [r["updateId"] for r in requests]
    assert len(set(u["updateId"] for u in updated)) == 2
    assert [e["payload"] for e in upgraded if e["type"] == "run_completed"] == [None, None]


def test_a_cancelled_js_jobs_reason_is_kept_and_replayed(tmp_path: Path) -> None:
    bundle = read_bundle(FIXTURES / "format2-hand-cancelled-job.tavernrun")
    finished = [json.loads(line)["payload"] for line in bundle.recorded_journal().splitlines()
                if b'"js_job_finished"' in line]
    assert [(f["cancelled"], f["cancelReason"]) for f in finished] == [
        (True, "stop the loop"), (False, None)]
    lab = deterministic_lab(tmp_path / "lab")
    run = lab.start_run(chat_id="bob")
    worker = threading.Thread(target=run.js, args=(["-e", "while (true) {}"],))
    worker.start()
    while not lab.services.js_pool.running_jobs():
        threading.Event().wait(0.01)
    assert run.cancel("enough") == 1
    worker.join(30)
    assert payloads(run.dir, "run_cancel_requested") == [None]
    journal = [json.loads(line) for line in
               (run.dir / "journal.jsonl").read_text(encoding="utf-8").splitlines()]
    [end] = [r["payload"] for r in journal if r["type"] == "js_job_finished"]
    assert (end["cancelled"], end["cancelReason"]) == (True, "enough")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "x"})
    run.call_tool("workspace.commit", {})
    run.finish()
    exported = read_bundle(run.export(tmp_path / "cancelled.tavernrun"))
    assert getattr(exported.manifest.actions[0], "cancel", None) == "enough"
    assert replay(exported).identical
    lab.close()


def test_a_model_run_of_an_old_bundle_keeps_its_recorded_update_id() -> None:
    bundle = read_bundle(FIXTURES / "format2-model-persist.tavernrun")
    recorded = [json.loads(line) for line in bundle.run_file("events.jsonl").splitlines()]
    upgraded = [json.loads(line) for line in bundle.recorded_events().splitlines()]
    [old] = [e["payload"] for e in recorded
             if e["type"] == "persistent_state_metadata_update_requested"]
    [request] = [e["payload"] for e in upgraded
                 if e["type"] == "persistent_state_metadata_update_requested"]
    assert "swipeId" not in request and request["updateId"] == old["updateId"]
    assert [e["payload"] for e in upgraded if e["type"] == "persistent_state_metadata_updated"
            ] == [{"updateId": old["updateId"], "messageId": "0", "stateId": old["stateId"]}]
