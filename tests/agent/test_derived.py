"""Cases derived from upstream's loop code: drift recovery, the round budget, completion
tools that must come last, unadvertised aliases, what the model reads for an error, the
audit names, and the default system prompt."""

from __future__ import annotations

from typing import Any

from tests.agent.scripts import by_call, call, finish, payloads, stored, turn, write

from tavernlab import Lab
from tavernlab.layout import tool_record_name

NUDGE_34 = (
    "[system reminder, direct output recovery attempt 1] You replied with plain text, but "
    "this run must continue through Agent tools until workspace_finish. Inspect the workspace "
    "if needed, produce the answer through workspace_write_file and workspace_commit, then "
    "call workspace_finish. I saved your direct text to output/direct_output.md. If that text "
    'is the intended reply, call workspace_commit with path "output/direct_output.md" before '
    "workspace_finish. Do NOT answer directly in plain text.")

WORKSPACE_ONLY = ["workspace.list_files", "workspace.search_files", "workspace.read_file",
                  "workspace.write_file", "workspace.apply_patch", "workspace.shell",
                  "workspace.commit", "workspace.finish"]

PROMPT_41 = """\
---
tools:
- workspace_list_files
- workspace_search_files
- workspace_read_file
- workspace_write_file
- workspace_apply_patch
- workspace_shell
- workspace_commit
- workspace_finish
---

# Agent Mode is active.
- Work using the available agent tools. Tool results are working context, not chat messages.
- Every model turn must include at least one Agent tool call. Plain text alone does not \
complete the current stage.

- Workspace tools share the same files. Each shell call starts a new session; files persist \
between calls.
- After editing a file with workspace_shell, read it with workspace_read_file before patching \
or replacing it with the text tools.
- Use workspace_commit to publish Run workspace files into the current chat message. Without \
arguments, it will replace the current run's chat message with output/main.md; mode append \
will append to the same message, creating it if this run has not committed yet.
- Use persist/ to store concise information that should carry over into subsequent runs of \
the same chat, such as persistent plot facts, unresolved threads, relationship states, and \
user style preferences.
- **Do not** copy full chat history, final replies, tool results, or temporary reasoning into \
persist/.
- Readable workspace directories: output/, scratch/, plan/, summaries/, persist/, \
tool-results/, skills/.
- Writable workspace directories: output/, scratch/, plan/, summaries/, persist/.
> You may encounter: "No visible workspace files found." This happens because there are no \
persisted files; please continue.
# **Important**: Before calling workspace_finish, you **must successfully call \
workspace_commit at least once** so that the user can see the final chat message.
# **Important**: Do not answer in plain text. Finish by calling workspace_finish.

# Basic tool calling flow (adjusted based on the actual situation, but the flow must include \
workspace_commit + workspace_finish):

A simple template you can follow:
    (thoughts before actions)
    (call tools)(optional)

    Now I need to call "workspace_commit" once.
    Good, it has been committed. Finally, don't forget to call "workspace_finish".

You also can follow commit-N-times template:
    (thoughts before actions)
    (workspace_read_file)
    (call workspace_commit with append mode)
    (think)
    (edit if necessary)
    (workspace_commit with append mode)

Anyway: TOOLS&SKILLS IS ALL YOU NEED"""


def test_plain_text_is_saved_as_direct_output_and_answered_with_a_nudge(
        lab: Lab, model_for: Any) -> None:
    model = model_for([turn("Hi"),
                      turn(None, call("call_commit", "workspace_commit",
                                      {"path": "output/direct_output.md"}), finish())])
    outcome = lab.run_agent("Say hi.", model=model.provider, profile={"tools": {"maxRounds": 3}})
    run = outcome.run
    assert outcome.status == "completed"
    assert run.read("output/direct_output.md") == "Hi"
    captured = payloads(run, "direct_output_captured")[0]
    assert {k: captured[k] for k in ("round", "path", "chars", "words", "modelResponsePath")
            } == {"round": 1, "path": "output/direct_output.md", "chars": 2, "words": 1,
                  "modelResponsePath": "model-responses/round-001.json"}
    assert model.sent[1].last_user_text == NUDGE_34
    assert model.sent[1].body["messages"][-1]["role"] == "user"
    drift = payloads(run, "drift_recovery_attempted")[0]
    assert drift == {"attempt": 1, "maxAttempts": 2, "maxRounds": 3,
                     "limitReason": "max_rounds", "round": 1, "invocationId": "inv_root",
                     "committedCount": 0, "reasonCode": "model.tool_call_required"}
    assert lab.chat("agent").messages[0].swipes[0].body == "Hi"


def test_plain_text_in_the_last_round_fails_the_run(lab: Lab, model_for: Any) -> None:
    model = model_for([turn("Hi"), turn("Hi again")])
    outcome = lab.run_agent("Say hi.", model=model.provider, profile={"tools": {"maxRounds": 2}})
    assert outcome.status == "failed"
    failed = payloads(outcome.run, "run_failed")[0]
    assert {k: failed[k] for k in ("code", "message", "userRetryable", "retryable")} == {
        "code": "model.tool_call_required",
        "message": "model must use Agent tools and complete through workspace_finish",
        "userRetryable": True, "retryable": False}
    assert failed["technicalMessage"] == (
        "Validation error: model.tool_call_required: model must use Agent tools and complete "
        "through workspace_finish")
    assert outcome.run.status == "failed"


def test_plain_text_after_a_confirmed_commit_is_a_partial_success(lab: Lab, model_for: Any) -> None:
    model = model_for([
        turn(None, write("call_write", "output/main.md", "kept"),
             call("call_commit", "workspace_commit", {})),
        turn("Done, I think.")])
    outcome = lab.run_agent("Write.", model=model.provider, profile={"tools": {"maxRounds": 2}})
    assert outcome.status == "partial_success"
    assert payloads(outcome.run, "run_failed") == []
    partial = payloads(outcome.run, "run_partial_success")[0]
    assert partial["code"] == "model.tool_call_required"
    assert (partial["retryable"], partial["userRetryable"]) == (False, False)
    assert partial["preservedCommitCount"] == 1
    assert partial["preservedCommits"] == [{"path": "output/main.md", "mode": "replace",
                                            "messageId": "0", "round": 1, "isExplicit": True}]
    assert lab.chat("agent").messages[0].swipes[0].body == "kept"


def test_rounds_without_finishing_exceed_the_round_budget(lab: Lab, model_for: Any) -> None:
    model = model_for([turn(None, call("call_1", "workspace_list_files", {})),
                      turn(None, call("call_2", "workspace_list_files", {}))])
    outcome = lab.run_agent("List.", model=model.provider, presentation="background",
                            profile={"tools": {"maxRounds": 2}})
    assert outcome.status == "failed"
    assert outcome.failure is not None
    assert (outcome.failure["code"], outcome.failure["message"]) == (
        "agent.max_tool_rounds_exceeded", "workspace_finish was not completed within 2 rounds")
    assert outcome.failure["userRetryable"] is True
    assert len(model.sent) == 2


def test_finish_before_another_call_is_refused_and_the_other_call_runs(
        lab: Lab, model_for: Any) -> None:
    model = model_for([turn(None, finish("call_finish_early"),
                           write("call_write", "output/main.md", "written")),
                      turn(None, finish())])
    outcome = lab.run_agent("Write.", model=model.provider, presentation="background")
    run = outcome.run
    early = stored(run, by_call(run, "tool_result_stored", "call_finish_early")[0]["path"])
    assert (early["errorCode"], early["content"]) == (
        "agent.tool_after_finish", "workspace.finish must be the final tool call in a model "
        "turn; complete the other work first, then call it again.")
    assert run.read("output/main.md") == "written"
    assert outcome.status == "completed" and len(model.sent) == 2


def test_an_unadvertised_alias_fails_the_run_before_any_tool_runs(lab: Lab, model_for: Any) -> None:
    model = model_for([turn(None, write("call_write", "output/main.md", "x"),
                           call("call_foo", "foo", {}))])
    outcome = lab.run_agent("Do it.", model=model.provider, presentation="background")
    assert outcome.status == "failed"
    assert outcome.failure is not None
    assert (outcome.failure["code"], outcome.failure["message"]) == (
        "model.unknown_tool_call", "model returned unadvertised tool alias `foo`")
    assert payloads(outcome.run, "tool_call_requested") == []
    assert not (outcome.run.workspace_dir / "output" / "main.md").exists()


def test_the_model_reads_an_error_result_under_a_tool_error_heading(
        lab: Lab, model_for: Any) -> None:
    model = model_for([turn(None, write("call_denied", "run.json", "{}")), turn(None, finish())])
    outcome = lab.run_agent("Write.", model=model.provider, presentation="background")
    run = outcome.run
    record = stored(run, by_call(run, "tool_result_stored", "call_denied")[0]["path"])
    assert record["errorCode"] == "workspace.path_not_writable"
    assert model.sent[1].tool_texts == [
        "## Tool error\n\nPermission denied: `run.json` is not writable for this task."]
    assert record["content"] == "Permission denied: `run.json` is not writable for this task."
    assert outcome.status == "completed"


def test_tool_call_audit_names_hash_the_call_id() -> None:
    assert tool_record_name(1, "call_1") == "round-001-call_74196fe72e4cdc13"
    assert tool_record_name(1, "call_mcp") == "round-001-call_fe79da5f09df9787"
    assert tool_record_name(1, "call_write") == "round-001-call_d944184886a046b8"
    assert tool_record_name(3, "finish") == "round-003-call_42af43e3616eba4a"


def test_a_loop_run_stores_its_records_under_the_audit_names(lab: Lab, model_for: Any) -> None:
    model = model_for([turn(None, write("call_write", "output/main.md", "x")),
                      turn(None, call("call_1", "workspace_list_files", {})),
                      turn(None, call("finish", "workspace_finish", {}))])
    run = lab.run_agent("Write.", model=model.provider, presentation="background").run
    assert (run.dir / "tool-results/inv_root/round-001-call_d944184886a046b8.json").is_file()
    assert (run.dir / "tool-args/inv_root/round-002-call_74196fe72e4cdc13.json").is_file()
    assert (run.dir / "tool-results/inv_root/round-003-call_42af43e3616eba4a.json").is_file()
    assert (run.dir / "model-responses/round-003.json").is_file()


def test_the_default_workspace_only_foreground_profile_gets_the_v5_system_prompt(
        lab: Lab, model_for: Any) -> None:
    model = model_for([turn(None, write("call_write", "output/main.md", "x"),
                           call("call_commit", "workspace_commit", {})),
                      turn(None, finish())])
    outcome = lab.run_agent("Write.", model=model.provider,
                            profile={"tools": {"allow": WORKSPACE_ONLY}})
    assert outcome.status == "completed"
    system = model.sent[0].system
    assert system == PROMPT_41
    assert "Available agents:" not in system
    snapshot = stored(outcome.run, "input/prompt_snapshot.json")
    assert snapshot["messages"][0]["parts"][0]["text"] == PROMPT_41
    assert snapshot["messages"][0]["providerMetadata"] == {"promptComponent": "agentSystemPrompt"}
    assert snapshot["messages"][1]["parts"][0]["text"] == "Write."
    assert model.sent[1].system == PROMPT_41
