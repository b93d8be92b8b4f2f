"""A run's own files besides its logs: ``run.json``, the index entry and summary, and the
counters checkpoint that makes reopening a run O(1).

The host writes these after the records they follow (:class:`~tavernlab.host.RunFeed`
calls :meth:`RunLedger.sync` after every write), and only when they change:

* ``run.json`` is rewritten when its content differs from what was last written: once per
  tool call (whose status goes ``dispatching_tool`` and back), not once per status change;
* the index entry (``index/runs/<id>.json``) is refreshed when the run's status moves to a
  status that differs from the indexed one, and with the summary
  (``index/run-summaries/<id>.json``, written when the run starts and when it ends). Both are
  snapshots taken when the change was asked for. So a tool call leaves the index alone: the
  index entry's ``updatedAt`` is that of the last status change it recorded (a tavernlab
  choice; ``run.json`` always has the latest);
* ``counters.jsonl`` (tavernlab's, beside ``events.jsonl``) gets one line whenever a batch of
  records ends :data:`CHECKPOINT_EVERY_RECORDS` records or more after the last line: what
  :meth:`Lab.open_run` needs (tool calls, call numbers, the last round with a call, commits,
  the output message, the published persist state, sub-agent results and where each
  sub-agent's start record sits in the journal), plus the size and last ``seq`` of both logs
  it covers. A reopened run reads its last line and replays only the records after it
  (:mod:`tavernlab.host._restore`), so reopening costs the same at any size.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tavernlab.layout as layout
from tavernlab.errors import FileIo
from tavernlab.events import EventLog, JournalLog
from tavernlab.host._index import RunIndex
from tavernlab.workspace.records import RunRecord, dump_model, model_text, write_text_atomically
from tavernlab.workspace.storage import STAGING_DIR_NAME

#: The counters checkpoint of a run (beside ``events.jsonl``).
CHECKPOINTS = "counters.jsonl"
#: A checkpoint is written once this many records (events and journal) follow the last one,
#: so that the replay after it stays short (a few milliseconds) without a line per call.
CHECKPOINT_EVERY_RECORDS = 256


class RunLedger:
    """Writes ``run.json``, the index entry, the summary and the checkpoints of one run."""

    def __init__(self, record: RunRecord, run_dir: Path, index: RunIndex, *,
                 events: EventLog, journal: JournalLog,
                 summary: Callable[[], dict[str, Any]],
                 checkpoint: Callable[[], dict[str, Any]]) -> None:
        self.record = record
        self.dir = run_dir
        self.index = index
        self.events = events
        self.journal = journal
        self._summary = summary
        self._checkpoint = checkpoint
        self._written: str | None = None  # run.json as last written
        self._path = f"{run_dir}/{layout.RUN_RECORD}"
        self._staging = f"{run_dir}/{STAGING_DIR_NAME}"
        self._dirty = True
        #: The status the index entry shows (``None``: not written by this process yet).
        self.indexed_status: str | None = None
        self._index_due: dict[str, Any] | None = None
        self._summary_due: dict[str, Any] | None = None
        self._checkpoint_seq = 0  # records (events + journal) the last checkpoint covers

    def changed(self, *, index: bool, summary: bool) -> None:
        """The record changed (or its summary is due): ``index`` asks for the index entry
        when the status moved, ``summary`` for the summary too (snapshots taken now)."""
        self._dirty = True
        if summary:
            self._summary_due = self._summary()
        if index and (summary or self.record.status != self.indexed_status):
            self._index_due = dump_model(self.record)
        elif index and self._summary_due is None:
            self._index_due = None  # back to the status the index shows: nothing to write

    def write_record(self) -> None:
        """Write ``run.json`` now if it changed."""
        if not self._dirty:
            return
        text = model_text(self.record)
        if text != self._written:
            try:
                write_text_atomically(self._path, text, staging=self._staging)
            except OSError as exc:  # still due: written with the next change
                raise FileIo("write", layout.RUN_RECORD, exc) from None
            self._written = text
        self._dirty = False

    def sync(self, batch_ended: bool) -> None:
        """After a write: ``run.json`` and the index when due; a checkpoint when a batch
        ended with the counters changed."""
        self.write_record()
        if self._index_due is not None:
            record, summary = self._index_due, self._summary_due
            try:
                self.index.save(self.record.id, record, summary)
            except OSError as exc:  # still due
                raise FileIo("write", f"index/runs/{self.record.id}.json", exc) from None
            self._index_due = self._summary_due = None
            self.indexed_status = record["status"]
        if batch_ended:
            self._write_checkpoint()

    def _write_checkpoint(self) -> None:
        if (self.events.last_seq + self.journal.last_seq - self._checkpoint_seq
                < CHECKPOINT_EVERY_RECORDS):
            return
        counters = self._checkpoint()
        event_bytes, seq = self.events.position()
        journal_bytes, journal_seq = self.journal.position()
        line = {"eventSeq": seq, "eventBytes": event_bytes, "journalSeq": journal_seq,
                "journalBytes": journal_bytes, **counters}
        data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            fd = os.open(self.dir / CHECKPOINTS, os.O_RDWR | os.O_APPEND | os.O_CREAT
                         | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise FileIo("append", CHECKPOINTS, exc) from None
        try:
            size = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:  # a short write is continued, which raises what cut it short
                    view = view[os.write(fd, view):]
            except OSError as exc:  # cut back: the file keeps whole lines only
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise FileIo("append", CHECKPOINTS, exc) from None
        finally:
            os.close(fd)
        self._checkpoint_seq = seq + journal_seq

    def restored(self, covered: int) -> None:
        """A reopened run: its last checkpoint covers ``covered`` records (events and
        journal), and the index shows its status."""
        self._checkpoint_seq = covered
        self.indexed_status = self.record.status
