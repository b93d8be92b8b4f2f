"""The event families a tool call never writes (how a run ends, the journal's steps, the commits'
and the agent loop's) are defined on first use: a fresh process
that reads records of those types before anything asked for one of their names still gets
their typed models (one by one, in bulk and through an event log), exactly as a process that
imported them first does; the face hands on every name of theirs, and ``RunEvent`` still
validates them."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from pydantic import TypeAdapter

from tavernlab.events import (
    AgentInvocationCompleted,
    AgentLoopFinished,
    ChatCommitRequest,
    ChatCommitRequested,
    CommitOutcome,
    Event,
    InvocationRef,
    JournalEntry,
    LoopFinish,
    RoundEnd,
    RoundEnded,
    RunCommitted,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunFailure,
    StatusChange,
    StatusChanged,
    parse_event,
    parse_records,
)

#: Reads the lines of ``sys.argv[1]`` (a run's ``events.jsonl``) in a fresh process, first
#: checking that the later families are not loaded yet; prints each way's class names and
#: dumps.
READER = """\
import json, sys
from pathlib import Path
later = ("tavernlab.events._agent", "tavernlab.events._commits", "tavernlab.events._ending",
         "tavernlab.events._steps", "tavernlab.events._unions")
from tavernlab.events import EventLog, parse_event, parse_records
from tavernlab.clock import RANDOM_IDS, SYSTEM_CLOCK
before = [name for name in later if name in sys.modules]
path = Path(sys.argv[1])
lines = path.read_bytes().splitlines()
journal = Path(sys.argv[2]).read_bytes().splitlines()

def shown(records):
    return [[type(r).__name__, r.model_dump(mode="json", by_alias=True)] for r in records]

print(json.dumps({
    "before": before,
    "one": shown(parse_event(json.loads(line)) for line in lines),
    "bulk": shown(parse_records(lines)),
    "log": shown(EventLog(path, "run_1", clock=SYSTEM_CLOCK, ids=RANDOM_IDS).read()),
    "journal": shown(parse_records(journal)),
    "journal_one": shown(parse_event(json.loads(line)) for line in journal),
}))
"""

MOMENT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def records() -> list[Event]:
    """One event of each later family, and one of the families loaded at once."""
    envelope = {"run_id": "run_1", "timestamp": MOMENT}
    return [
        StatusChanged(seq=1, id="evt_1", payload=StatusChange(status="running"), **envelope),
        ChatCommitRequested(seq=2, id="evt_2", payload=ChatCommitRequest(
            call_id="call_1", path="output/a.md", is_explicit=True, sha256="0" * 64, round=1),
            **envelope),
        RunCommitted(seq=3, id="evt_3", payload=CommitOutcome(
            message_index=0, swipe_id=0, is_explicit=True, mode="replace"), **envelope),
        AgentLoopFinished(seq=4, id="evt_4", payload=LoopFinish(
            commit_count=1, round=1, invocation_id="inv_1"), **envelope),
        AgentInvocationCompleted(seq=5, id="evt_5", payload=InvocationRef(
            invocation_id="inv_1", parent_invocation_id=None, profile_id="default",
            kind="root", status="completed"),
            **envelope),
        RunCompleted(seq=6, id="evt_6", **envelope),
        RunFailed(seq=7, id="evt_7", payload=RunFailure.internal_fault("tool.x: broken"),
                  **envelope),
    ]


def journal() -> list[Event]:
    """A journal record of a later family."""
    return [RoundEnded(seq=1, event_seq=7, id="jrn_1", run_id="run_1", timestamp=MOMENT,
                       payload=RoundEnd(round=1, auto_committed=None))]


def test_a_fresh_process_reads_the_later_families_typed(tmp_path: Path) -> None:
    path, journal_path = tmp_path / "events.jsonl", tmp_path / "journal.jsonl"
    written = records()
    for where, kept in ((path, written), (journal_path, journal())):
        where.write_text("".join(r.model_dump_json(by_alias=True) + "\n" for r in kept),
                         encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", READER, str(path), str(journal_path)],
                          capture_output=True, text=True, check=True, timeout=120)
    report = json.loads(done.stdout)
    assert report["before"] == []
    lines = path.read_bytes().splitlines()
    here = [[type(r).__name__, r.model_dump(mode="json", by_alias=True)]
            for r in parse_records(lines)]
    assert [name for name, _ in here] == [type(r).__name__ for r in written]
    assert [type(parse_event(json.loads(line))).__name__ for line in lines] == [
        type(r).__name__ for r in written]
    assert report["one"] == report["bulk"] == report["log"] == here
    journaled = [[type(r).__name__, r.model_dump(mode="json", by_alias=True)]
                 for r in parse_records(journal_path.read_bytes().splitlines())]
    assert [name for name, _ in journaled] == ["RoundEnded"]
    assert report["journal"] == report["journal_one"] == journaled


def test_the_unions_over_every_family_validate_them() -> None:
    adapter: TypeAdapter[Event] = TypeAdapter(RunEvent)
    journal_adapter: TypeAdapter[Event] = TypeAdapter(JournalEntry)
    for record in journal():
        data = record.model_dump(mode="json", by_alias=True)
        assert type(journal_adapter.validate_python(data)) is type(record)
    for record in records():
        data = record.model_dump(mode="json", by_alias=True)
        assert type(adapter.validate_python(data)) is type(record)
