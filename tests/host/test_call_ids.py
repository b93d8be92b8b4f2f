"""Call ids come from the run's own counter on disk, so every process writing a run hands out
different ones; a call's arguments and stored result are created, never replaced, and a call
id used twice in a round fails the run with the first call's records untouched."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tavernlab.errors import RunStateError, WriteConflict
from tavernlab.host import Lab, Run
from tavernlab.workspace.storage import CALL_COUNTER_NAME


def requested_ids(run: Run) -> list[str]:
    return [r.payload.call_id for r in run.events(types=["tool_call_requested"])]


def stored_results(directory: Path) -> dict[str, dict[str, object]]:
    """Each stored result file (relative path) with its JSON."""
    return {str(p.relative_to(directory)): json.loads(p.read_text())
            for p in sorted(directory.rglob("*.json"))}


def test_two_handles_on_one_run_never_reuse_a_call_id(lab: Lab) -> None:
    first = lab.start_run(chat_id="alice")
    second = Lab(lab.root).open_run(first.id)
    for _ in range(3):
        first.call_tool("workspace.list_files", {})
        second.call_tool("workspace.list_files", {})
    ids = requested_ids(first)
    assert ids == [f"call_{n}" for n in range(1, 7)]
    results = stored_results(first.dir / "tool-results")
    assert sorted(r["callId"] for r in results.values()) == sorted(ids)
    assert (first.dir / CALL_COUNTER_NAME).read_bytes() == b"%020d\n" % 6


def test_a_reopened_run_continues_after_every_id_any_process_used(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.list_files", {})
    other = Lab(lab.root).open_run(run.id)
    other.call_tool("workspace.list_files", {})
    run.call_tool("workspace.list_files", {})  # this handle never saw call_2 in its counters
    assert requested_ids(run) == ["call_1", "call_2", "call_3"]
    Lab(lab.root).open_run(run.id).call_tool("workspace.list_files", {})
    assert requested_ids(run)[-1] == "call_4"


def test_an_id_the_caller_chose_moves_the_counter_past_it(run: Run) -> None:
    run.call_tool("workspace.list_files", {}, call_id="call_7")
    run.call_tool("workspace.list_files", {}, call_id="model-chosen")
    run.call_tool("workspace.list_files", {})
    assert requested_ids(run) == ["call_7", "model-chosen", "call_8"]


def test_a_duplicate_call_id_in_a_round_fails_the_run_and_keeps_the_first_call(run: Run
                                                                               ) -> None:
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "first"},
                  call_id="dup")
    args = {p: p.read_bytes() for p in (run.dir / "tool-args").rglob("*.json")}
    results = {p: p.read_bytes() for p in (run.dir / "tool-results").rglob("*.json")}
    with pytest.raises(WriteConflict) as caught:
        run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "second"},
                      call_id="dup")
    assert caught.value.code == "workspace.write_conflict"
    [(path, data)] = args.items()
    assert str(caught.value) == (f"workspace file `{path.relative_to(run.dir)}` "
                                 "already exists")
    assert caught.value.actual_sha256 == hashlib.sha256(data).hexdigest()
    assert {p: p.read_bytes() for p in (run.dir / "tool-args").rglob("*.json")} == args
    assert {p: p.read_bytes() for p in (run.dir / "tool-results").rglob("*.json")} == results
    assert (run.dir / "output" / "a.md").read_text() == "first"
    assert run.status == "failed"
    assert requested_ids(run) == ["dup"]  # the second call never started
    failed = run.events(types=["run_failed"])[-1]
    assert failed.payload.code == "agent.internal_error"
    assert "duplicate tool call id `dup` in round 1" in failed.payload.message
    assert failed.payload.technical_message.startswith("Internal error: duplicate tool call id")
    assert (failed.payload.retryable, failed.payload.user_retryable) == (False, False)
    with pytest.raises(RunStateError):
        run.call_tool("workspace.list_files", {})


def test_the_same_id_in_another_round_is_a_new_call(run: Run) -> None:
    run.call_tool("workspace.list_files", {}, call_id="again")
    run.next_round()
    run.call_tool("workspace.list_files", {}, call_id="again")
    assert run.status != "failed"
    assert len(list((run.dir / "tool-results").rglob("*.json"))) == 2


CLI_CALL = [sys.executable, "-m", "tavernlab.cli", "tool"]


def test_a_command_line_call_on_a_session_run_a_notebook_holds_is_never_overwritten(
        lab: Lab) -> None:
    session = lab.sessions.create("work")
    run = lab.start_run(session=session.id)
    run.call_tool("workspace.list_files", {})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [*CLI_CALL, run.id, "workspace.write_file",
         '{"path": "work/cli.md", "content": "from the command line"}', "--json",
         "--lab", str(lab.root)],
        capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    cli_result = json.loads(done.stdout)
    before = stored_results(session.workspace_dir / "tool-results")
    run.call_tool("workspace.list_files", {})  # the notebook's next call
    after = stored_results(session.workspace_dir / "tool-results")
    assert {k: v for k, v in after.items() if k in before} == before
    assert len(after) == len(before) + 1
    assert sorted(r["callId"] for r in after.values()) == ["call_1", "call_2", "call_3"]
    assert cli_result["callId"] == "call_2"
