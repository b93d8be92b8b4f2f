"""Journal records built in bulk (a run's start from a persist state journals a record per
file) are written as one entry of many lines: the bytes, the numbering, the anchors and the
models a subscriber gets are those of the same records built and written one by one."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.errors import FileIo
from tavernlab.events import (
    EventLog,
    FileChange,
    FileChanged,
    JournalLog,
    RunCreated,
    RunCreation,
    _log,
    _sequenced,
    append_records,
    models_of,
)

CHANGES = [FileChange(path=f"persist/d/f{index}.md", change="created", node="file",
                      size=index, sha256=f"{index:064x}", writer="persist")
           for index in range(5)]


def logs(root: Path) -> tuple[EventLog, JournalLog]:
    """An events log and its journal with deterministic stamps and ids."""
    root.mkdir()
    events = EventLog(root / "events.jsonl", "run_1", clock=FixedClock(),
                      ids=SequentialIds("seed"))
    return events, JournalLog(root / "journal.jsonl", events)


def written(root: Path, *, bulk: bool) -> tuple[bytes, list[object]]:
    """The journal's bytes and the models of its records, the records built either way after
    one event and one journal record already written."""
    events, journal = logs(root)
    append_records(events, journal, [events.build(RunCreated, RunCreation(
        workspace_id="ws_1", stable_chat_id="chat_1", persist_base_state_id=None, target={},
        presentation="foreground", generation_type="normal"))])
    journal.append(FileChanged, CHANGES[0])
    payloads = [json.dumps(change.model_dump(mode="json", by_alias=True), ensure_ascii=False)
                for change in CHANGES[1:]]
    built = (journal.lines_of(FileChanged, payloads) if bulk
             else [journal.build(FileChanged, change) for change in CHANGES[1:]])
    append_records(events, journal, built)
    models = [model for make, data in built for model in models_of(make, data)]
    return journal.path.read_bytes(), models


def test_bulk_lines_are_the_one_by_one_records(tmp_path: Path) -> None:
    one_by_one, their_models = written(tmp_path / "single", bulk=False)
    in_bulk, models = written(tmp_path / "bulk", bulk=True)
    assert in_bulk == one_by_one
    assert models == their_models
    lines = [json.loads(line) for line in in_bulk.splitlines()]
    assert [line["seq"] for line in lines] == [1, 2, 3, 4, 5]
    assert [line["eventSeq"] for line in lines] == [1] * 5
    assert [m.payload for m in models] == CHANGES[1:]  # type: ignore[attr-defined]


def test_a_bulk_entry_is_read_back_and_indexed(tmp_path: Path) -> None:
    events, journal = logs(tmp_path / "run")
    payloads = [json.dumps(c.model_dump(mode="json", by_alias=True)) for c in CHANGES]
    append_records(events, journal, journal.lines_of(FileChanged, payloads))
    assert [r.payload for r in journal.read()] == CHANGES
    assert [r.seq for r in journal.read(after_seq=3)] == [4, 5]
    assert journal.lines_of(FileChanged, []) == []


#: Paths the journal must escape exactly as the line encoder does: quotes, backslashes,
#: control characters, non-ASCII text, and a name that is not UTF-8 (a surrogate escape).
TRICKY = ["persist/a \"quoted\" name.md", "persist/back\\slash\\", "persist/tab\tnew\nline\x01",
          "persist/del\x7f and \u2028 sep", "persist/caf\u00e9/\u65e5\u672c/\U0001f600.md",
          "persist/", "persist/\"\\\"\\\\\""]


class OddIds:
    """An id factory whose ids need escaping (quotes, backslashes, non-ASCII)."""

    def __init__(self) -> None:
        self.count = 0

    def new(self, prefix: str, hex_chars: int = 32) -> str:
        """``<prefix>_"\\é<n>``."""
        self.count += 1
        return f'{prefix}_"\\\u00e9{self.count}'


def tricky_written(root: Path, paths: list[str], *, bulk: bool, ids: object) -> bytes:
    """The journal's bytes after records of ``paths`` built either way."""
    root.mkdir()
    events = EventLog(root / "events.jsonl", "run_\u00e9\"1", clock=FixedClock(), ids=ids)
    journal = JournalLog(root / "journal.jsonl", events)
    changes = [FileChange(path=path, change="created", node="file", size=index,
                          sha256=f"\"{index}\\\u00e9", writer="persist")
               for index, path in enumerate(paths)]
    if bulk:
        payloads = [json.dumps(change.model_dump(mode="json", by_alias=True),
                               ensure_ascii=False) for change in changes]
        append_records(events, journal, journal.lines_of(FileChanged, payloads))
    else:
        append_records(events, journal, [journal.build(FileChanged, c) for c in changes])
    return journal.path.read_bytes()


@pytest.mark.parametrize("ids", [SequentialIds, OddIds])
def test_bulk_lines_escape_tricky_paths_as_one_by_one(tmp_path: Path, ids: type) -> None:
    in_bulk = tricky_written(tmp_path / "bulk", TRICKY, bulk=True, ids=ids())
    assert in_bulk == tricky_written(tmp_path / "single", TRICKY, bulk=False, ids=ids())
    events = EventLog(tmp_path / "bulk" / "events.jsonl", "r", clock=FixedClock(),
                      ids=SequentialIds())
    journal = JournalLog(tmp_path / "bulk" / "journal.jsonl", events)
    assert [r.payload.path for r in journal.read()] == TRICKY  # type: ignore[attr-defined]
    assert [r.seq for r in journal.read(after_seq=5)] == [6, 7]


def test_a_bulk_entry_with_a_name_that_is_not_utf8_fails_before_writing(tmp_path: Path
                                                                         ) -> None:
    """A surrogate-escaped name cannot be written: building fails, either way, and the
    journal stays as it was."""
    _, journal = logs(tmp_path / "run")
    odd = FileChange(path="persist/bad\udcff.md", change="created", node="file", size=1,
                     sha256="0" * 64, writer="persist")
    payload = json.dumps(odd.model_dump(mode="json", by_alias=True), ensure_ascii=False)
    with pytest.raises(UnicodeEncodeError):
        journal.build(FileChanged, odd)
    with pytest.raises(UnicodeEncodeError):
        journal.lines_of(FileChanged, ['{"path": "persist/ok"}', payload])
    assert not journal.path.exists()


def test_a_bulk_entry_among_other_records_is_written_as_one_by_one(tmp_path: Path) -> None:
    """A bulk entry written in one append with lone records (the general path, not the
    bulk-only write) numbers, anchors and indexes its lines the same way."""
    def both(root: Path, bulk: bool) -> tuple[bytes, list[int]]:
        events, journal = logs(root)
        payloads = [json.dumps(c.model_dump(mode="json", by_alias=True), ensure_ascii=False)
                    for c in CHANGES[1:3]]
        middle = (journal.lines_of(FileChanged, payloads) if bulk
                  else [journal.build(FileChanged, c) for c in CHANGES[1:3]])
        append_records(events, journal, [journal.build(FileChanged, CHANGES[0]), *middle,
                                         journal.build(FileChanged, CHANGES[3])])
        return journal.path.read_bytes(), [r.seq for r in journal.read(after_seq=1)]
    assert both(tmp_path / "bulk", True) == both(tmp_path / "single", False)


def test_a_bulk_entry_written_in_chunks_is_the_one_by_one_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines encoded a few at a time (two here) give the same file and the same index,
    ASCII or not."""
    monkeypatch.setattr(_log, "BULK_CHUNK_LINES", 2)
    one_by_one = tricky_written(tmp_path / "single", TRICKY, bulk=False, ids=SequentialIds())
    assert tricky_written(tmp_path / "bulk", TRICKY, bulk=True,
                          ids=SequentialIds()) == one_by_one
    plain = [f"persist/p{index}.md" for index in range(5)]
    assert (tricky_written(tmp_path / "plain", plain, bulk=True, ids=SequentialIds())
            == tricky_written(tmp_path / "plain1", plain, bulk=False, ids=SequentialIds()))
    events = EventLog(tmp_path / "bulk" / "events.jsonl", "r", clock=FixedClock(),
                      ids=SequentialIds())
    journal = JournalLog(tmp_path / "bulk" / "journal.jsonl", events)
    assert [r.seq for r in journal.read(after_seq=4)] == [5, 6, 7]


def test_a_bulk_write_that_fails_in_a_later_chunk_leaves_the_journal_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events, journal = logs(tmp_path / "run")
    journal.append(FileChanged, CHANGES[0])
    before = journal.path.read_bytes()
    payloads = [json.dumps(c.model_dump(mode="json", by_alias=True)) for c in CHANGES]
    built = journal.lines_of(FileChanged, payloads)
    monkeypatch.setattr(_log, "BULK_CHUNK_LINES", 2)
    real_write, calls = os.write, []

    def full_after_one(fd: int, data: bytes) -> int:
        calls.append(fd)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(_sequenced.os, "write", full_after_one)
    with pytest.raises(FileIo, match=r"journal\.jsonl"):
        append_records(events, journal, built)
    monkeypatch.undo()
    assert len(calls) == 2 and journal.path.read_bytes() == before
    journal.append(FileChanged, CHANGES[1])
    assert [r.seq for r in journal.read()] == [1, 2]


def test_a_chunked_bulk_entry_keeps_each_lines_byte_offset(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The offsets kept for a record type that keeps them are where each line starts in the
    file, for chunks of ASCII lines and chunks with multi-byte characters alike, after a
    line already written."""
    monkeypatch.setattr(_log, "BULK_CHUNK_LINES", 2)
    monkeypatch.setattr(_log, "OFFSET_TYPES", frozenset({"file_changed"}))
    events, journal = logs(tmp_path / "run")
    journal.append(FileChanged, CHANGES[0])
    paths = ["persist/a.md", "persist/b.md", "persist/caf\u00e9.md", "persist/\U0001f600",
             "persist/c.md"]
    payloads = [json.dumps(FileChange(path=path, change="created", node="file", size=1,
                                      sha256="0" * 64, writer="persist")
                           .model_dump(mode="json", by_alias=True), ensure_ascii=False)
                for path in paths]
    built = journal.lines_of(FileChanged, payloads)
    append_records(events, journal, built)
    data = journal.path.read_bytes()
    # where each line after the first starts: just past a newline that is not the last byte
    starts = [index + 1 for index, byte in enumerate(data[:-1]) if byte == 0x0A]
    assert [journal.written_at[ident] for ident in built[0][1]["ids"]] == starts
    assert [json.loads(data[start:].split(b"\n", 1)[0])["payload"]["path"]
            for start in starts] == paths
