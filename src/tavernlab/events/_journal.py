"""The journal: what a run does that upstream's ``events.jsonl`` does not log.

``journal.jsonl`` sits beside ``events.jsonl`` with the same envelope and sequence rules
(``seq`` from 1, +1 per append), plus ``eventSeq``: the last ``events.jsonl`` seq when the
record was written, which places it in one merged order (event ``N``, then the journal
records anchored at ``N``, then event ``N + 1``). Records: each ``run.js`` job (start and
finish), the end of each round, each sub-agent with its Profile (those three in
:mod:`tavernlab.events._steps`, defined on first use), a :class:`FileChanged`
for every file or directory created, changed, moved or removed in the run by any writer, and a
:class:`LogRepaired` when an unfinished last line of either log (left by a writer that was
killed, or ran out of space, in the middle of its append) was cut away before the next append.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from tavernlab.events._base import Event
from tavernlab.ondisk import Model

#: Every journal record type (never written to ``events.jsonl``).
JOURNAL_TYPES: frozenset[str] = frozenset({
    "js_job_started", "js_job_finished", "round_ended", "subagent_started", "file_changed",
    "log_repaired",
})


class JournalRecord(Event):
    """The envelope of one line of ``journal.jsonl``."""

    source: ClassVar[Literal["events", "journal"]] = "journal"
    event_seq: int


#: The longest label a job gets (:func:`job_label`), in characters.
JOB_LABEL_CHARS = 120


def job_label(command: str, argv: list[str]) -> str:
    """One line naming a ``run.js`` job for a timeline bar or a replay divergence:
    ``js -e console.log(1) console.log(2)`` for a multi-line ``%%js`` cell (every run of
    whitespace, line breaks included, becomes one space), cut at :data:`JOB_LABEL_CHARS` with
    a final ``…``. A label, not data: the record keeps the exact argv."""
    text = " ".join(" ".join([command, *argv]).split())
    return text if len(text) <= JOB_LABEL_CHARS else text[:JOB_LABEL_CHARS - 1] + "…"


ChangeKind = Literal["created", "modified", "moved", "removed"]
Writer = Literal["tool", "js", "persist", "host"]


class FileChange(Model):
    """``file_changed``: one node's change, as it stands when recorded.

    ``size`` and ``sha256`` describe the node after the change (``None`` for a removed node
    and for directories' digests); ``fromPath`` is the old path of a move; ``writer`` and
    ``callId`` say who changed it (a tool call id, a ``run.js`` job id, or ``None`` for the
    host's own writes such as persist initialisation)."""

    path: str
    change: ChangeKind
    node: Literal["file", "directory"]
    size: int | None = None
    sha256: str | None = None
    from_path: str | None = None
    writer: Writer
    call_id: str | None = None


class FileChanged(JournalRecord):
    """A file or directory of the run changed."""

    type: Literal["file_changed"] = "file_changed"
    payload: FileChange


#: Characters of a cut line a :class:`TornTail` keeps as text (the digest covers all of it).
TORN_TEXT_CHARS = 1000


class TornTail(Model):
    """``log_repaired``: the unfinished last line cut from ``file`` (``events.jsonl`` or
    ``journal.jsonl``) before an append, so the next line does not merge into it.

    ``offset`` is where the cut line began (the file's size afterwards), ``bytes`` and
    ``sha256`` describe everything cut, and ``text`` is its beginning as text (at most
    :data:`TORN_TEXT_CHARS` characters, bytes that are not UTF-8 replaced by U+FFFD) so the
    record it would have been can be recognised. A cut line was never a record: its writer
    died, or failed with an error, before the line ended."""

    file: Literal["events.jsonl", "journal.jsonl"]
    offset: int
    bytes: int
    sha256: str
    text: str


class LogRepaired(JournalRecord):
    """An unfinished last line of a run log was cut away (see :class:`TornTail`)."""

    type: Literal["log_repaired"] = "log_repaired"
    payload: TornTail
