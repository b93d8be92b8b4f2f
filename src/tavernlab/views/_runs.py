"""Views of runs: a run's card, a table of its events, a lab with its recent runs.

The card is drawn from a :class:`RunSummary` (plain facts gathered by the caller, so this
module does no reading of its own); events and run records are drawn as they are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tavernlab.events import Event
from tavernlab.views._markup import badge, card, code, escape, fold, table, value_html
from tavernlab.workspace.records import RunRecord

#: Runs shown open in a lab's view; older ones fold behind a ``<details>`` (never dropped).
RECENT_RUNS = 10

_TONES = {"completed": "ok", "partial_success": "warn", "cancelled": "warn", "failed": "error",
          "interrupted": "warn"}


@dataclass(frozen=True)
class RunSummary:
    """What a run's card shows: identity, status, and what the run has done so far."""

    id: str
    status: str
    target: str
    presentation: str
    round: int
    tool_calls: int
    js_jobs: int
    files_changed: list[str] = field(default_factory=list)
    chat_commits: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    workspace_dir: str = ""
    persist_state_id: str | None = None
    #: Model calls of the agent loop, and their token usage per run and per round
    #: (``{inputTokens, outputTokens, totalTokens}``; empty for a run played by hand).
    model_calls: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    round_usage: dict[int, dict[str, int]] = field(default_factory=dict)


def usage_text(usage: dict[str, int]) -> str:
    """``30 tokens (20 in, 10 out)`` (``tokens not reported`` for none)."""
    split = ", ".join(f"{usage[key]} {name}" for key, name in (
        ("inputTokens", "in"), ("outputTokens", "out")) if key in usage)
    if "totalTokens" in usage:
        return f"{usage['totalTokens']} tokens" + (f" ({split})" if split else "")
    return f"tokens {split}" if split else "tokens not reported"


def _model_lines(run: RunSummary) -> list[str]:
    if not run.model_calls:
        return []
    rounds = "   ".join(f"round {number}: {usage_text(usage)}"
                        for number, usage in sorted(run.round_usage.items()))
    return [f"  model calls: {run.model_calls}   {usage_text(run.usage)}",
            *([f"    {rounds}"] if rounds else [])]


def _status_badge(status: str) -> str:
    return badge(status, _TONES.get(status, "info"))


def _listing(items: list[str]) -> str:
    return ", ".join(items) if items else "none"


def run_card_text(run: RunSummary) -> str:
    """``Run run_… (chat alice, foreground): calling_model`` then one line per fact."""
    lines = [f"Run {run.id} ({run.target}, {run.presentation}): {run.status}",
             f"  rounds: {run.round}   tool calls: {run.tool_calls}   js jobs: {run.js_jobs}",
             f"  files changed ({len(run.files_changed)}): {_listing(run.files_changed)}",
             f"  chat commits ({len(run.chat_commits)}): {_listing(run.chat_commits)}",
             *_model_lines(run)]
    if run.skills:
        lines.append(f"  skills: {', '.join(run.skills)}")
    if run.persist_state_id:
        lines.append(f"  persist state: {run.persist_state_id}")
    if run.workspace_dir:
        lines.append(f"  workspace: {run.workspace_dir}")
    return "\n".join(lines)


def _paths_html(paths: list[str]) -> str:
    if not paths:
        return "<i>none</i>"
    items = ", ".join(code(p) for p in paths)
    return items if len(paths) <= 8 else fold(f"{len(paths)} paths", items)


def run_card_html(run: RunSummary) -> str:
    """The run's card: id, status, rounds, calls, files changed, chat commits."""
    fields = [("target", escape(f"{run.target} ({run.presentation})")),
              ("rounds", escape(run.round)),
              ("tool calls", escape(run.tool_calls)),
              ("js jobs", escape(run.js_jobs)),
              (f"files changed ({len(run.files_changed)})", _paths_html(run.files_changed)),
              (f"chat commits ({len(run.chat_commits)})", _paths_html(run.chat_commits))]
    if run.model_calls:
        fields.append(("model calls", escape(f"{run.model_calls}: {usage_text(run.usage)}")))
        fields += [(f"round {number}", escape(usage_text(usage)))
                   for number, usage in sorted(run.round_usage.items())]
    if run.skills:
        fields.append(("skills", ", ".join(code(s) for s in run.skills)))
    if run.persist_state_id:
        fields.append(("persist state", code(run.persist_state_id)))
    if run.workspace_dir:
        fields.append(("workspace", code(run.workspace_dir)))
    return card(f"Run {code(run.id)} {_status_badge(run.status)}", fields)


def _payload(event: Event) -> dict[str, Any]:
    payload = event.payload
    if hasattr(payload, "model_dump"):
        dumped: dict[str, Any] = payload.model_dump(mode="json", by_alias=True,
                                                    exclude_none=True)
        return dumped
    return dict(payload or {})


def _seq(event: Event) -> str:
    return f"j{event.seq}" if event.source == "journal" else str(event.seq)


def _time(event: Event) -> str:
    return event.timestamp.strftime("%H:%M:%S.%f")[:-3]


def events_text(events: Sequence[Event]) -> str:
    """One line per record, ``seq time level type key=value…`` with every value in full
    (journal records' seq as ``jN``)."""
    if not events:
        return "no events"
    lines = []
    for event in events:
        values = " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}"
                          for k, v in _payload(event).items())
        lines.append(f"{_seq(event):>5} {_time(event)} {event.level:<5} {event.type} "
                     f"{values}".rstrip())
    return "\n".join(lines)


def events_html(events: Sequence[Event]) -> str:
    """A table: seq, time, level, type and the payload's fields (long values fold)."""
    if not events:
        return "<i>no events</i>"
    rows = []
    for event in events:
        details = "<br>".join(f"{escape(k)}: {value_html(v)}"
                              for k, v in _payload(event).items())
        level = badge(event.level, "error" if event.level == "error" else
                      "warn" if event.level == "warn" else "muted")
        rows.append([escape(_seq(event)), escape(_time(event)), level, code(event.type),
                     details])
    return table(["seq", "time", "level", "type", "payload"], rows)


def _target(record: RunRecord) -> str:
    target = record.target
    return (f"chat {target.stable_chat_id}" if target.kind == "chat"
            else f"session {target.session_id}")


def lab_text(root: str, runs: Sequence[RunRecord],
             statuses: Mapping[str, str] | None = None) -> str:
    """``Lab /path (3 runs)`` then one line per run, newest first. ``statuses`` is the
    status to show per run id where it is not the record's (``interrupted``)."""
    shown = statuses or {}
    lines = [f"Lab {root} ({len(runs)} run{'s' if len(runs) != 1 else ''})"]
    lines += [f"  {r.id}  {shown.get(r.id, r.status):<14} {r.presentation:<10} {_target(r)}  "
              f"{r.created_at:%Y-%m-%d %H:%M:%S}" for r in runs]
    return "\n".join(lines)


def lab_html(root: str, runs: Sequence[RunRecord],
             statuses: Mapping[str, str] | None = None) -> str:
    """The lab's path and a table of its runs: the :data:`RECENT_RUNS` newest open, the
    older ones folded below (``statuses`` as for :func:`lab_text`)."""
    shown = statuses or {}

    def rows(records: Sequence[RunRecord]) -> list[list[str]]:
        return [[code(r.id), _status_badge(shown.get(r.id, r.status)), escape(r.presentation),
                 escape(_target(r)), escape(f"{r.created_at:%Y-%m-%d %H:%M:%S}")]
                for r in records]

    headers = ["run", "status", "presentation", "target", "created"]
    body = table(headers, rows(runs[:RECENT_RUNS])) if runs else "<i>no runs yet</i>"
    if len(runs) > RECENT_RUNS:
        older = runs[RECENT_RUNS:]
        body += fold(f"{len(older)} older runs", table(headers, rows(older)))
    return card(f"Lab {code(root)}", [("runs", escape(len(runs)))], body)
