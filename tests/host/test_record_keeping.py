"""Record keeping per call: a call's records are written together and
published in order with their final numbers, run.json and the index change only when their
content does, a reopened run never reads its whole history, and reading parses in bulk with
the same results as one line at a time."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tavernlab.clock import SYSTEM_CLOCK, RandomIds
from tavernlab.events import (
    ContextAssembled,
    ContextSummary,
    Event,
    EventLog,
    FileChange,
    FileChanged,
    JournalLog,
    StatusChange,
    StatusChanged,
    parse_event,
)
from tavernlab.host import Lab, Run
from tavernlab.host._ledger import CHECKPOINT_EVERY_RECORDS, CHECKPOINTS
from tavernlab.workspace.roots import Profile


def unlimited(lab: Lab) -> Run:
    """A run whose tool budget never runs out (the tests make many calls)."""
    profile = Profile()
    profile.tools.max_calls_per_run = None
    profile.tools.max_rounds = None
    return lab.start_run(chat_id="alice", profile=profile)


def on_disk(run: Run) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run.dir / "events.jsonl").read_text().splitlines()]


# --- one append per call -----------------------------------------------------------------------


def test_a_calls_records_reach_the_file_together_and_subscribers_in_order(run: Run) -> None:
    seen: list[tuple[str, int, int]] = []

    def watch(record: Event) -> None:
        # When a record is published, every event of its call is already in the file.
        seen.append((record.type, record.seq, len(on_disk(run))))

    before = len(on_disk(run))
    with run.subscribe(watch):
        result = run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "x"})
    after = on_disk(run)
    assert all(count == len(after) for _, _, count in seen)
    events = [(t, s) for t, s, _ in seen if t != "file_changed"]
    assert events == [(e["type"], e["seq"]) for e in after[before:]]
    assert [e["type"] for e in after[before:]] == [
        "tool_call_requested", "tool_call_started", "status_changed", "workspace_file_written",
        "tool_result_stored", "tool_call_completed", "status_changed"]
    changes = [r for r in run.events(types="file_changed") if r.payload.call_id == result.call_id]
    assert [(r.type, r.seq) for r in changes] == [(t, s) for t, s, _ in seen if t == "file_changed"]


def test_a_streaming_call_is_written_before_its_first_output(run: Run) -> None:
    on_file: list[list[str]] = []

    def output(stdout: str, stderr: str) -> None:
        on_file.append([str(e["type"]) for e in on_disk(run)[-3:]])

    run.shell("echo hi", on_output=output)
    assert on_file and on_file[0] == ["tool_call_requested", "tool_call_started",
                                      "status_changed"]


def test_another_threads_record_flushes_an_open_call_first(run: Run) -> None:
    got: list[tuple[str, int]] = []
    started = threading.Event()
    release = threading.Event()

    def hold(stdout: str, stderr: str) -> None:
        started.set()
        release.wait(10)

    with run.subscribe(lambda r: got.append((r.type, r.seq))):
        worker = threading.Thread(target=lambda: run.shell("echo a; echo b",
                                                           on_output=hold))
        worker.start()
        assert started.wait(10)
        run._core.emit(ContextAssembled, ContextSummary(has_host_context=False))
        release.set()
        worker.join(10)
    seqs = [seq for kind, seq in got if kind != "file_changed"]
    assert seqs == sorted(seqs) == list(range(seqs[0], seqs[0] + len(seqs)))
    assert [r["seq"] for r in on_disk(run)] == list(range(1, len(on_disk(run)) + 1))


def test_run_json_follows_the_record_and_a_call_leaves_the_index_alone(lab: Lab) -> None:
    run = unlimited(lab)
    index = lab.workspaces_dir / "index" / "runs" / f"{run.id}.json"
    summary = lab.workspaces_dir / "index" / "run-summaries" / f"{run.id}.json"
    marks = (os.stat(index).st_ino, os.stat(summary).st_ino)
    for number in range(3):
        run.call_tool("workspace.write_file", {"path": f"output/{number}.md", "content": "x"})
    record = json.loads((run.dir / "run.json").read_text())
    assert record["status"] == "calling_model"
    assert record["updatedAt"] == json.loads(run.record.model_dump_json(by_alias=True))[
        "updatedAt"]
    assert (os.stat(index).st_ino, os.stat(summary).st_ino) == marks  # never rewritten
    assert not run.call_tool("workspace.commit", {"path": "output/0.md"}).is_error
    assert json.loads(index.read_text())["status"] == "calling_model"  # back where it was
    assert not run.finish().is_error
    assert json.loads(index.read_text())["status"] == "completed"
    assert json.loads(summary.read_text())["status"] == "completed"
    assert json.loads(index.read_text()) == json.loads((run.dir / "run.json").read_text())


# --- reopening without reading the history ------------------------------------------------------


def long_run(lab: Lab, calls: int) -> Run:
    run = unlimited(lab)
    for number in range(calls):
        run.call_tool("workspace.write_file", {"path": f"scratch/{number % 7}.md",
                                               "content": str(number), "mode": "append"})
    return run


def test_open_run_reads_the_checkpoint_not_the_history(lab: Lab) -> None:
    run = long_run(lab, 60)
    assert len(on_disk(run)) > CHECKPOINT_EVERY_RECORDS
    critic = run.start_subagent("critic")
    run.call_tool("task.return", {"result": "fine"}, invocation=critic)
    run.next_round()
    run.call_tool("workspace.write_file", {"path": "output/last.md", "content": "x"})
    assert (run.dir / CHECKPOINTS).is_file()
    log = run.dir / "events.jsonl"
    size = log.stat().st_size
    first = log.read_bytes()[: log.read_bytes().index(b"\n")]
    with open(log, "r+b") as handle:  # break the oldest line, same length: a full read fails
        handle.write(b"!" * len(first))
    assert log.stat().st_size == size
    again = Lab(lab.root).open_run(run.id)
    assert (run.round, again.round) == (2, 3)  # the round after the last one with a call
    assert [s.id for s in again.subagents] == [critic.id]
    assert again._core.counters.calls == run._core.counters.calls
    assert dict(again._core.counters.calls_per_tool) == dict(run._core.counters.calls_per_tool)
    nxt = again.call_tool("workspace.read_file", {"path": "output/last.md"})
    assert nxt.call_id == f"call_{run._core.counters.call_seq + 1}"
    with pytest.raises(json.JSONDecodeError):
        again.events(journal=False)


def test_open_run_replays_what_another_writer_appended_after_the_checkpoint(lab: Lab) -> None:
    run = long_run(lab, 45)
    before = run._core.counters.calls
    other = Lab(lab.root).open_run(run.id)
    for number in range(3):  # another process's calls (few: no new checkpoint yet)
        other.call_tool("workspace.write_file", {"path": f"output/o{number}.md",
                                                 "content": "x"})
    log = EventLog(run.dir / "events.jsonl", run.id, clock=SYSTEM_CLOCK, ids=RandomIds())
    log.append(ContextAssembled, ContextSummary(has_host_context=False))
    third = Lab(lab.root).open_run(run.id)
    assert third._core.counters.calls == before + 3
    assert third._core.counters.calls_per_tool["workspace.write_file"] == before + 3
    seqs = [e.seq for e in third.events(journal=False)]
    assert seqs == list(range(1, len(seqs) + 1))
    third.call_tool("workspace.read_file", {"path": "output/o0.md"})
    assert [e.seq for e in third.events(journal=False)][-1] == len(seqs) + 7


def test_a_run_without_checkpoints_is_restored_from_its_history(lab: Lab) -> None:
    run = long_run(lab, 45)
    (run.dir / CHECKPOINTS).unlink()
    again = Lab(lab.root).open_run(run.id)
    assert again._core.counters.calls == 45 and again.round == 2


# --- reading in bulk --------------------------------------------------------------------------


def test_bulk_reading_equals_reading_line_by_line(lab: Lab) -> None:
    run = long_run(lab, 5)
    run.js(["-e", "console.log(1)"])
    foreign = {"seq": len(on_disk(run)) + 1, "id": "evt_x", "runId": run.id,
               "timestamp": "2026-01-01T00:00:00Z", "level": "info",
               "type": "checkpoint_created", "payload": {"any": [1, 2]}}
    with open(run.dir / "events.jsonl", "a") as handle:
        handle.write(json.dumps(foreign) + "\n")
    lines = (run.dir / "events.jsonl").read_text().splitlines()
    assert run.events(journal=False) == [parse_event(json.loads(line)) for line in lines]
    last = run.events(journal=False)[-1]
    assert (type(last), last.type, last.payload) == (Event, "checkpoint_created", {"any": [1, 2]})
    journal = (run.dir / "journal.jsonl").read_text().splitlines()
    assert [r for r in run.events() if r.source == "journal"] == [
        parse_event(json.loads(line)) for line in journal]
    assert any(isinstance(r, FileChanged) for r in run.events())


def test_tail_of_the_log_is_found_from_its_last_line(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", "run_x", clock=SYSTEM_CLOCK, ids=RandomIds())
    for _ in range(3):
        log.append(ContextAssembled, ContextSummary(has_host_context=False))
    fresh = EventLog(tmp_path / "events.jsonl", "run_x", clock=SYSTEM_CLOCK, ids=RandomIds())
    assert fresh.append(ContextAssembled, ContextSummary(has_host_context=False)).seq == 4
    assert [e.seq for e in fresh.read(2)] == [3, 4]


def test_text_that_cannot_be_written_is_refused_before_anything_is(tmp_path: Path) -> None:
    """A lone surrogate validates as a Python string but has no UTF-8 form: the record is
    refused when it is built, before anything is written, and neither log changes."""
    events = EventLog(tmp_path / "events.jsonl", "run_x", clock=SYSTEM_CLOCK, ids=RandomIds())
    journal = JournalLog(tmp_path / "journal.jsonl", events)
    events.append(StatusChanged, StatusChange(status="calling_model"))
    before = (tmp_path / "events.jsonl").read_bytes()
    with pytest.raises(UnicodeEncodeError):
        events.append(StatusChanged, StatusChange(status="bad \ud800"))
    with pytest.raises(UnicodeEncodeError):
        journal.append(FileChanged, FileChange(path="scratch/\ud800", change="created",
                                               node="file", writer="tool"))
    assert (tmp_path / "events.jsonl").read_bytes() == before
    assert not (tmp_path / "journal.jsonl").exists()
    assert events.append(StatusChanged, StatusChange(status="finished")).seq == 2
