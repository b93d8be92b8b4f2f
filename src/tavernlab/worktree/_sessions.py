"""Agent sessions of the registry, and who is (or was) working in a worktree (docs/worktrees.md).

The registry is read straight off disk: every ``~/.agentproto/workspaces/<slug>/sessions.json``
bucket plus the legacy ``~/.agentproto/sessions.json``, merged by session id with bucket rows
winning. Each row becomes a :data:`SessionRef`, upstream's name and fields — ``id``,
``startedAt`` and ``status`` (strings) are required, ``label``, ``endedAt``, ``cwd``,
``adapterSlug``, ``model``, ``authMode`` (or ``auth.mode``), ``costUsd``, ``tokensIn`` and
``tokensOut`` are kept when well typed — and a row that is not one is dropped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tavernlab.worktree._listing import is_within

LIVE_STATUSES = frozenset({"starting", "running"})
_REQUIRED = ("id", "startedAt", "status")
_OPTIONAL_TEXT = ("label", "endedAt", "cwd", "adapterSlug", "model", "authMode")
_OPTIONAL_NUMBERS = ("costUsd", "tokensIn", "tokensOut")
_ORDER = ("id", "label", "startedAt", "endedAt", "status", "cwd", "adapterSlug", "model",
          "authMode", "costUsd", "tokensIn", "tokensOut")

#: One agentproto session as the registry lists it (upstream's ``SessionRef``).
SessionRef = dict[str, Any]


def session_ref(row: Any) -> SessionRef | None:
    """A registry row as a :data:`SessionRef`, or ``None`` when the row is malformed."""
    if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in _REQUIRED):
        return None
    fields = dict(row)
    auth = row.get("auth")
    if "authMode" not in fields and isinstance(auth, dict):
        fields["authMode"] = auth.get("mode")
    record: SessionRef = {}
    for key in _ORDER:
        value = fields.get(key)
        if key in _REQUIRED:
            record[key] = value
        elif key in _OPTIONAL_TEXT and value is not None:
            if not isinstance(value, str):
                return None
            record[key] = value
        elif key in _OPTIONAL_NUMBERS and value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                return None
            record[key] = value
    return record


def session_refs(rows: Iterable[Any]) -> list[SessionRef]:
    """The well-formed rows as :data:`SessionRef` rows (idempotent on them)."""
    return [record for row in rows if (record := session_ref(row)) is not None]


def _read_sessions(path: Path) -> list[SessionRef]:
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = data.get("sessions") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise ValueError("not a session list")
    return session_refs(rows)


def load_sessions(path: str | os.PathLike[str] | None = None) -> list[SessionRef] | None:
    """Session records of the registry (see the module docstring).

    A file holds ``{"sessions": [...]}`` (upstream) or a bare list (tavernlab accepts both).
    Corrupt buckets are skipped; if every existing source is unreadable the result is
    ``None`` (daemon unreachable); nothing ever run → ``[]``. An explicit ``path`` reads only
    that file.
    """
    if path is not None:
        sources = [Path(path)]
    else:
        home = Path.home() / ".agentproto"
        sources = [*sorted((home / "workspaces").glob("*/sessions.json")),
                   home / "sessions.json"]
    existing = [source for source in sources if source.exists()]
    if not existing:
        return []
    merged: dict[str, SessionRef] = {}
    readable = 0
    for source in existing:  # buckets first: on a shared id the bucket row wins
        try:
            records = _read_sessions(source)
        except (OSError, ValueError):
            continue
        readable += 1
        for record in records:
            merged.setdefault(record["id"], record)
    return list(merged.values()) if readable else None


def sessions_in(path: str, sessions: Sequence[Any]) -> list[SessionRef]:
    """Well-formed sessions whose cwd is the worktree or below it."""
    return [s for s in session_refs(sessions)
            if isinstance(s.get("cwd"), str) and is_within(s["cwd"], path)]


def liveness(path: str, sessions: Sequence[Any] | None) -> dict[str, Any]:
    """``{state: "sessions"|"idle"|"daemon-unreachable", sessions: [live records], services:
    []}``; ``sessions=None`` means the registry could not be read."""
    if sessions is None:
        return {"state": "daemon-unreachable", "sessions": [], "services": []}
    live = [s for s in sessions_in(path, sessions) if s["status"] in LIVE_STATUSES]
    return {"state": "sessions" if live else "idle", "sessions": live, "services": []}


def provenance(path: str, sessions: Sequence[Any] | None,
               created_at: str | None) -> dict[str, Any]:
    """Which sessions worked in the worktree (never affects the class).

    With a creation marker only sessions started at or after ``createdAt`` count
    (confidence ``exact``); otherwise every session inside it (``best-effort``).
    """
    rows = [s for s in sessions_in(path, sessions or [])
            if created_at is None or s["startedAt"] >= created_at]
    rows.sort(key=lambda row: row["startedAt"])
    return {"confidence": "exact" if created_at is not None else "best-effort",
            "sessions": rows}
