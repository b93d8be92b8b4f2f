"""Journal records built in bulk (a run's start from a persist state journals a record per
file) are written as one entry of many lines: the bytes, the numbering, the anchors and the
models a subscriber gets are those of the same records built and written one by one."""

from __future__ import annotations

import json
from pathlib import Path

from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.events import (
    EventLog,
    FileChange,
    FileChanged,
    JournalLog,
    RunCreated,
    RunCreation,
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
