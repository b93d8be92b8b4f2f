"""The Python API of the loop: handles, outcomes, cancellation from another thread, the live
stream, the skill catalog, what a model is shown of the tools, credentials and threads."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.agent.scripts import call, default_agent_responses, finish, payloads, turn, write

from tavernlab import Lab
from tavernlab.errors import AgentError, UsageError
from tavernlab.models import ModelRequest, ModelResponse, Scripted, TextDelta
from tavernlab.workspace.roots import Profile


def _agent_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("tavernlab-agent-")]


def _wait_for(run: Any, kind: str, predicate: Any = None) -> None:
    """Block until the run has an event ``kind`` (subscribing, not polling)."""
    seen = threading.Event()

    def look(record: Any) -> None:
        if record.type == kind and (predicate is None or predicate(record)):
            seen.set()
    with run.subscribe(look):
        if any(e.type == kind and (predicate is None or predicate(e)) for e in run.events()):
            return
        assert seen.wait(60), f"no {kind} event"


def test_run_agent_returns_the_outcome_with_usage_and_rounds(lab: Lab) -> None:
    outcome = lab.run_agent("Write.", model=Scripted(default_agent_responses()),
                            presentation="background")
    assert (outcome.status, outcome.rounds, outcome.failure) == ("completed", 2, None)
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens,
            outcome.usage.total_tokens) == (20, 10, 30)
    assert [p["usage"] for p in payloads(outcome.run, "model_completed")] == [
        {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}] * 2
    assert outcome.run.status == "completed"
    assert _agent_threads() == []


def test_start_agent_runs_off_the_callers_thread_and_ends_its_thread(lab: Lab) -> None:
    threads: list[str] = []
    handle = lab.start_agent("Write.", model=Scripted(default_agent_responses()),
                             presentation="background",
                             on_delta=lambda live: threads.append(threading.current_thread().name))
    outcome = handle.wait(60)
    assert outcome.status == "completed" and handle.done
    assert threads and set(threads) == {f"tavernlab-agent-{handle.run.id}"}
    assert _agent_threads() == []


def test_live_deltas_say_where_they_belong_and_are_not_recorded(lab: Lab) -> None:
    live: list[Any] = []
    outcome = lab.run_agent("Write.", model=Scripted(default_agent_responses()),
                            presentation="background", on_delta=live.append)
    texts = [d for d in live if isinstance(d.delta, TextDelta)]
    assert {(d.run_id, d.invocation_id, d.round, d.attempt) for d in texts} == {
        (outcome.run.id, "inv_root", 1, 1)}
    journal = (outcome.run.dir / "events.jsonl").read_text(encoding="utf-8")
    assert "model_delta" not in journal


def test_cancel_during_a_model_call_from_another_thread(lab: Lab, model_for: Any) -> None:
    slow = turn("Thinking " * 200, write("call_write", "output/main.md", "never"))
    slow["delayMs"] = 5000  # the cancel ends the pause; a busy machine cannot outrun it
    model = model_for([slow])
    handle = lab.start_agent("Write.", model=model.provider, presentation="background")
    _wait_for(handle.run, "model_call_attempt_started")
    assert handle.cancel() >= 1
    outcome = handle.wait(60)
    assert outcome.status == "cancelled" and outcome.failure is None
    assert payloads(outcome.run, "run_cancelled") == [
        {"message": "Generation cancelled by user"}]
    assert payloads(outcome.run, "run_cancel_requested") == [None]
    assert payloads(outcome.run, "tool_call_requested") == []
    cancelled = payloads(outcome.run, "agent_invocation_cancelled")
    assert [c["invocationId"] for c in cancelled] == ["inv_root"]
    assert handle.cancel() == 0
    assert model.closed_sessions == [f"{outcome.run.id}:inv_root"]
    assert _agent_threads() == []


def test_run_cancel_during_a_tool_call_leaves_the_run_cancelled(lab: Lab) -> None:
    model = Scripted([turn(None, call("call_shell", "workspace_shell",
                                      {"command": "while true; do :; done"}),
                           write("call_after", "output/after.md", "never"))])
    handle = lab.start_agent("Loop.", model=model, presentation="background")
    run = handle.run
    _wait_for(run, "tool_call_started", lambda e: e.payload.call_id == "call_shell")
    run.cancel()
    outcome = handle.wait(60)
    assert outcome.status == "cancelled"
    assert payloads(run, "run_cancelled")[0]["message"] == "Generation cancelled by user"
    shell = [p for p in payloads(run, "tool_call_failed") if p["callId"] == "call_shell"]
    assert shell[0]["errorCode"] == "workspace.shell_cancelled"
    assert payloads(run, "tool_call_requested")[-1]["callId"] == "call_shell"
    assert not (run.workspace_dir / "output" / "after.md").exists()
    assert run.status == "cancelled"
    assert _agent_threads() == []


def test_cancel_during_a_retry_pause(lab: Lab) -> None:
    model = Scripted([{"error": {"status": 503, "message": "busy"}}, *default_agent_responses()])
    handle = lab.start_agent("Write.", model=model, presentation="background",
                             profile={"run": {"modelRetry": {"maxRetries": 3,
                                                             "intervalMs": 600_000}}})
    _wait_for(handle.run, "model_call_retry_scheduled")
    handle.cancel()
    assert handle.wait(60).status == "cancelled"
    assert len(model.requests) == 1


def test_the_skill_catalog_lists_each_skill_once(tmp_path: Path) -> None:
    source = tmp_path / "style"
    source.mkdir()
    (source / "SKILL.md").write_text("---\nname: style\ndescription: Writer style guidance\n"
                                     "---\n# style\n", encoding="utf-8")
    with Lab(tmp_path / "lab") as lab:
        lab.skills.install(source, scope="global")
        model = Scripted(default_agent_responses())
        outcome = lab.run_agent("Write.", model=model, presentation="background",
                                profile={"tools": {"allow": ["workspace.write_file",
                                                             "workspace.finish"]}})
        system = model.requests[0].request.messages[0].text
        assert system.endswith(
            "Anyway: TOOLS&SKILLS IS ALL YOU NEED\n\nAvailable skills:\n- style: "
            '"Writer style guidance"\n  Path: skills/style/SKILL.md\n\nRead a skill\'s '
            "SKILL.md before using it. Resolve referenced files relative to its directory.")
        assert system.count("skills/style/SKILL.md") == 1
        assert model.requests[1].request.messages[0].text == system
        stored = (outcome.run.dir / "input" / "prompt_snapshot.json").read_text()
        assert "Available skills" not in stored
        skills = (outcome.run.dir / "input" / "resolved_skills.json").read_text()
        assert '"name": "style"' in skills


def test_tool_definitions_are_what_the_model_is_shown(lab: Lab) -> None:
    shown = lab.tool_definitions({"tools": {"allow": ["workspace.read_file",
                                                      "workspace.write_file"]}})
    assert [t["function"]["name"] for t in shown] == ["workspace_read_file",
                                                      "workspace_write_file"]
    read = shown[0]["function"]
    assert read["description"] == (
        "Read a visible UTF-8 Agent workspace file with line numbers. Omit start_line and "
        "line_count to read the full file; oversized files return a bounded preview with the "
        "next line to read. Partial reads are only for inspection.")
    assert read["parameters"] == {
        "type": "object", "additionalProperties": False, "required": ["path"],
        "properties": {
            "path": {"type": "string", "description": "Relative workspace file path under "
                     "output/, scratch/, plan/, summaries/, persist/, tool-results/, skills/."},
            "start_line": {"type": "integer", "description": "1-based starting line. Omit to "
                           "start at line 1.", "minimum": 1},
            "line_count": {"type": "integer", "description": "Number of lines to read. Omit to "
                           "read through the end; oversized results return a shorter preview.",
                           "minimum": 1}}}
    write_path = shown[1]["function"]["parameters"]["properties"]["path"]["description"]
    assert write_path == ("Relative workspace path. Writable prefixes are output/, scratch/, "
                          "plan/, summaries/, persist/.")
    claude = lab.tool_definitions({"tools": {"allow": ["workspace.finish"]}},
                                  provider_format="claude_messages")
    assert claude == [{"name": "workspace_finish", "description": (
        "Finish the Agent run after required chat commits and workspace changes are "
        "complete."), "input_schema": {
            "type": "object", "additionalProperties": False, "required": [], "properties": {
                "reason": {"type": "string", "description": "Short completion reason."}}}}]
    default = [t["function"]["name"] for t in lab.tool_definitions()]
    assert default == ["agent_delegate", "agent_await", "workspace_list_files",
                       "workspace_search_files", "workspace_read_file",
                       "workspace_write_file", "workspace_apply_patch", "workspace_shell",
                       "workspace_commit", "workspace_finish"]
    shell = lab.tool_definitions()[7]["function"]["description"]
    assert shell.endswith(" Prefer workspace_read_file for straightforward single-file text "
                          "reads, workspace_write_file for straightforward single-file text "
                          "writes, workspace_apply_patch for precise edits.")


def test_a_profile_description_override_wins(lab: Lab) -> None:
    shown = lab.tool_definitions({"tools": {
        "allow": ["workspace.finish"],
        "toolDescriptions": {"workspace.finish": {"description": "End it.",
                                                  "properties": {"reason": "Why."}}}}})
    function = shown[0]["function"]
    assert function["description"] == "End it."
    assert function["parameters"]["properties"]["reason"]["description"] == "Why."


def test_the_profile_has_upstreams_loop_settings_and_defaults() -> None:
    profile = Profile()
    assert profile.to_json()["run"] == {
        "presentation": "foreground", "stream": True, "directRunnable": True,
        "modelRetry": {"maxRetries": 3, "intervalMs": 3000}, "modelTimeoutMs": 600000}
    tools = profile.to_json()["tools"]
    assert (tools["maxRounds"], tools["maxCallsPerRun"], tools["maxCallsPerTool"],
            tools["externalResultInlineCharLimit"]) == (80, 80, {}, 50000)
    bound = Profile.model_validate({"model": {"provider": "openai_compatible",
                                              "model": "gpt-x", "apiKeyEnv": "MY_KEY",
                                              "params": {"temperature": 0.2}},
                                    "tools": {"mcpResultInlineCharLimit": 9}})
    assert bound.model is not None and bound.model.api_key_env == "MY_KEY"
    assert bound.tools.external_result_inline_char_limit == 9


def test_starts_that_cannot_run_are_refused_before_a_run_exists(lab: Lab) -> None:
    with pytest.raises(AgentError) as info:
        lab.run_agent("x", model=Scripted([]), profile={"run": {"directRunnable": False}})
    assert info.value.code == "agent.profile_not_direct_runnable"
    assert info.value.message == ("agent.profile_not_direct_runnable: profile `default` can "
                                  "only run as a delegated SubAgent")
    with pytest.raises(AgentError) as info:
        lab.run_agent("x", model=Scripted([]), presentation="foreground",
                      profile={"tools": {"allow": ["workspace.finish"]}})
    assert info.value.message == ("agent.foreground_commit_unavailable: foreground runs "
                                  "require workspace.commit")
    with pytest.raises(UsageError):
        lab.run_agent("x", model="gpt-4")
    assert lab.runs() == []


class KeyedModel(Scripted):
    """A scripted model that needs a credential from the environment, like a real one."""

    def __init__(self, responses: Any, variable: str) -> None:
        super().__init__(responses)
        self.variable = variable

    def describe(self) -> dict[str, Any]:
        return {"provider": "scripted", "model": self.model_id, "apiKeyEnv": self.variable}

    def generate(self, request: ModelRequest, **options: Any) -> ModelResponse:
        assert os.environ[self.variable]
        return super().generate(request, **options)


KEYED_TURNS = [turn(None, write("call_write", "output/main.md", "hi"),
                    call("call_commit", "workspace_commit", {})),
               turn(None, finish())]


def _no_file_holds(root: Path, secret: str, variable: str) -> None:
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files
    assert [p for p in files if secret.encode() in p.read_bytes()] == []
    assert any(variable.encode() in p.read_bytes() for p in files)


def test_an_api_key_in_the_environment_is_never_written_under_the_lab(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "fake-key-0123456789abcdef-never-written"
    monkeypatch.setenv("TAVERNLAB_TEST_KEY", secret)
    with Lab(tmp_path / "lab") as lab:
        outcome = lab.run_agent("Write.", model=KeyedModel(KEYED_TURNS, "TAVERNLAB_TEST_KEY"))
        assert outcome.status == "completed"
    _no_file_holds(tmp_path / "lab", secret, "TAVERNLAB_TEST_KEY")


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_the_real_clients_key_is_never_written_under_the_lab(tmp_path: Path,
                                                             model_for: Any) -> None:
    from model_servers import TEST_KEY, TEST_KEY_ENV

    model = model_for(KEYED_TURNS)
    with Lab(tmp_path / "lab") as lab:
        outcome = lab.run_agent("Write.", model=model.provider)
        assert outcome.status == "completed"
        assert os.environ[TEST_KEY_ENV] == TEST_KEY
    _no_file_holds(tmp_path / "lab", TEST_KEY, TEST_KEY_ENV)


def test_closing_the_lab_cancels_a_running_loop_and_ends_its_thread(tmp_path: Path) -> None:
    slow = turn("Thinking " * 200, write("call_write", "output/main.md", "never"))
    slow["delayMs"] = 5000  # the cancel ends the pause; a busy machine cannot outrun it
    lab = Lab(tmp_path / "lab")
    handle = lab.start_agent("Write.", model=Scripted([slow]), presentation="background")
    _wait_for(handle.run, "model_call_attempt_started")
    lab.close()
    assert handle.done and handle.wait(0).status == "cancelled"
    assert _agent_threads() == []


def test_a_model_binding_makes_its_client(lab: Lab) -> None:
    from model_servers import ModelServer

    with ModelServer("openai", default_agent_responses()) as server:
        binding = {"provider": "openai_compatible", "model": "test-model",
                   "baseUrl": server.base_url, "apiKeyEnv": "TAVERNLAB_BINDING_KEY",
                   "params": {"temperature": 0.25}}
        os.environ["TAVERNLAB_BINDING_KEY"] = "sk-binding"
        try:
            outcome = lab.run_agent("Write.", model=None, presentation="background",
                                    profile={"model": binding})
        finally:
            del os.environ["TAVERNLAB_BINDING_KEY"]
        assert outcome.status == "completed"
        assert [body["temperature"] for body in server.requests] == [0.25, 0.25]
    snapshot = (outcome.run.dir / "input" / "prompt_snapshot.json").read_text()
    assert '"temperature": 0.25' in snapshot
    with pytest.raises(UsageError):
        lab.run_agent("Write.", model={"provider": "gemini", "model": "x"})


def test_a_scripted_run_writes_the_same_bytes_in_two_labs(tmp_path: Path) -> None:
    from tavernlab.clock import FixedClock, SequentialIds

    def play(name: str) -> dict[str, bytes]:
        with Lab(tmp_path / name, clock=FixedClock(), ids=SequentialIds()) as lab:
            turns = [turn("Draft.", write("call_write", "output/main.md", "hello"),
                          call("call_commit", "workspace_commit", {})),
                     turn(None, finish())]
            run = lab.run_agent("Write.", model=Scripted(turns)).run
            return {str(p.relative_to(run.dir)): p.read_bytes()
                    for p in sorted(run.dir.rglob("*")) if p.is_file()}

    first, second = play("one"), play("two")
    assert first.keys() == second.keys()
    assert "model-responses/round-002.json" in first
    assert [name for name in first if first[name] != second[name]] == []


def test_a_failing_live_view_never_breaks_the_run(lab: Lab) -> None:
    def broken(live: Any) -> None:
        raise RuntimeError("the widget went away")

    outcome = lab.run_agent("Write.", model=Scripted(default_agent_responses()),
                            presentation="background", on_delta=broken)
    assert outcome.status == "completed"
