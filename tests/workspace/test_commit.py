"""Commit to chat and auto-commit (docs/persist.md).

The shell reaches storage through the same ``ScopedWorkspaceFs`` and tracker as every other
caller; these tests drive that view directly (the shell's own tests repeat the scenarios
through bashkit).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tavernlab.errors import InvalidData
from tavernlab.host import Lab, Run
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage._fs import WriteGuard


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path / "lab")


def put(run: Run, path: str, text: str) -> None:
    run.internals.scope.write_text(WorkspacePath(path), text, WriteGuard.unchecked())


def commits(run: Run) -> list[tuple[str, bool, str, str]]:
    return [(e.payload.path, e.payload.is_explicit, e.payload.sha256, e.payload.mode)
            for e in run.events(types="chat_commit_requested", journal=False)]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_upstream_auto_commit_sequence(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    scope = run.internals.scope
    put(run, "output/main.md", "first")
    scope.rename(WorkspacePath("output/main.md"), WorkspacePath("output/Moved.MD"))
    put(run, "output/data.json", "{}")
    run.next_round()
    assert commits(run) == [("output/Moved.MD", False, sha("first"), "replace")]

    put(run, "scratch/draft/final.md", "final text")
    scope.rename(WorkspacePath("scratch/draft"), WorkspacePath("scratch/finalized"))
    run.next_round()
    assert commits(run)[1] == ("scratch/finalized/final.md", False, sha("final text"),
                               "replace")

    result = run.call_tool("workspace.commit", {"path": "scratch/finalized/final.md"})
    assert result.content.startswith("Committed scratch/finalized/final.md to the current chat "
                                     "message with mode Replace.")
    assert result.structured == {"path": "scratch/finalized/final.md", "mode": "replace",
                                 "messageId": "0", "messageIndex": 0, "chars": 10, "words": 2}
    event = run.events(types="chat_commit_requested", journal=False)[-1].payload
    assert (event.is_explicit, event.sha256, event.call_id) == (True, sha("final text"),
                                                                 result.call_id)
    run.next_round()
    assert len(commits(run)) == 3
    assert not run.finish().is_error
    assert run.status == "completed"
    messages = lab.chat("alice").messages
    assert len(messages) == 1 and messages[0].body == "final text"


def test_a_failed_round_has_no_auto_commit_but_keeps_the_file(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    put(run, "output/main.md", "kept\n")
    run.internals.tracker.clear_candidate()  # what a failing shell call does
    run.next_round()
    assert commits(run) == []
    result = run.call_tool("workspace.commit", {})
    assert not result.is_error
    assert lab.chat("alice").messages[0].body == "kept\n"


def test_one_auto_commit_per_round_with_the_last_text_file(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "A"})
    run.call_tool("workspace.write_file", {"path": "scratch/b.txt", "content": "B"})
    run.call_tool("workspace.write_file", {"path": "scratch/c.json", "content": "{}"})
    run.next_round()
    assert commits(run) == [("scratch/b.txt", False, sha("B"), "replace")]
    run.next_round()
    assert len(commits(run)) == 1
    run.internals.scope.remove(WorkspacePath("scratch/b.txt"), False)
    run.next_round()
    assert len(commits(run)) == 1


def test_no_auto_commit_after_an_explicit_commit_or_in_background(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    put(run, "output/main.md", "one")
    run.call_tool("workspace.commit", {})
    put(run, "output/main.md", "two")
    run.next_round()
    assert [c[1] for c in commits(run)] == [True]
    background = lab.start_run(chat_id="bob", presentation="background")
    put(background, "output/main.md", "bg")
    background.next_round()
    assert commits(background) == []
    assert not background.finish().is_error
    assert lab.chat("bob").messages == []


def test_append_commits_accumulate_and_create_the_message(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    put(run, "output/part1.md", "Hello ")
    put(run, "output/part2.md", "world")
    first = run.call_tool("workspace.commit", {"path": "output/part1.md", "mode": "append",
                                                "reason": "start"})
    assert first.content.startswith("Committed output/part1.md to the current chat message with "
                                    "mode Append.")
    run.call_tool("workspace.commit", {"path": "output/part2.md", "mode": "append"})
    assert lab.chat("alice").messages[0].body == "Hello world"
    run.call_tool("workspace.commit", {"path": "output/part2.md"})
    assert lab.chat("alice").messages[0].body == "world"
    assert len(lab.chat("alice").messages) == 1


def test_commit_reads_the_file_at_commit_time_and_needs_visibility_only(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "v1"})
    stored = run.call_tool("workspace.list_files", {"path": "tool-results"})
    assert not stored.is_error
    result_file = next(p for p in stored.resource_refs if p.endswith(".json"))
    ok = run.call_tool("workspace.commit", {"path": result_file})
    assert not ok.is_error  # tool-results is read-only but visible
    hidden = run.call_tool("workspace.commit", {"path": "input/prompt_snapshot.json"})
    assert (hidden.error_code, hidden.content) == (
        "workspace.path_not_visible", "Permission denied: `input/prompt_snapshot.json` is not "
        "readable for this task.")
    missing = run.call_tool("workspace.commit", {"path": "output/nope.md"})
    assert (missing.error_code, missing.content) == (
        "workspace.file_not_found", "workspace path `output/nope.md` was not found.")
    bad = run.call_tool("workspace.commit", {"mode": "merge"})
    assert (bad.error_code, bad.content) == ("workspace.commit_mode_invalid",
                                             "mode must be `replace` or `append`, got `merge`")


def test_foreground_finish_requires_an_explicit_commit(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    put(run, "output/main.md", "auto")
    run.next_round()  # an auto-commit is not an explicit one
    refused = run.finish()
    assert (refused.error_code, refused.content) == (
        "agent.foreground_commit_required",
        "Foreground Agent runs must call workspace.commit successfully before workspace.finish.")
    assert run.status == "calling_model"
    run.call_tool("workspace.commit", {})
    done = run.finish("all done")
    assert done.content == "Finished the Agent run."
    assert run.status == "completed"
    with pytest.raises(Exception, match="is completed"):
        run.call_tool("workspace.list_files", {})


def test_confirmed_commits_survive_a_failed_run(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    put(run, "output/main.md", "confirmed")
    run.call_tool("workspace.commit", {})
    run._core.fail("simulated provider failure")
    assert run.status == "failed"
    assert lab.chat("alice").messages[0].body == "confirmed"
    assert run.events(types="run_failed", journal=False)[0].level == "error"


def test_sub_agents_return_results_and_cannot_commit(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    helper = run.start_subagent("critic")
    for tool in ("workspace.commit", "workspace.finish"):
        refused = run.call_tool(tool, {}, invocation=helper)
        name = tool.replace(".", "_")
        assert (refused.error_code, refused.content) == (
            "tool.not_available", f"{name} is not available for this task.")
    first = run.call_tool("task.return", {"result": "looks good"}, invocation=helper)
    second = run.call_tool("task.return", {"result": "still good"}, invocation=helper)
    assert first.structured == {"path": "summaries/critic-result.md"}
    assert second.structured == {"path": "summaries/critic-result-002.md"}
    assert run.read("summaries/critic-result-002.md") == "still good"
    main_refused = run.call_tool("task.return", {"result": "x"})
    assert main_refused.error_code == "tool.not_available"


def test_selecting_a_swipe_chooses_the_next_runs_persist_base(lab: Lab) -> None:
    states = []
    for generation in ("normal", "swipe"):
        run = lab.start_run(chat_id="alice", generation_type=generation)
        put(run, "output/main.md", f"take {generation}")
        put(run, "persist/notes.md", generation)
        run.call_tool("workspace.commit", {})
        run.finish()
        states.append(run.persist_state_id)
    chat = lab.chat("alice")
    assert [len(m.swipes) for m in chat.messages] == [2]
    assert chat.current_persist_state() == states[1]
    chat.select_swipe(0, 0)
    assert chat.messages[0].body == "take normal"
    assert chat.current_persist_state() == states[0]
    with pytest.raises(InvalidData, match="message 0 has no swipe 2"):
        chat.select_swipe(0, 2)
    assert chat.messages[0].swipe_id == 0
    base = chat.current_persist_state()
    again = lab.start_run(chat_id="alice", persist_base=base)
    assert again.read("persist/notes.md") == "normal"


# --- the auto-commit callId (sections 8.3 and 10, Revision 2) ------------------------------------


def auto_commits(run: Run) -> list[tuple[str, str]]:
    """``(path, callId)`` of every auto-commit."""
    return [(e.payload.path, e.payload.call_id)
            for e in run.events(types="chat_commit_requested", journal=False)
            if not e.payload.is_explicit]


def shell(run: Run, command: str, call_id: str) -> None:
    result = run.call_tool("workspace.shell", {"command": command}, call_id=call_id)
    assert not result.is_error, result.content


def test_acceptance_5_the_call_that_moved_the_candidate(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    assert not run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "A"},
                             call_id="w1").is_error
    shell(run, "mv /output/a.md /output/b.md", "s1")
    assert not run.call_tool("workspace.write_file",
                             {"path": "scratch/data.json", "content": "{}"},
                             call_id="w2").is_error
    run.next_round()
    assert auto_commits(run) == [("output/b.md", "s1")]
    (event,) = run.events(types="chat_commit_requested", journal=False)
    assert (event.payload.is_explicit, event.payload.sha256) == (False, sha("A"))


def test_acceptance_1_2_3_and_6_through_the_shell(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    shell(run, "printf first > /output/main.md && mv /output/main.md /output/Moved.MD && "
               "printf '{}' > /output/data.json", "sh1")
    run.next_round()
    assert auto_commits(run) == [("output/Moved.MD", "sh1")]
    shell(run, "mkdir -p /scratch/draft && printf 'final text' > /scratch/draft/final.md",
          "write")
    shell(run, "mv /scratch/draft /scratch/finalized", "move")
    run.call_tool("workspace.read_file", {"path": "scratch/finalized/final.md"},
                  call_id="read")
    run.next_round()
    assert auto_commits(run)[1] == ("scratch/finalized/final.md", "move")
    commit = run.call_tool("workspace.commit", {"path": "scratch/finalized/final.md"},
                           call_id="commit")
    assert not commit.is_error
    explicit = run.events(types="chat_commit_requested", journal=False)[-1].payload
    assert (explicit.call_id, explicit.is_explicit, explicit.sha256) == (
        "commit", True, sha("final text"))


def test_later_calls_that_leave_the_candidate_alone_do_not_change_the_call_id(lab: Lab
                                                                              ) -> None:
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "A"},
                  call_id="w1")
    run.call_tool("workspace.write_file", {"path": "scratch/b.json", "content": "{}"},
                  call_id="json")
    run.call_tool("workspace.read_file", {"path": "output/a.md"}, call_id="read")
    run.call_tool("workspace.search_files", {"query": "A"}, call_id="search")
    shell(run, "printf x > /scratch/x.json && cat /output/a.md", "sh")
    failed = run.call_tool("workspace.apply_patch", {"path": "output/a.md", "old_string": "Z",
                                                     "new_string": "B"}, call_id="refused")
    assert failed.error_code == "workspace.patch_old_string_not_found"
    run.next_round()
    assert auto_commits(run) == [("output/a.md", "w1")]
    # a rewrite of the same candidate by a later call names that call
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "A2",
                                           "mode": "append"}, call_id="w2")
    run.call_tool("workspace.read_file", {"path": "output/a.md"}, call_id="r2")
    run.call_tool("workspace.apply_patch", {"path": "output/a.md", "old_string": "A2",
                                            "new_string": "A3"}, call_id="p1")
    run.next_round()
    assert auto_commits(run)[1] == ("output/a.md", "p1")


def test_generated_call_ids_are_used(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    result = run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "A"})
    run.next_round()
    assert auto_commits(run) == [("output/a.md", result.call_id)]
    assert result.call_id == "call_1"


def test_a_run_js_job_has_its_own_id(lab: Lab) -> None:
    """``run.js`` is not a tool call: its changes are attributed to the job's ``job_`` id."""
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "A"},
                  call_id="w1")
    job = run.js(["-e", "import { workspace } from '@tauritavern/runtime';\n"
                        "workspace.writeText('output/js.md', 'from js');"])
    assert job.exit_code == 0, job.stderr
    run.next_round()
    ((path, call_id),) = auto_commits(run)
    assert path == "output/js.md"
    assert call_id.startswith("job_") and len(call_id) == len("job_") + 32
    # the job's id is over once it ends: a later tool call is attributed to itself
    assert run.internals.tracker.call_id == "host"


def test_changes_made_through_run_scope_are_the_hosts(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "A"},
                  call_id="w1")
    put(run, "output/host.md", "by the notebook")
    run.next_round()
    assert auto_commits(run) == [("output/host.md", "host")]
