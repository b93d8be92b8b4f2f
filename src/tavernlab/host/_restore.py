"""What a reopened run knows about its past, without reading its whole history.

:func:`restore` rebuilds a run's :class:`~tavernlab.host._core.RunCounters` and its sub-agents
from the last line of ``counters.jsonl`` (written by :class:`~tavernlab.host._ledger.RunLedger`)
and replays only the records the logs gained after it. The rules of the replay are the ones
a run without checkpoints (written before they existed, or slimmed by retention) is restored
by, from its whole event log and journal: tool calls (completed or failed) count per tool,
the highest ``call_N`` number continues, the run continues in the round after the last one
with a call (a cancelled call is never replayed), the last ``run_committed`` names the output
message, explicit commits are counted, the last ``persistent_changes_committed`` names the
published state, ``task_return_completed`` counts each agent's results, and every
``subagent_started`` journal record restores a sub-agent with its Profile.

A checkpoint is trusted only when both logs still end, at the recorded byte sizes, with the
recorded ``seq`` numbers; anything else falls back to the full replay.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tavernlab.events import (
    Event,
    EventLog,
    JournalLog,
    last_line,
    parse_records,
    seq_of_last_line,
)
from tavernlab.host._ledger import CHECKPOINTS

if TYPE_CHECKING:  # the journal's step records are defined when a reopened run reads one
    from tavernlab.events import SubagentStart


@dataclass(slots=True)
class Restored:
    """The counters of a reopened run, its sub-agent starts (with their journal offsets) and
    how many records (events and journal) its last checkpoint covers (0: replayed in full)."""

    values: dict[str, Any]
    subagents: list[tuple[SubagentStart, int]] = field(default_factory=list)
    covered: int = 0


def empty_counters() -> dict[str, Any]:
    """The checkpoint fields of a run that has done nothing yet."""
    return {"calls": 0, "callsPerTool": {}, "lastCallRound": 0, "maxCallNumber": 0,
            "explicitCommits": 0, "outputTarget": None, "persistStateId": None,
            "subagentResults": {}, "subagents": []}


def call_number(call_id: str) -> int:
    """``N`` of a ``call_N`` id (0 for any other id)."""
    head, _, tail = call_id.rpartition("_")
    return int(tail) if head == "call" and tail.isdigit() else 0


def replay(values: dict[str, Any], events: Iterable[Event]) -> None:
    """Apply the restore rules (module docstring) of ``events`` to ``values``."""
    per_tool: Counter[str] = Counter(values["callsPerTool"])
    results: Counter[str] = Counter(values["subagentResults"])
    for event in events:
        payload = event.payload
        if event.type in ("tool_call_completed", "tool_call_failed"):
            values["calls"] += 1
            per_tool[payload.tool_id] += 1
            values["lastCallRound"] = max(values["lastCallRound"], payload.round)
            values["maxCallNumber"] = max(values["maxCallNumber"], call_number(payload.call_id))
        elif event.type == "run_committed":
            values["outputTarget"] = [payload.message_index, payload.swipe_id]
            values["explicitCommits"] += int(payload.is_explicit)
        elif event.type == "persistent_changes_committed":
            values["persistStateId"] = payload.state_id
        elif event.type == "task_return_completed":
            results[payload.path.rsplit("/", 1)[-1].split("-result", 1)[0]] += 1
    values["callsPerTool"], values["subagentResults"] = dict(per_tool), dict(results)


def restore(log: EventLog, journal: JournalLog) -> Restored:
    """The past of the run whose logs these are: from its checkpoint when it has a usable
    one, else from a full replay."""
    from tavernlab.events import SubagentStarted

    restored = _from_checkpoint(log, journal)
    if restored is not None:
        return restored
    values = empty_counters()
    replay(values, log.read())
    starts = []
    for record in journal.read():
        if isinstance(record, SubagentStarted):
            starts.append((record.payload, journal.offset_of(record.seq)))
    return Restored(values, starts)


def _from_checkpoint(log: EventLog, journal: JournalLog) -> Restored | None:
    from tavernlab.events import SubagentStarted

    line = _last_checkpoint(log)
    if line is None:
        return None
    try:
        values = json.loads(line)
        covered = values["eventSeq"] + values["journalSeq"]
        event_tail = _tail(log, values.pop("eventBytes"), values.pop("eventSeq"))
        journal_tail = _tail(journal, values.pop("journalBytes"), values.pop("journalSeq"))
        if event_tail is None or journal_tail is None:
            return None
        starts = [(_start_at(journal, offset, invocation), offset)
                  for invocation, offset in values["subagents"]]
    except (ValueError, KeyError, TypeError):
        return None
    replay(values, (record for _, record in event_tail))
    starts += [(record.payload, offset) for offset, record in journal_tail
               if isinstance(record, SubagentStarted)]
    return Restored(values, starts, covered)


def _last_checkpoint(log: EventLog) -> bytes | None:
    try:
        fd = os.open(log.path.parent / CHECKPOINTS, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        return last_line(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def _tail(log: EventLog | JournalLog, offset: int, seq: int) -> list[tuple[int, Event]] | None:
    """The records of ``log`` after byte ``offset`` with their offsets, if the log still
    has ``seq`` as the last line before ``offset`` and contiguous numbers after it."""
    try:
        fd = os.open(log.path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return [] if offset == 0 and seq == 0 else None
    try:
        size = os.fstat(fd).st_size
        if offset > size or seq_of_last_line(fd, offset) != seq:
            return None
        data = os.pread(fd, size - offset, offset)
    finally:
        os.close(fd)
    data = data[:data.rfind(b"\n") + 1]
    lines, offsets, position = [], [], offset
    for line in data.split(b"\n")[:-1]:
        if line.strip():
            lines.append(line)
            offsets.append(position)
        position += len(line) + 1
    records = parse_records(lines)
    if [r.seq for r in records] != list(range(seq + 1, seq + 1 + len(records))):
        return None
    log.known(offset + len(data), seq + len(records))
    return list(zip(offsets, records, strict=True))


def _start_at(journal: JournalLog, offset: int, invocation_id: str) -> SubagentStart:
    """The ``subagent_started`` record of ``invocation_id`` at ``offset`` in the journal."""
    from tavernlab.events import SubagentStarted

    with open(journal.path, "rb") as handle:
        handle.seek(offset)
        record = parse_records([handle.readline()])[0]
    if not isinstance(record, SubagentStarted) or record.payload.invocation_id != invocation_id:
        raise ValueError(f"no sub-agent start of {invocation_id} at offset {offset}")
    return record.payload
