"""Sub-agents and handoff: a delegated task runs as its own invocation and returns through
task_return; a handoff moves the run to another agent, which finishes it."""

from __future__ import annotations

from typing import Any

from tests.agent.scripts import call, events, failure, finish, payloads, stored, turn, write

from tavernlab import Lab
from tavernlab.workspace.roots._profile import DEFAULT_ALLOWED_TOOLS

WRITER_TOOLS = ["workspace.list_files", "workspace.read_file", "workspace.write_file",
                "workspace.commit", "workspace.finish"]
CRITIC = {"description": "Reviews scene drafts.", "delegation": {"allowHandoff": False}}
#: The default writer's tools plus the handoff.
HANDING_OFF = {"tools": {"allow": [*DEFAULT_ALLOWED_TOOLS, "agent.handoff"]}}
FINISHER = {"description": "Completes the final draft.",
            "delegation": {"allowSubAgent": False}, "tools": {"allow": WRITER_TOOLS}}


def handoff(call_id: str, agent_id: str = "finisher") -> dict[str, Any]:
    return call(call_id, "agent_handoff",
                {"agentId": agent_id, "handoff": {"objective": "Finish the draft.",
                                                   "workspaceRefs": ["output/main.md"]}})


def test_agent_runtime_delegate_await_runs_return_mode_child(lab: Lab, model_for: Any) -> None:
    model = model_for([
        turn(None, call("call_delegate", "agent_delegate",
                        {"agentId": "scene-critic",
                         "task": {"objective": "Review the scene.", "title": "Review"}}),
             call("call_await", "agent_await", {"mode": "nextCompleted"})),
        turn(None, call("call_return", "task_return", {"summary": "The scene works."})),
        turn(None, write("call_write", "output/main.md", "reviewed"), finish())])
    outcome = lab.run_agent("Write a scene.", model=model.provider, presentation="background",
                            agents={"scene-critic": CRITIC})
    run = outcome.run
    assert outcome.status == "completed"
    root, child, again = model.sent
    assert "- scene-critic [delegate]: Reviews scene drafts." in root.system
    child_id = _invocation_of(run, "subagent")
    assert child_id != "inv_root" and child_id.startswith("inv_")
    requested = [p["invocationId"] for p in payloads(run, "model_request_created")]
    assert requested == ["inv_root", child_id, "inv_root"]
    assert child.tools[-1] == "task_return"
    assert not {"workspace_commit", "workspace_finish", "agent_delegate", "agent_handoff",
                "agent_await"} & set(child.tools)
    snapshot = stored(run, f"input/invocations/{child_id}/tool_snapshot.json")
    assert snapshot["bindings"][-1]["descriptor"]["id"] == "builtin:task.return"
    assert "Available agents:" not in child.system
    assert any("# Delegated Task" in text for text in child.texts("user"))
    assert "The scene works." in again.tool_texts[-1]
    awaited = stored(run, next(p for p in payloads(run, "tool_result_stored")
                               if p["callId"] == "call_await")["path"])
    assert awaited["structured"]["tasks"][0]["status"] == "completed"
    assert awaited["structured"]["tasks"][0]["summary"] == "The scene works."
    completed = payloads(run, "agent_task_completed")
    assert [(c["status"], c["continuation"]) for c in completed] == [
        ("completed", "return_to_parent")]
    created = next(p for p in payloads(run, "agent_invocation_created")
                   if p["invocationId"] == child_id)
    assert (created["kind"], created["exitPolicy"], created["parentInvocationId"]) == (
        "subagent", "task_return_required", "inv_root")
    ended = [p for p in payloads(run, "agent_invocation_completed")
             if p["invocationId"] == child_id]
    assert [p["status"] for p in ended] == ["completed"]
    assert (run.dir / f"model-responses/{child_id}/round-001.json").is_file()
    assert payloads(run, "task_return_recorded")[0]["invocationId"] == child_id
    assert sorted(model.closed_sessions) == sorted([f"{run.id}:inv_root",
                                                    f"{run.id}:{child_id}"])


def test_agent_runtime_handoff_preserves_prior_commit_and_switches_invocation(
        lab: Lab, model_for: Any) -> None:
    model = model_for([
        turn(None, write("call_write", "output/main.md", "draft"),
             call("call_commit", "workspace_commit", {}), handoff("call_handoff")),
        turn(None, write("call_denied", "run.json", "{}")),
        turn(None, finish())])
    outcome = lab.run_agent("Write a scene.", model=model.provider, profile=HANDING_OFF,
                            agents={"finisher": FINISHER})
    run = outcome.run
    assert outcome.status == "completed"
    transferred = payloads(run, "agent_invocation_transferred")
    assert [p["invocationId"] for p in transferred] == ["inv_root"]
    target = model.sent[1]
    target_id = _invocation_of(run, "handoff")
    created = next(p for p in payloads(run, "agent_invocation_created")
                   if p["invocationId"] == target_id)
    assert (created["kind"], created["exitPolicy"]) == ("handoff", "run_finish_allowed")
    assert [p["invocationId"] for p in payloads(run, "agent_invocation_completed")] == [
        target_id]
    assert [p["commitCount"] for p in payloads(run, "chat_commit_recorded")] == [1]
    denied = [p for p in payloads(run, "tool_call_failed") if p["callId"] == "call_denied"]
    assert denied[0]["errorCode"] == "workspace.path_not_writable"
    order = [e["type"] for e in events(run)]
    assert (order.index("agent_task_completed")
            < order.index("agent_invocation_completed") < order.index("run_completed"))
    assert "workspace_finish" in target.tools and "agent_handoff" not in target.tools
    assert any("# Handoff Brief" in text for text in target.texts("user"))
    assert "Available agents:" not in target.system
    assert lab.chat("agent").messages[0].swipes[0].body == "draft"


def test_agent_runtime_handoff_target_failure_keeps_root_transferred(
        lab: Lab, model_for: Any) -> None:
    model = model_for([turn(None, handoff("call_handoff")),
                      failure(code="model.invalid_tool_call", message="broken turn")])
    outcome = lab.run_agent("Write a scene.", model=model.provider, presentation="background",
                            profile=HANDING_OFF, agents={"finisher": FINISHER})
    run = outcome.run
    assert outcome.status == "failed"
    assert [p["status"] for p in payloads(run, "agent_task_failed")] == ["failed"]
    assert [p["invocationId"] for p in payloads(run, "agent_invocation_transferred")] == [
        "inv_root"]
    target_id = _invocation_of(run, "handoff")
    assert [p["invocationId"] for p in payloads(run, "agent_invocation_failed")] == [target_id]
    assert payloads(run, "agent_invocation_cancelled") == []
    assert payloads(run, "run_failed")[0]["code"] == "model.invalid_tool_call"


def test_agent_runtime_recovers_handoff_before_trailing_tool(lab: Lab, model_for: Any) -> None:
    model = model_for([
        turn(None, handoff("call_handoff_early"),
             write("call_write", "output/main.md", "Complete this work before handing off.")),
        turn(None, handoff("call_handoff")),
        turn(None, finish())])
    outcome = lab.run_agent("Write a scene.", model=model.provider, presentation="background",
                            profile=HANDING_OFF, agents={"finisher": FINISHER})
    run = outcome.run
    early = [p for p in payloads(run, "tool_call_failed") if p["callId"] == "call_handoff_early"]
    assert early[0]["errorCode"] == "agent.tool_after_finish"
    assert early[0]["message"] == ("agent.handoff must be the final tool call in a model "
                                   "turn; complete the other work first, then call it again.")
    assert run.read("output/main.md") == "Complete this work before handing off."
    assert outcome.status == "completed"
    assert payloads(run, "run_failed") == []
    assert len(model.sent) == 3


def test_a_target_outside_the_catalog_is_refused_with_the_current_candidates(
        lab: Lab, model_for: Any) -> None:
    model = model_for([
        turn(None, call("call_bad", "agent_delegate",
                        {"agentId": "finisher", "task": {"objective": "x"}})),
        turn(None, write("call_write", "output/main.md", "x"), finish())])
    outcome = lab.run_agent("Write.", model=model.provider, presentation="background",
                            agents={"finisher": FINISHER, "scene-critic": CRITIC})
    refused = [p for p in payloads(outcome.run, "tool_call_failed") if p["callId"] == "call_bad"]
    assert refused[0]["errorCode"] == "agent.delegation_policy_denied"
    assert refused[0]["message"].endswith(
        "\n\nAvailable agents:\n- scene-critic [delegate]: Reviews scene drafts.\n\n"
        "Use the listed ID as agentId for the indicated operation.")
    assert outcome.status == "completed"


def _invocation_of(run: Any, kind: str) -> str:
    """The id of the run's invocation of ``kind`` (``subagent``, ``handoff``)."""
    (found,) = [p["invocationId"] for p in payloads(run, "agent_invocation_created")
                if p["kind"] == kind]
    return str(found)
