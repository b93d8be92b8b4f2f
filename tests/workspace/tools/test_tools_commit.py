"""The texts and refusals of ``workspace.commit`` and ``workspace.finish`` (docs/workspace.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tavernlab.host import Lab, Run
from tavernlab.host._run_control import COMMITTED

#: The ``put`` fixture (tests/conftest.py): a shell-like unchecked write.
Put = Callable[[Run, str, str], None]


@pytest.mark.parametrize("mode", ["prepend", "", "REPLACE"])
def test_mode_invalid(run: Run, mode: str, put: Put) -> None:
    put(run, "output/main.md", "hi")
    result = run.call_tool("workspace.commit", {"mode": mode})
    assert (result.error_code, result.content) == (
        "workspace.commit_mode_invalid", f"mode must be `replace` or `append`, got `{mode}`")
    assert run.internals.explicit_commits == 0
    assert run.chat is not None and run.chat.messages == []


def test_replace_and_append_texts(run: Run, put: Put) -> None:
    put(run, "output/main.md", "body")
    result = run.call_tool("workspace.commit", {})
    assert (result.is_error, result.content, result.structured, result.resource_refs) == (
        False, COMMITTED.format(path="output/main.md", mode="Replace"),
        {"path": "output/main.md", "mode": "replace", "messageId": "0", "messageIndex": 0,
         "chars": 4, "words": 1}, ["output/main.md"])
    assert result.content.startswith(
        "Committed output/main.md to the current chat message with mode Replace. You may "
        "continue editing and commit again if needed. When all intended commits are complete, "
        "call workspace_finish to end the run. Do not use plain text as the final answer; the "
        "run must finish through workspace_finish.")
    put(run, "scratch/more.md", " and more")
    result = run.call_tool("workspace.commit",
                           {"path": "scratch/more.md", "mode": "append", "reason": "extend"})
    assert (result.content, result.structured) == (
        COMMITTED.format(path="scratch/more.md", mode="Append"),
        {"path": "scratch/more.md", "mode": "append", "messageId": "0", "messageIndex": 0,
         "chars": 9, "words": 2})


def test_a_visible_read_only_file_can_be_committed(run: Run) -> None:
    run.call_tool("workspace.list_files", {"path": "output"}, call_id="call_a")
    stored = run.call_tool("workspace.list_files",
                           {"path": f"tool-results/{run.internals.main.id}"})
    path = stored.structured["entries"][0]["path"]
    assert not run.call_tool("workspace.commit", {"path": path}).is_error


def test_finish_texts(lab: Lab, put: Put) -> None:
    run = lab.start_run(chat_id="alice")
    refused = run.call_tool("workspace.finish", {})
    assert (refused.error_code, refused.content) == (
        "agent.foreground_commit_required",
        "Foreground Agent runs must call workspace.commit successfully before workspace.finish.")
    put(run, "output/main.md", "body")
    run.call_tool("workspace.commit", {})
    done = run.call_tool("workspace.finish", {"reason": "done"})
    assert (done.is_error, done.content) == (False, "Finished the Agent run.")
    background = lab.start_run(chat_id="alice", presentation="background")
    assert background.call_tool("workspace.finish", {}).content == "Finished the Agent run."


def test_a_session_run_finishes_without_a_commit(lab: Lab) -> None:
    run = lab.start_run(session=lab.sessions.create("t").id)
    assert run.call_tool("workspace.finish", {}).content == "Finished the Agent run."
