"""A run log whose last line was left unfinished (a writer killed, or out of space, in the
middle of its append) is cut back to its last whole line under the lock, with a
``log_repaired`` journal record saying what was cut; a failed write leaves no such line."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tavernlab.events import (
    EventLog,
    JournalLog,
    LogRepaired,
    RoundEnd,
    RoundEnded,
    StatusChange,
    StatusChanged,
    append_records,
    repair_logs,
)
from tavernlab.host import Lab, Run

TORN_EVENT = b'{"seq": 99, "id": "evt_torn", "runId": "run_x", "type": "status_chan'


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def repairs(run: Run) -> list[LogRepaired]:
    return [r for r in run.events(types=["log_repaired"]) if isinstance(r, LogRepaired)]


def test_an_append_after_a_torn_event_line_cuts_it_and_notes_what_was_cut(run: Run) -> None:
    events = run.dir / "events.jsonl"
    whole = events.read_bytes()
    with events.open("ab") as handle:
        handle.write(TORN_EVENT)
    run.call_tool("workspace.list_files", {})
    data = events.read_bytes()
    assert data.startswith(whole) and TORN_EVENT not in data
    seqs = [line["seq"] for line in lines_of(events)]
    assert seqs == list(range(1, len(seqs) + 1))
    [note] = repairs(run)
    assert note.payload.file == "events.jsonl"
    assert note.payload.offset == len(whole)
    assert note.payload.bytes == len(TORN_EVENT)
    assert note.payload.sha256 == hashlib.sha256(TORN_EVENT).hexdigest()
    assert note.payload.text == TORN_EVENT.decode()
    assert note.event_seq == whole.count(b"\n")  # placed after the last whole event
    assert [r.type for r in run.events()][-1] == "status_changed"


def test_a_torn_journal_line_is_cut_before_the_next_journal_record(run: Run) -> None:
    journal = run.dir / "journal.jsonl"
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "a"})
    whole = journal.read_bytes()
    torn = b'{"seq": 7, "eventSeq": 3, "id": "jrn_x", "type": "file_ch\xc3'
    with journal.open("ab") as handle:
        handle.write(torn)
    run.call_tool("workspace.write_file", {"path": "output/b.md", "content": "b"})
    assert journal.read_bytes().startswith(whole)
    records = lines_of(journal)
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    [note] = repairs(run)
    assert (note.payload.file, note.payload.offset, note.payload.bytes) == (
        "journal.jsonl", len(whole), len(torn))
    assert note.payload.text == torn[:-1].decode() + "\ufffd"
    written = [r.payload.path for r in run.events(types=["file_changed"])]
    assert "output/b.md" in written


def test_reopening_a_run_repairs_both_logs_so_every_reader_sees_whole_lines(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "a"})
    for name in ("events.jsonl", "journal.jsonl"):
        with (run.dir / name).open("ab") as handle:
            handle.write(b'{"seq": 1000, "id": "cut')
    again = Lab(lab.root).open_run(run.id)
    for name in ("events.jsonl", "journal.jsonl"):
        assert (run.dir / name).read_bytes().endswith(b"}\n")
        for line in (run.dir / name).read_bytes().splitlines():
            json.loads(line)
    assert sorted(r.payload.file for r in repairs(again)) == ["events.jsonl", "journal.jsonl"]
    Lab(lab.root).open_run(run.id)  # a second opening finds nothing to repair
    assert len(repairs(again)) == 2


def test_a_log_without_a_torn_line_is_left_as_it_is(tmp_path: Path, lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    before = (run.dir / "events.jsonl").read_bytes()
    assert not (run.dir / "journal.jsonl").exists()
    repair_logs(run._core.log, run._core.journal)
    assert (run.dir / "events.jsonl").read_bytes() == before
    assert not (run.dir / "journal.jsonl").exists()  # nothing to note, nothing created
    lone = EventLog(tmp_path / "lone" / "events.jsonl", "run_1", clock=lab.clock, ids=lab.ids)
    repair_logs(lone, JournalLog(tmp_path / "lone" / "journal.jsonl", lone))
    assert not (tmp_path / "lone").exists()  # a missing log stays missing


def test_an_event_log_without_a_journal_object_notes_its_repair_beside_it(
        tmp_path: Path, lab: Lab) -> None:
    log = EventLog(tmp_path / "events.jsonl", "run_1", clock=lab.clock, ids=lab.ids)
    log.append(StatusChanged, StatusChange(status="calling_model"))
    with log.path.open("ab") as handle:
        handle.write(b'{"seq": 2, "i')
    log.append(StatusChanged, StatusChange(status="finishing"))
    assert [r["seq"] for r in lines_of(log.path)] == [1, 2]
    [note] = lines_of(tmp_path / "journal.jsonl")
    assert note["type"] == "log_repaired" and note["eventSeq"] == 1
    assert note["payload"]["text"] == '{"seq": 2, "i'


def test_a_torn_line_longer_than_the_read_window_is_cut_whole(tmp_path: Path, lab: Lab
                                                               ) -> None:
    log = EventLog(tmp_path / "events.jsonl", "run_1", clock=lab.clock, ids=lab.ids)
    journal = JournalLog(tmp_path / "journal.jsonl", log)
    log.append(StatusChanged, StatusChange(status="calling_model"))
    whole = log.path.read_bytes()
    torn = b'{"seq": 2, "payload": "' + b"x" * 100_000
    with log.path.open("ab") as handle:
        handle.write(torn)
    append_records(log, journal, [journal.build(RoundEnded, RoundEnd(round=1))])
    assert log.path.read_bytes() == whole
    note, ended = lines_of(journal.path)
    assert note["payload"]["bytes"] == len(torn) and note["payload"]["offset"] == len(whole)
    assert len(note["payload"]["text"]) == 1000
    assert ended["type"] == "round_ended" and ended["seq"] == 2


FULL_DISK = """
import resource, sys
from pathlib import Path
from tavernlab.host import Lab
from tavernlab.errors import FileIo
lab = Lab(sys.argv[1])
run = lab.open_run(sys.argv[2])
limit = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    run.call_tool("workspace.list_files", {"path": "output"})
except FileIo as exc:
    print(exc.code, exc.errno, exc)
"""


def test_a_write_over_the_file_size_limit_fails_clearly_and_leaves_whole_lines(
        lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    events = run.dir / "events.jsonl"
    size = events.stat().st_size
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK,
         str(lab.root), run.id, str(size + 40)],
        capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    code, number, message = done.stdout.split(" ", 2)
    assert code == "workspace.file_io" and int(number) == 27  # EFBIG
    assert "`events.jsonl`: File too large" in message
    assert events.read_bytes().endswith(b"\n")
    assert events.stat().st_size <= size + 40
    again = Lab(lab.root).open_run(run.id)
    assert again.events()[-1].seq == len(events.read_bytes().splitlines())
    assert not repairs(again)  # nothing was left to repair
    again.call_tool("workspace.list_files", {})
    assert resource.getrlimit(resource.RLIMIT_FSIZE)[0] == resource.RLIM_INFINITY



def test_after_a_torn_line_the_run_exports_replays_and_lists_on_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tavernlab.cli import main
    from tavernlab.clock import FixedClock, SequentialIds
    from tavernlab.replay import replay

    lab = Lab(tmp_path / "lab", clock=FixedClock(), ids=SequentialIds("torn"))
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "a"})
    with (run.dir / "events.jsonl").open("ab") as handle:
        handle.write(TORN_EVENT)
    run.call_tool("workspace.write_file", {"path": "output/b.md", "content": "b"})
    assert main(["events", run.id, "--type", "log_repaired", "--lab", str(lab.root)]) == 0
    assert "log_repaired" in capsys.readouterr().out
    report = replay(run.export(tmp_path / "torn.tavernrun"), lab=tmp_path / "replayed")
    # the replay writes no torn line, so its one difference is the repair record
    assert [d.kind for d in report.divergences] == ["event"]
