"""The loop's execution cases: a run from its first model request to its terminal event, with
the records upstream's contract tests pin; each through the scripted model and the real
``openai`` and ``anthropic`` clients against a local server."""

from __future__ import annotations

from typing import Any

from tests.agent.scripts import (
    by_call,
    call,
    default_agent_responses,
    failure,
    finish,
    payloads,
    stored,
    turn,
    write,
)

from tavernlab import Lab
from tavernlab.models import TextDelta


def test_agent_runtime_background_run_finish_uses_run_presentation(lab: Lab, model_for: Any
                                                                   ) -> None:
    model = model_for(default_agent_responses())
    outcome = lab.run_agent("Write the artifact.", model=model.provider,
                            presentation="background",
                            profile={"tools": {"maxRounds": 2},
                                     "run": {"presentation": "foreground"}})
    run = outcome.run
    assert (outcome.status, outcome.failure, outcome.rounds) == ("completed", None, 2)
    assert payloads(run, "chat_commit_requested") == []
    assert run.read("output/main.md") == "hello from real repo"
    assert payloads(run, "model_completed")[0]["modelResponsePath"] == (
        "model-responses/round-001.json")
    written = payloads(run, "workspace_file_written")
    assert [(w["path"], w["mode"], w["chars"]) for w in written] == [
        ("output/main.md", "replace", 20)]
    requested = by_call(run, "tool_call_requested", "call_write")[0]
    assert (requested["toolId"], requested["snapshotId"]) == (
        "builtin:workspace.write_file", "inv_root")
    assert stored(run, requested["argumentsRef"])["path"] == "output/main.md"
    result_event = by_call(run, "tool_result_stored", "call_write")[0]
    assert result_event["toolId"] == "builtin:workspace.write_file"
    assert stored(run, result_event["path"])["toolId"] == "builtin:workspace.write_file"
    snapshot = stored(run, "input/invocations/inv_root/tool_snapshot.json")
    assert (snapshot["schemaVersion"], snapshot["id"]) == (1, "inv_root")
    binding = next(b for b in snapshot["bindings"]
                   if b["descriptor"]["id"] == "builtin:workspace.write_file")
    assert binding["modelAlias"] == "workspace_write_file"
    assert payloads(run, "context_assembled")[0]["toolSnapshotPath"] == (
        "input/invocations/inv_root/tool_snapshot.json")
    assert payloads(run, "model_request_created")[0]["toolTurn"]["snapshotId"] == "inv_root"
    assert payloads(run, "model_response_stored")
    request = model.sent[0]
    assert "workspace_write_file" in request.tools
    assert "Available agents:\nNone." in request.system
    assert model.closed_sessions == [f"{run.id}:inv_root"]


def test_agent_runtime_streaming_keeps_the_existing_final_execution_path(
        lab: Lab, model_for: Any) -> None:
    model = model_for(default_agent_responses())
    pieces: list[str] = []
    outcome = lab.run_agent(
        "Write the artifact.", model=model.provider, presentation="background", stream=True,
        on_delta=lambda live: pieces.append(live.delta.text)
        if isinstance(live.delta, TextDelta) else None)
    assert outcome.status == "completed"
    assert [r.stream for r in model.sent] == [True, True]
    assert "".join(pieces) == "I will write the artifact."
    assert outcome.run.read("output/main.md") == "hello from real repo"
    assert model.closed_sessions == [f"{outcome.run.id}:inv_root"]


def test_a_recoverable_tool_error_never_stops_the_run(lab: Lab, model_for: Any) -> None:
    model = model_for([
        turn(None, call("call_missing", "workspace_read_file", {"path": "output/none.md"})),
        *default_agent_responses()])
    outcome = lab.run_agent("Read then write.", model=model.provider, presentation="background")
    assert outcome.status == "completed"
    failed = by_call(outcome.run, "tool_call_failed", "call_missing")[0]
    assert (failed["isError"], failed["errorCode"]) == (True, "workspace.file_not_found")
    assert model.sent[1].tool_texts == [
        "## Tool error\n\nworkspace path `output/none.md` was not found."]


def test_agent_runtime_normalizes_empty_arguments_and_recovers_from_invalid_arguments(
        lab: Lab, model_for: Any) -> None:
    model = model_for([
        turn(None, call("call_empty", "workspace_list_files", "null"),
             call("call_invalid", "workspace_list_files", '{"path":')),
        turn(None, call("call_over_budget", "workspace_list_files", {}),
             write("call_write", "output/main.md", "continued after invalid arguments"),
             finish())])
    outcome = lab.run_agent(
        "List, then write.", model=model.provider, presentation="background",
        profile={"tools": {"maxRounds": 2,
                           "maxCallsPerTool": {"workspace.list_files": 2}}})
    run = outcome.run
    empty = stored(run, by_call(run, "tool_result_stored", "call_empty")[0]["path"])
    assert not empty["isError"] and "entries" in empty["structured"]
    assert stored(run, by_call(run, "tool_call_requested", "call_empty")[0]["argumentsRef"]) == {}
    invalid = stored(run, by_call(run, "tool_result_stored", "call_invalid")[0]["path"])
    assert invalid["errorCode"] == "tool.invalid_arguments"
    assert '{"path":' in invalid["content"]
    assert invalid["content"] == ("arguments must be a JSON object; send `{}` when the call "
                                  'takes no arguments. Received: `{"path":`')
    assert stored(run, by_call(run, "tool_call_requested",
                               "call_invalid")[0]["argumentsRef"]) == '{"path":'
    over = by_call(run, "tool_call_failed", "call_over_budget")[0]
    assert over["errorCode"] == "agent.tool_budget_exhausted"
    assert over["message"] == ("`workspace.list_files` has reached its call limit for this "
                               "task (2 calls).")
    assert by_call(run, "tool_call_started", "call_over_budget") == []
    assert run.read("output/main.md") == "continued after invalid arguments"
    assert outcome.status == "completed"


def test_agent_runtime_duplicate_tool_call_id_preserves_first_audit_facts(
        lab: Lab, model_for: Any) -> None:
    model = model_for([turn(None, write("duplicate_call", "output/first.md", "first"),
                            write("duplicate_call", "output/second.md", "second"))])
    outcome = lab.run_agent("Write twice.", model=model.provider, presentation="background",
                            profile={"tools": {"maxRounds": 1}})
    run = outcome.run
    assert outcome.status == "failed"
    requested = by_call(run, "tool_call_requested", "duplicate_call")
    results = by_call(run, "tool_result_stored", "duplicate_call")
    assert (len(requested), len(results)) == (1, 1)
    assert stored(run, requested[0]["argumentsRef"])["path"] == "output/first.md"
    assert stored(run, results[0]["path"])["resourceRefs"] == ["output/first.md"]
    assert not (run.workspace_dir / "output" / "second.md").exists()
    assert payloads(run, "run_failed")[0]["code"] == "agent.tool_not_started"


def test_agent_runtime_foreground_auto_commits_once_per_round_until_explicit_commit(
        lab: Lab, model_for: Any) -> None:
    model = model_for([
        turn(None, write("call_write", "output/main.md", "draft one"),
             call("call_patch", "workspace_apply_patch",
                  {"path": "output/main.md", "old_string": "one", "new_string": "two"}),
             call("call_commit", "workspace_commit", {}),
             finish("call_finish_after_auto")),
        turn(None, call("call_commit_retry", "workspace_commit", {}),
             write("call_after", "scratch/after.txt", "after"), finish())])
    outcome = lab.run_agent(
        "Write and commit.", model=model.provider, presentation="foreground", stream=False,
        review=lambda request: "host rejected the first commit"
        if request["callId"] == "call_commit" else None)
    run = outcome.run
    assert outcome.status == "completed"
    guard = by_call(run, "tool_call_failed", "call_finish_after_auto")[0]
    assert (guard["errorCode"], guard["message"]) == (
        "agent.foreground_commit_required",
        "Foreground Agent runs must call workspace.commit successfully before "
        "workspace.finish.")
    guard_event = next(e for e in _lines(run) if e["type"] == "tool_call_failed"
                       and e["payload"]["callId"] == "call_finish_after_auto")
    assert guard_event["level"] == "warn"
    requested = payloads(run, "chat_commit_requested")
    assert [(r["callId"], r["isExplicit"]) for r in requested] == [
        ("call_commit", True), ("call_patch", False), ("call_commit_retry", True)]
    auto = requested[1]
    assert (auto["path"], auto["mode"], len(auto["sha256"])) == ("output/main.md", "replace", 64)
    last = requested[2]
    assert (last["runId"], last["path"]) == (run.id, "output/main.md")
    assert last["workspaceId"] == run.record.target.workspace_id
    assert last["stableChatId"] == "agent"
    failed = payloads(run, "chat_commit_failed")
    assert [(f["callId"], f["message"]) for f in failed] == [
        ("call_commit", "host rejected the first commit")]
    assert next(e for e in _lines(run) if e["type"] == "chat_commit_failed")["level"] == "warn"
    rejected = stored(run, by_call(run, "tool_result_stored", "call_commit")[0]["path"])
    assert (rejected["errorCode"], rejected["content"]) == (
        "agent.chat_commit_rejected", "host rejected the first commit")
    completed = payloads(run, "chat_commit_completed")
    assert [(c["callId"], c["isExplicit"], c["messageId"]) for c in completed] == [
        ("call_patch", False, "0"), ("call_commit_retry", True, "0")]
    assert [r["commitCount"] for r in payloads(run, "chat_commit_recorded")] == [1, 2]
    assert payloads(run, "agent_loop_finished")[0]["commitCount"] == 2
    update = payloads(run, "persistent_state_metadata_update_requested")[0]
    assert (update["runId"], update["messageId"], update["changeCount"]) == (run.id, "0", 0)
    state = update["stateId"]
    assert payloads(run, "persistent_state_metadata_updated") == [
        {"updateId": update["updateId"], "messageId": "0", "stateId": state}]
    retry = stored(run, by_call(run, "tool_result_stored", "call_commit_retry")[0]["path"])
    assert retry["content"].startswith("Committed output/main.md to the current chat message "
                                       "with mode Replace. You may continue editing")
    assert retry["structured"] == {"path": "output/main.md", "mode": "replace",
                                   "messageId": "0", "messageIndex": 0, "chars": 9, "words": 2}
    assert lab.chat("agent").messages[0].swipes[0].body == "draft two"


def test_agent_runtime_streamed_writes_defer_to_patch_and_explicit_commits(
        lab: Lab, model_for: Any) -> None:
    model = model_for([
        turn(None, write("call_write_first", "output/main.md", "alpha beta"),
             call("call_patch_first", "workspace_apply_patch",
                  {"path": "output/main.md", "old_string": "alpha", "new_string": "gamma"})),
        turn(None, call("call_patch_second", "workspace_apply_patch",
                        {"path": "output/main.md", "old_string": "beta", "new_string": "delta"}),
             write("call_write_second", "output/main.md", "final text")),
        turn(None, call("call_commit", "workspace_commit", {}), finish())])
    outcome = lab.run_agent("Draft, patch, commit.", model=model.provider,
                            presentation="foreground", stream=True)
    assert outcome.status == "completed"
    requested = payloads(outcome.run, "chat_commit_requested")
    assert [(r["callId"], r["isExplicit"]) for r in requested] == [
        ("call_patch_first", False), ("call_commit", True)]


def test_agent_runtime_retries_retryable_model_errors_with_real_repositories(
        lab: Lab, model_for: Any) -> None:
    model = model_for([failure(network="network.timeout", message="the request timed out"),
                       turn(None, write("call_write", "output/main.md", "retry succeeded")),
                       turn(None, finish())])
    outcome = lab.run_agent("Write.", model=model.provider, presentation="background",
                            profile={"run": {"modelRetry": {"maxRetries": 1,
                                                            "intervalMs": 1}}})
    run = outcome.run
    assert outcome.status == "completed"
    assert len(model.sent) == 3
    assert run.read("output/main.md") == "retry succeeded"
    failed = payloads(run, "model_call_attempt_failed")[0]
    assert {k: failed[k] for k in ("attempt", "maxRetries", "retryable", "willRetry")} == {
        "attempt": 1, "maxRetries": 1, "retryable": True, "willRetry": True}
    scheduled = payloads(run, "model_call_retry_scheduled")[0]
    assert (scheduled["nextAttempt"], scheduled["intervalMs"]) == (2, 1)
    assert payloads(run, "model_completed")[0]["attempts"] == 2


def test_agent_runtime_does_not_retry_non_retryable_model_errors(lab: Lab, model_for: Any
                                                                 ) -> None:
    model = model_for([failure(code="model.invalid_tool_call", message="missing id")])
    outcome = lab.run_agent("Write.", model=model.provider, presentation="background",
                            profile={"run": {"modelRetry": {"maxRetries": 2,
                                                            "intervalMs": 1}}})
    run = outcome.run
    assert outcome.status == "failed"
    assert outcome.failure is not None and "missing id" in outcome.failure["message"]
    failure_payload = outcome.failure
    message = failure_payload["message"]
    assert failure_payload == {
        "code": "model.invalid_tool_call", "message": message,
        "technicalMessage": f"Validation error: model.invalid_tool_call: {message}",
        "retryable": False, "userRetryable": False, "details": {}}
    assert len(model.sent) == 1
    assert payloads(run, "model_call_retry_scheduled") == []
    assert next(e for e in _lines(run) if e["type"] == "model_call_attempt_failed"
                )["level"] == "error"


def _lines(run: Any) -> list[dict[str, Any]]:
    from tests.agent.scripts import events

    return events(run)
