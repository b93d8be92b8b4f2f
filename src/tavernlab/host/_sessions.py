"""Persistent agent sessions (docs/layout.md).

Layout under ``agent-workspaces/sessions/``::

    profile.json                      the shared Session Profile
    <session-id>/session.json         {id, title, createdAt, lastUsedAt?}
    <session-id>/history.jsonl        {seq, runId, createdAt, message, origin?} per line
    <session-id>/workspace/{work,tmp,tool-results}
    <session-id>/runs/<run-id>/       per-run records (run.json, events.jsonl, input/...)

Run index entries use ``index/runs/<run-id>.json`` like chat runs (upstream location unknown;
tavernlab chooses this). Files are edited directly: no persist versions, no chat commits, no
retention. In the shell, ``/tmp`` is the session's ``tmp/`` root. Session ids are ``ses_`` +
32 hex characters unless the caller gives one matching ``[A-Za-z0-9_-]{1,128}``.
History messages are ``{"role": "user"|"assistant"|"system", "content": str}`` (tavernlab's
choice; upstream's message shape is unknown).
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import tavernlab.layout as layout
from tavernlab.clock import RANDOM_IDS, SYSTEM_CLOCK, Clock, IdFactory, rfc3339
from tavernlab.errors import InvalidData, NotFound
from tavernlab.host._index import RunIndex
from tavernlab.locks import file_lock
from tavernlab.ondisk import Model
from tavernlab.workspace.records import dump_model, read_json, write_json
from tavernlab.workspace.roots import Profile, check_dir_name


class SessionRecord(Model):
    """``session.json``."""

    id: str
    title: str = ""
    created_at: datetime
    last_used_at: datetime | None = None


class HistoryMessage(Model):
    """A message stored in ``history.jsonl``."""

    role: Literal["user", "assistant", "system"]
    content: str


class HistoryEntry(Model):
    """One line of ``history.jsonl``."""

    seq: int
    run_id: str
    created_at: datetime
    message: HistoryMessage
    origin: str | None = None


class Session:
    """One session: its record, workspace directory and history."""

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self.store = store
        self.id = session_id
        self.dir = store.root / session_id
        self.workspace_dir = self.dir / "workspace"
        self.history_path = self.dir / "history.jsonl"

    def __repr__(self) -> str:
        return f"<Session {self.id} {self.record.title!r}>"

    @property
    def record(self) -> SessionRecord:
        """``session.json`` as stored now."""
        return SessionRecord.model_validate(read_json(self.dir / "session.json"))

    def run_ids(self) -> list[str]:
        """Ids of the runs recorded in this session."""
        runs = self.dir / "runs"
        return sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []

    # -- history ---------------------------------------------------------------------------

    def history(self, *, limit: int | None = None, before_seq: int | None = None,
                after_seq: int | None = None) -> list[HistoryEntry]:
        """Read (and validate) the history; page with ``limit`` and one of ``before_seq`` or
        ``after_seq``: the last ``limit`` entries before ``before_seq`` (or overall), or the
        first ``limit`` after ``after_seq``."""
        if before_seq is not None and after_seq is not None:
            raise InvalidData("use either beforeSeq or afterSeq, not both")
        if limit is not None and limit < 1:
            raise InvalidData("limit must be >= 1")
        entries = self._read_history()
        if after_seq is not None:
            matches = [e for e in entries if e.seq > after_seq]
            return matches[:limit] if limit is not None else matches
        if before_seq is not None:
            entries = [e for e in entries if e.seq < before_seq]
        return entries[-limit:] if limit is not None else entries

    def _read_history(self) -> list[HistoryEntry]:
        if not self.history_path.exists():
            return []
        data = self.history_path.read_bytes()
        if data and not data.endswith(b"\n"):
            raise InvalidData(f"history of session `{self.id}` ends with an incomplete line")
        entries = []
        for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
            try:
                entry = HistoryEntry.model_validate(json.loads(line))
            except ValueError as exc:
                raise InvalidData(f"history of session `{self.id}` line {number} is invalid: "
                                  f"{exc}") from None
            if entry.seq != number:
                raise InvalidData(f"history of session `{self.id}` has a gap: expected seq "
                                  f"{number}, found {entry.seq}")
            entries.append(entry)
        return entries

    def append_history(self, run_id: str, role: Literal["user", "assistant", "system"],
                       content: str, *, origin: str | None = None) -> HistoryEntry:
        """Append a message of one of this session's runs (serialized per session). A user
        message updates ``lastUsedAt``."""
        if run_id not in self.run_ids():
            raise InvalidData(f"run `{run_id}` does not belong to session `{self.id}`")
        with file_lock(self.dir / ".history.lock"):
            entries = self._read_history()
            entry = HistoryEntry(seq=len(entries) + 1, run_id=run_id,
                                 created_at=self.store.clock.now(),
                                 message=HistoryMessage(role=role, content=content),
                                 origin=origin)
            line = json.dumps(dump_model(entry), ensure_ascii=False) + "\n"
            with open(self.history_path, "a", encoding="utf-8") as handle:
                handle.write(line)
        if role == "user":
            self.store.touch(self.id)
        return entry


class SessionStore:
    """All sessions of a lab and their shared Profile."""

    def __init__(self, workspaces_dir: Path, index: RunIndex, *, clock: Clock = SYSTEM_CLOCK,
                 ids: IdFactory = RANDOM_IDS) -> None:
        self.index = index
        self.clock = clock
        self.ids = ids
        self.root = workspaces_dir / "sessions"
        self.root.mkdir(parents=True, exist_ok=True)

    def profile(self) -> Profile:
        """The shared Session Profile (``sessions/profile.json``; created with defaults)."""
        path = self.root / "profile.json"
        if not path.exists():
            write_json(path, dump_model(Profile.session_default()))
        return Profile.model_validate(read_json(path))

    def create(self, title: str = "", *, session_id: str | None = None) -> Session:
        """Create a session with its ``workspace/{work,tmp,tool-results}`` and ``session.json``."""
        session_id = check_dir_name(session_id, "session id") if session_id else self.ids.new("ses")
        directory = self.root / session_id
        if directory.exists():
            raise InvalidData(f"session `{session_id}` already exists")
        workspace = directory / "workspace"
        for root in ("work", "tmp", layout.TOOL_RESULTS):
            (workspace / root).mkdir(parents=True)
        write_json(directory / "session.json", dump_model(
            SessionRecord(id=session_id, title=title, created_at=self.clock.now())))
        self.profile()
        return Session(self, session_id)

    def get(self, session_id: str) -> Session:
        """An existing session."""
        check_dir_name(session_id, "session id")
        directory = self.root / session_id
        if directory.is_symlink() or not (directory / "session.json").is_file():
            raise NotFound(f"session `{session_id}` was not found", path=session_id)
        return Session(self, session_id)

    def list(self) -> list[Session]:
        """Sessions by ``lastUsedAt`` (else ``createdAt``) descending, then id descending.
        A symlinked entry is an error."""
        sessions = []
        for entry in self.root.iterdir():
            if entry.name == "profile.json" or entry.name.startswith("."):
                continue
            if entry.is_symlink():
                raise InvalidData(f"session entry `{entry.name}` is a symlink")
            if entry.is_dir():
                sessions.append(Session(self, entry.name))

        def key(session: Session) -> tuple[str, str]:
            record = session.record
            return (rfc3339(record.last_used_at or record.created_at), session.id)

        return sorted(sessions, key=key, reverse=True)

    def rename(self, session_id: str, title: str) -> None:
        """Change a session's ``title``."""
        self._update(session_id, title=title)

    def touch(self, session_id: str) -> None:
        """Set ``lastUsedAt`` to now."""
        self._update(session_id, last_used_at=self.clock.now())

    def _update(self, session_id: str, **changes: Any) -> None:
        session = self.get(session_id)
        with file_lock(session.dir / ".session.lock"):
            record = session.record.model_copy(update=changes)
            write_json(session.dir / "session.json", dump_model(record))

    def delete(self, session_id: str) -> None:
        """Remove the session's run index entries and summaries, then its directory. The
        shared Profile and the skills stay; deleting a missing session succeeds."""
        check_dir_name(session_id, "session id")
        directory = self.root / session_id
        if not directory.exists() and not directory.is_symlink():
            return
        if directory.is_symlink():
            raise InvalidData(f"session entry `{session_id}` is a symlink")
        for run_id in Session(self, session_id).run_ids():
            self.index.delete(run_id)
        shutil.rmtree(directory)
