"""Watchable runs: typed events validated before the write, the journal, reading after a
position, subscriptions, following from another process, file changes from every writer."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tavernlab.events import (
    EVENT_TYPES,
    Event,
    FileChange,
    FileChanged,
    JournalRecord,
    RootList,
    StatusChanged,
)
from tavernlab.host import Lab, Run, order_key
from tavernlab.host._starting import persist_changes
from tavernlab.workspace.persist import PersistSnapshot
from tavernlab.workspace.persist._persist_tree import FileEntry

WRITE_JS = "import {workspace} from '@tauritavern/runtime';"


def sha(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def changes(run: Run, call_id: str | None = None) -> list[FileChange]:
    """The file_changed payloads of the run (of one call or job when ``call_id`` is given)."""
    return [r.payload for r in run.events(types="file_changed")
            if isinstance(r, FileChanged) and (call_id is None or r.payload.call_id == call_id)]


# --- typed events -----------------------------------------------------------------------------


def test_a_bad_payload_raises_before_anything_is_written(run: Run) -> None:
    log = run.dir / "events.jsonl"
    before = log.read_bytes()
    with pytest.raises(pydantic.ValidationError):
        run._core.emit(StatusChanged, RootList(roots=["output"]))
    assert log.read_bytes() == before
    assert run.events(journal=False)[-1].seq == before.count(b"\n")


def test_a_payload_that_is_not_the_model_goes_through_the_envelope(run: Run) -> None:
    """A payload given as its JSON object (not the model) is validated by the envelope and
    written exactly as the model would be; a subscriber gets the typed event."""
    seen: list[Event] = []
    with run.subscribe(seen.append):
        run._core.emit(StatusChanged, {"status": "calling_model"})  # type: ignore[arg-type]
    line = json.loads((run.dir / "events.jsonl").read_text().splitlines()[-1])
    assert line["type"] == "status_changed"
    assert line["payload"] == {"status": "calling_model"}
    assert isinstance(seen[-1], StatusChanged) and seen[-1].seq == line["seq"]


def test_every_event_tavernlab_writes_reads_back_typed(run: Run) -> None:
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "hi"})
    run.call_tool("workspace.read_file", {"path": "nope/x.md"})
    run.call_tool("workspace.commit", {})
    run.finish()
    for record in run.events():
        assert type(record) is not Event, record.type
        assert type(record).type_name() == record.type
        assert (record.type in EVENT_TYPES) == (record.source == "events")


# --- the journal ------------------------------------------------------------------------------


def test_a_js_job_is_journaled_with_digests(run: Run) -> None:
    result = run.js(["-", "a b"], cwd="/scratch", stdin="console.log(process.argv.length)")
    assert result.stdout == "3\n"
    started, finished = (r for r in run.events(types=["js_job_started", "js_job_finished"]))
    assert started.payload.model_dump() == {
        "job_id": started.payload.job_id, "invocation_id": run.internals.main.id, "command": "js",
        "argv": ["-", "a b"], "cwd": "/scratch",
        "stdin_sha256": sha("console.log(process.argv.length)"), "stdin_bytes": 32}
    end = finished.payload
    assert (end.job_id, end.exit_code, end.timed_out, end.cancelled) == (
        started.payload.job_id, 0, False, False)
    assert (end.stdout_sha256, end.stdout_bytes) == (sha("3\n"), 2)
    assert (end.stderr_sha256, end.stderr_bytes) == (sha(""), 0)
    assert end.elapsed_ms >= 0


def test_a_string_argv_is_split_like_a_shell(run: Run) -> None:
    assert run.js("-e 'console.log(\"a b\")'").stdout == "a b\n"


def test_round_ends_are_journaled_with_the_auto_commit(run: Run) -> None:
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "draft"})
    assert run.next_round() == 2
    assert run.next_round() == 3
    ends = [r.payload for r in run.events(types="round_ended")]
    assert [(e.round, e.auto_committed) for e in ends] == [(1, "output/main.md"), (2, None)]


def test_sub_agents_are_journaled_and_restored_when_reopened(lab: Lab, run: Run) -> None:
    critic = run.start_subagent("critic")
    record = run.events(types="subagent_started")[0].payload
    assert (record.invocation_id, record.agent_id) == (critic.id, "critic")
    assert record.profile["id"] == run.internals.profile.id
    run.call_tool("task.return", {"result": "first"}, invocation=critic)
    again = lab.open_run(run.id)
    (restored,) = again.subagents
    assert (restored.id, restored.agent_id, restored.mode) == (critic.id, "critic", "return")
    result = again.call_tool("task.return", {"result": "second"}, invocation=restored)
    assert result.structured == {"path": "summaries/critic-result-002.md"}
    assert len(again.events(types="agent_invocation_created")) == 2  # main + critic, once


# --- file changes from every writer -----------------------------------------------------------


def test_text_tools_journal_created_then_modified(run: Run) -> None:
    first = run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "one"})
    second = run.call_tool("workspace.write_file",
                           {"path": "output/a.md", "content": " two", "mode": "append"})
    made = [c for c in changes(run, first.call_id) if c.path == "output/a.md"]
    grown = [c for c in changes(run, second.call_id) if c.path == "output/a.md"]
    assert [(c.change, c.node, c.size, c.sha256, c.writer) for c in made] == [
        ("created", "file", 3, sha("one"), "tool")]
    assert [(c.change, c.size, c.sha256) for c in grown] == [("modified", 7, sha("one two"))]


def test_stored_tool_results_are_file_changes_of_their_call(run: Run) -> None:
    result = run.call_tool("workspace.list_files", {})
    stored = run.events(types="tool_result_stored")[-1].payload.path
    assert [(c.path, c.change) for c in changes(run, result.call_id)] == [
        (f"tool-results/{run.internals.main.id}", "created"), (stored, "created")]


def test_shell_changes_are_coalesced_per_path(run: Run) -> None:
    result = run.call_tool("workspace.shell", {"command": (
        "mkdir -p /scratch/d && echo a > /scratch/d/x.md && echo b >> /scratch/d/x.md && "
        "echo t > /scratch/tmp && rm /scratch/tmp && mv /scratch/d /scratch/e")})
    assert not result.is_error, result.content
    got = [(c.path, c.change, c.node, c.from_path) for c in changes(run, result.call_id)
           if c.path.startswith("scratch/")]
    assert got == [("scratch/e", "created", "directory", None),
                   ("scratch/e/x.md", "created", "file", None)]
    run.shell("mv /scratch/e/x.md /scratch/y.md && rm -r /scratch/e")
    later = [(c.path, c.change, c.node, c.from_path, c.sha256) for c in changes(run)
             if c.path.startswith("scratch/")][2:]
    assert later == [("scratch/e", "removed", "directory", None, None),
                     ("scratch/y.md", "moved", "file", "scratch/e/x.md", sha("a\nb\n"))]


def test_script_writes_are_file_changes_of_the_job(run: Run) -> None:
    run.js(["-e", WRITE_JS + "workspace.writeText('scratch/s.md', 'from js')"])
    job = run.events(types="js_job_started")[0].payload.job_id
    assert [(c.path, c.change, c.writer, c.sha256) for c in changes(run, job)] == [
        ("scratch/s.md", "created", "js", sha("from js"))]


def test_persist_initialisation_is_journaled(lab: Lab) -> None:
    first = lab.start_run(chat_id="alice")
    first.call_tool("workspace.write_file", {"path": "persist/notes/a.md", "content": "kept"})
    first.call_tool("workspace.write_file", {"path": "output/main.md", "content": "x"})
    first.call_tool("workspace.commit", {})
    first.finish()
    second = lab.start_run(chat_id="alice", persist_base=first.persist_state_id)
    assert [(c.path, c.change, c.node, c.writer, c.sha256) for c in changes(second)] == [
        ("persist/notes", "created", "directory", "persist", None),
        ("persist/notes/a.md", "created", "file", "persist", sha("kept"))]


def test_persist_initialisation_lines_are_what_the_model_writes(lab: Lab) -> None:
    """The records of ``persist/`` filled from a state are written in bulk from plain
    objects (no model per file); each payload is byte for byte what :class:`FileChange`
    writes, and each line reads back as a :class:`FileChanged`."""
    first = lab.start_run(chat_id="alice")
    for path in ("persist/b.md", "persist/a/x.md", "persist/a/b/y.md"):
        first.call_tool("workspace.write_file", {"path": path, "content": path})
    first.call_tool("workspace.write_file", {"path": "output/main.md", "content": "x"})
    first.call_tool("workspace.commit", {})
    first.finish()
    second = lab.start_run(chat_id="alice", persist_base=first.persist_state_id)
    texts = (second.dir / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    lines = [json.loads(line) for line in texts]
    assert [line["payload"]["path"] for line in lines] == [
        "persist/a", "persist/a/b", "persist/a/b/y.md", "persist/a/x.md", "persist/b.md"]
    assert [line["seq"] for line in lines] == [1, 2, 3, 4, 5]
    for text, line in zip(texts, lines, strict=True):  # rendered, then numbered, in bulk
        assert text == json.dumps(line, ensure_ascii=False)  # what the encoder writes
        model = FileChanged.model_validate(line)
        assert json.dumps(line["payload"]) == json.dumps(
            model.payload.model_dump(mode="json", by_alias=True))
    assert [c.path for c in changes(second)] == [line["payload"]["path"] for line in lines]
    anchor = lines[0]["eventSeq"]
    assert {line["eventSeq"] for line in lines} == {anchor}
    paths = [line["payload"]["path"] for line in lines]
    for reader in (second, lab.open_run(second.id)):  # the index kept while writing, and read
        assert [r.payload.path for r in reader.events(anchor, types="file_changed")
                if isinstance(r, FileChanged)] == paths
        assert reader.events(anchor + 1, types="file_changed") == []


_NAMES = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(files=st.dictionaries(_NAMES, st.tuples(
    st.text("0123456789abcdef\"\\\n", min_size=0, max_size=64),
    st.integers(min_value=0, max_value=2**53)), max_size=8))
def test_persist_payload_texts_are_what_the_encoder_writes_for_the_model(
        files: dict[str, tuple[str, int]]) -> None:
    """The rendered ``file_changed`` payloads of a persist state equal the generic
    encoder's text of the :class:`FileChange` model, for any path (quotes, backslashes,
    control characters, non-ASCII) and any digest text."""
    snapshot = PersistSnapshot(
        base_state_id="pst_x", files=[FileEntry(f"d/{name}", digest, size)
                                      for name, (digest, size) in files.items()],
        directories=["d"] if files else [])
    expected = sorted(
        [FileChange(path="persist/d", change="created", node="directory", writer="persist")]
        * bool(files)
        + [FileChange(path=f"persist/d/{name}", change="created", node="file", size=size,
                      sha256=digest, writer="persist") for name, (digest, size) in files.items()],
        key=lambda change: change.path)
    assert persist_changes(snapshot) == [
        json.dumps(c.model_dump(mode="json", by_alias=True), ensure_ascii=False)
        for c in expected]


def test_a_long_shell_call_shows_its_files_while_it_runs(run: Run) -> None:
    seen: list[tuple[str, bool]] = []
    done = threading.Event()

    def watch(record: Event) -> None:
        if isinstance(record, FileChanged) and record.payload.path == "scratch/early.md":
            seen.append((record.payload.change, done.is_set()))

    with run.subscribe(watch):
        result = run.shell("echo hi > /scratch/early.md; sleep 2")
        done.set()
    assert result.exit_code == 0
    assert seen == [("created", False)]


# --- reading after a position -----------------------------------------------------------------


def test_the_merged_order(run: Run) -> None:
    result = run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "x"})
    records = run.events()
    assert [order_key(r) for r in records] == sorted(order_key(r) for r in records)
    names = [r.type for r in records if getattr(r.payload, "call_id", None) == result.call_id]
    assert names.index("tool_result_stored") < names.index("file_changed") < names.index(
        "tool_call_completed")


def test_after_a_record_continues_without_repeats(run: Run) -> None:
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "x"})
    first = run.events()
    run.js(["-e", WRITE_JS + "workspace.writeText('scratch/j.md', 'j')"])
    run.call_tool("workspace.read_file", {"path": "output/a.md"})
    rest = run.events(first[-1])
    assert [(r.source, r.seq) for r in first + rest] == [(r.source, r.seq) for r in run.events()]
    assert run.events(after_seq=first[-1]) == rest
    events_only = run.events(after_seq=3, journal=False)
    assert [e.seq for e in events_only] == list(range(4, 4 + len(events_only)))


def test_reading_after_a_position_parses_only_what_follows(run: Run) -> None:
    for index in range(5):
        run.call_tool("workspace.write_file", {"path": f"output/{index}.md", "content": "x"})
    last = run.events(journal=False)[-1].seq
    log = run.dir / "events.jsonl"
    data = bytearray(log.read_bytes())
    data[data.index(b'"runId"')] = ord("!")  # break line 1; same length, offsets intact
    log.write_bytes(bytes(data))
    run.call_tool("workspace.read_file", {"path": "output/0.md"})
    later = run.events(after_seq=last, journal=False)
    assert later[0].seq == last + 1 and later[0].type == "tool_call_requested"
    with pytest.raises(json.JSONDecodeError):
        run.events(journal=False)


# --- subscriptions ----------------------------------------------------------------------------


def test_subscribers_see_every_record_in_order_on_the_producing_thread(run: Run) -> None:
    got: list[tuple[str, int, int]] = []

    def callback(record: Event) -> None:
        got.append((record.source, record.seq, threading.get_ident()))

    before = run.events()
    sub = run.subscribe(callback)
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "x"})
    worker = threading.Thread(target=lambda: run.js(["-e", "1"]))
    worker.start()
    worker.join()
    sub.close()
    expected = [(r.source, r.seq) for r in run.events(before[-1])]
    run.next_round()  # after close(): not seen
    assert [(s, n) for s, n, _ in got] == expected
    threads = {t for s, n, t in got}
    assert threads == {threading.get_ident(), worker.ident}


def test_a_failing_subscriber_is_logged_and_the_run_goes_on(run: Run,
                                                            caplog: pytest.LogCaptureFixture
                                                            ) -> None:
    def broken(record: Event) -> None:
        raise RuntimeError("widget exploded")

    with caplog.at_level(logging.ERROR, logger="tavernlab.subscribers"):
        run.subscribe(broken)
        result = run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "x"})
    assert not result.is_error
    assert "widget exploded" in caplog.text and run.id in caplog.text


# --- following another process ----------------------------------------------------------------

PLAYER = """
import sys, time
from tavernlab import Lab
lab = Lab(sys.argv[1])
run = lab.open_run(sys.argv[2])
for index in range(3):
    run.call_tool("workspace.write_file", {"path": f"output/{index}.md", "content": "x"})
    time.sleep(0.2)
run.call_tool("workspace.commit", {"path": "output/0.md"})
run.finish()
"""


def test_follow_sees_what_another_process_appends(lab: Lab, tmp_path: Path) -> None:
    run = lab.start_run(chat_id="alice")
    start = run.events()[-1]
    player = subprocess.Popen([sys.executable, "-c", PLAYER, str(lab.root), run.id])
    try:
        followed = list(lab.follow(run.id, after=start, timeout=60))
    finally:
        player.wait(timeout=60)
    assert player.returncode == 0
    assert followed[-1].type == "tool_call_completed"  # the finishing call's own record
    assert "run_completed" in [r.type for r in followed[-6:]]
    assert [(r.source, r.seq) for r in followed] == [
        (r.source, r.seq) for r in lab.open_run(run.id).events(start)]
    written = [r.payload.path for r in followed
               if isinstance(r, FileChanged) and r.payload.path.startswith("output/")]
    assert written == ["output/0.md", "output/1.md", "output/2.md"]


def test_follow_stops_after_a_quiet_timeout(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    assert list(lab.follow(run.id, after=run.events()[-1], timeout=0.3)) == []


def test_events_follow_on_the_command_line(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "x"})
    run.call_tool("workspace.commit", {})
    run.finish()
    done = subprocess.run([sys.executable, "-m", "tavernlab.cli", "events", run.id, "--follow",
                           "--json", "--lab", str(lab.root)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[-1]["type"] == "tool_call_completed"
    assert "run_completed" in [line["type"] for line in lines[-6:]]
    assert any("eventSeq" in line for line in lines)
    plain = subprocess.run([sys.executable, "-m", "tavernlab.cli", "events", run.id,
                            "--type", "file_changed", "--lab", str(lab.root)],
                           capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and plain.stdout.startswith("  j1 info  file_changed ")


# --- hostile input ----------------------------------------------------------------------------


def test_deeply_nested_arguments_are_invalid_arguments(run: Run) -> None:
    nested: Any = "x"
    for _ in range(5000):
        nested = [nested]
    result = run.call_tool("workspace.write_file", {"path": "output/a.md", "content": nested})
    assert (result.error_code, result.content) == (
        "tool.invalid_arguments", "arguments are nested more than 128 levels deep")
    assert run.events(types="tool_call_failed")[-1].payload.call_id == result.call_id
    stored = json.loads(next((run.dir / "tool-args" / run.internals.main.id).iterdir()).read_text())
    assert stored["arguments"] == "<arguments are nested more than 128 levels deep>"
    flat = run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "ok"})
    assert not flat.is_error


def test_a_planted_hard_link_is_refused_like_a_symlink(run: Run, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret")
    os.link(outside, run.workspace_dir / "scratch" / "alias.md")
    read = run.call_tool("workspace.read_file", {"path": "scratch/alias.md"})
    assert (read.error_code, read.content) == (
        "workspace.invalid_data", "workspace supports regular files and directories")
    shell = run.shell("cat /scratch/alias.md")
    assert shell.exit_code != 0 and "top secret" not in shell.stdout
    os.link(outside, run.workspace_dir / "persist" / "alias.md")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "x"})
    run.call_tool("workspace.commit", {})
    with pytest.raises(Exception, match="workspace supports regular files and directories"):
        run.finish()
    assert outside.read_text() == "top secret"


def test_journal_records_are_never_written_to_events_jsonl(run: Run) -> None:
    run.js(["-e", "1"])
    types = {json.loads(line)["type"] for line in (run.dir / "events.jsonl").read_text()
             .splitlines()}
    assert types <= EVENT_TYPES
    journal = [json.loads(line) for line in (run.dir / "journal.jsonl").read_text()
               .splitlines()]
    assert [r["seq"] for r in journal] == list(range(1, len(journal) + 1))
    assert all(isinstance(r, JournalRecord) for r in run.events() if r.source == "journal")


def test_a_job_label_is_one_line_and_says_when_it_is_cut() -> None:
    from tavernlab.events import JOB_LABEL_CHARS, job_label

    assert job_label("js", ["-e", "\nconst x = 1;\n\tconsole.log(x)\n"]) == (
        "js -e const x = 1; console.log(x)")
    assert job_label("node", ["/skills/a/scripts/main.js", "b"]) == (
        "node /skills/a/scripts/main.js b")
    long = job_label("js", ["-e", "x" * 500])
    assert len(long) == JOB_LABEL_CHARS and long.endswith("x…")


def test_a_reader_never_sees_half_of_an_append(lab: Lab) -> None:
    """A writer holds ``events.jsonl`` exclusively while it appends a batch's events and then
    its journal records; a reader (here in another thread, with its own lock as another
    process would) waits and sees the whole batch, in order (seen as a flaky cross-process
    ``lab.follow`` test: a journal record came after events it is anchored before)."""
    from tavernlab.clock import RANDOM_IDS, SYSTEM_CLOCK
    from tavernlab.events import EventLog, JournalLog
    from tavernlab.host import RunFeed
    from tavernlab.locks import locked_open

    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "x"})
    events_path, journal_path = run.dir / "events.jsonl", run.dir / "journal.jsonl"
    last_event = json.loads(events_path.read_bytes().splitlines()[-1])
    last_note = json.loads(journal_path.read_bytes().splitlines()[-1])
    anchor = last_event["seq"]
    next_events = [{**last_event, "seq": anchor + n, "id": f"evt_next{n}"} for n in (1, 2)]
    note = {**last_note, "seq": last_note["seq"] + 1, "id": "jrn_next", "eventSeq": anchor}
    events = EventLog(events_path, run.id, clock=SYSTEM_CLOCK, ids=RANDOM_IDS)
    feed = RunFeed(events, JournalLog(journal_path, events))
    seen: list[list[str]] = []
    with locked_open(events_path, os.O_WRONLY | os.O_APPEND):  # the writer's batch
        with open(events_path, "ab") as handle:
            handle.writelines(json.dumps(e).encode() + b"\n" for e in next_events)
        reader = threading.Thread(target=lambda: seen.append([r.id for r in feed.read()]))
        reader.start()
        reader.join(0.3)
        assert reader.is_alive()  # it waits for the batch
        with open(journal_path, "ab") as handle:
            handle.write(json.dumps(note).encode() + b"\n")
    reader.join(10)
    assert seen[0][-3:] == ["jrn_next", "evt_next1", "evt_next2"]


def test_reading_never_creates_a_missing_log(lab: Lab) -> None:
    from tavernlab.clock import RANDOM_IDS, SYSTEM_CLOCK
    from tavernlab.events import EventLog, JournalLog
    from tavernlab.host import RunFeed

    run = lab.start_run(chat_id="alice")
    gone = run.dir / "elsewhere" / "events.jsonl"
    events = EventLog(gone, run.id, clock=SYSTEM_CLOCK, ids=RANDOM_IDS)
    assert RunFeed(events, JournalLog(gone.with_name("journal.jsonl"), events)).read() == []
    assert not gone.parent.exists()
