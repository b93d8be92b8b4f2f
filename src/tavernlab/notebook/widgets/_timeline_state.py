"""The timeline's data: a run's rounds and the bars in them, built from its records.

Each bar is one thing that took time: a tool call (``tool_call_requested`` … ``completed`` or
``failed``; kind ``shell`` for ``workspace.shell``, ``finish`` for ``workspace.finish``,
``tool`` otherwise), a ``run.js`` job (``js_job_started``/``finished``, kind ``js``), a chat
commit (``chat_commit_requested`` … ``run_committed``, kind ``commit``) or a model call of
the agent loop (``model_call_attempt_started`` … ``model_completed``, kind ``model``: one
bar for all its attempts, with the retries, the time and the provider's token usage; it
starts before the round's tool calls, so it is the round's first bar). Its status is
``running`` until it ends, then ``ok``, ``error`` or ``cancelled``. A call is ``cancelled``
when its error code's last part is ``interrupted``, ``cancelled`` or ends in
``_cancelled`` (``tool.interrupted``, ``workspace.shell_cancelled``,
``tool.round_cancelled``); a js job when the sandbox says so (tavernlab choice: the host has
no status field for either). Rounds group the bars: a call carries its round; a js job and
an auto-commit belong to the round open when they started (``round_ended`` closes one).

The widget never sends every bar to the browser. :meth:`TimelineState.rows` flattens the
rounds into rows (a header per round, then its bars) after the kind and status filters and
the collapsed rounds, and :meth:`TimelineState.window` returns only the rows in view, so a
run with 10,000 records costs the browser one screenful.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from tavernlab.clock import epoch_ms
from tavernlab.events import (
    ChatCommitRequested,
    Event,
    FileChanged,
    JsJobFinished,
    JsJobStarted,
    ModelCallAttemptFailed,
    ModelCallAttemptStarted,
    ModelCallRetryScheduled,
    ModelCompleted,
    ModelRequestCreated,
    RoundEnded,
    RunCommitted,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallRequested,
    ToolCallStarted,
    ToolResultStored,
    job_label,
)
from tavernlab.host import order_key

Kind = Literal["model", "tool", "shell", "js", "commit", "finish", "mcp"]
Status = Literal["ok", "error", "cancelled", "running"]
KINDS: tuple[Kind, ...] = ("model", "tool", "shell", "js", "commit", "finish", "mcp")
STATUSES: tuple[Status, ...] = ("ok", "error", "cancelled", "running")

#: The record types the timeline reads.
TIMELINE_TYPES = frozenset({
    "tool_call_requested", "tool_call_started", "tool_result_stored", "tool_call_completed",
    "tool_call_failed", "js_job_started", "js_job_finished", "chat_commit_requested",
    "run_committed", "round_ended", "file_changed", "run_cancelled", "run_failed",
    "model_request_created", "model_call_attempt_started", "model_call_attempt_failed",
    "model_call_retry_scheduled", "model_completed", "chat_commit_completed",
    "chat_commit_failed"})


def call_status(error_code: str | None, is_error: bool) -> Status:
    """The status of an ended tool call (see the module docstring)."""
    if not is_error:
        return "ok"
    last = (error_code or "").rpartition(".")[2]
    if last in ("interrupted", "cancelled") or last.endswith("_cancelled"):
        return "cancelled"
    return "error"


def model_bar_id(invocation_id: str, round_number: int) -> str:
    """``model-3`` for the main invocation's round 3 (``model-<invocation>-3`` for another
    invocation's)."""
    if invocation_id == "inv_root":
        return f"model-{round_number}"
    return f"model-{invocation_id}-{round_number}"


def model_label(facts: dict[str, Any]) -> str:
    """``test-model · 2 attempts · 15 tokens``: the model, the attempts when there was more
    than one, and the tokens once the call has ended (the split into input and output is in
    the detail and the round's usage)."""
    parts = [str(facts.get("model") or "model call")]
    attempts = int(facts.get("attempts", 1))
    if attempts > 1:
        parts.append(f"{attempts} attempts")
    usage = facts.get("usage") or {}
    total = usage.get("totalTokens")
    if total is None and (usage.get("inputTokens") is not None
                          or usage.get("outputTokens") is not None):
        total = (usage.get("inputTokens") or 0) + (usage.get("outputTokens") or 0)
    if total is not None:
        parts.append(f"{total} tokens")
    return " · ".join(parts)


def kind_of_tool(tool_id: str) -> Kind:
    """``workspace.shell`` -> shell, ``workspace.finish`` -> finish (also by their full ids
    ``builtin:…``), an MCP server's tool (``mcp/<server>/<tool>``) -> mcp, anything else ->
    tool."""
    if tool_id.startswith("mcp/"):
        return "mcp"
    tool_id = tool_id.removeprefix("builtin:")
    if tool_id == "workspace.shell":
        return "shell"
    return "finish" if tool_id == "workspace.finish" else "tool"


@dataclass(slots=True)
class Bar:
    """One timed thing in the run."""

    id: str
    kind: Kind
    label: str
    round: int
    start_ms: int
    end_ms: int | None = None
    status: Status = "running"
    elapsed_ms: int | None = None
    error_code: str | None = None
    message: str | None = None
    resource_refs: list[str] = field(default_factory=list)
    arguments_path: str | None = None
    result_path: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    files: list[dict[str, Any]] = field(default_factory=list)

    def end(self, at_ms: int, status: Status, elapsed_ms: int | None = None) -> None:
        """Close the bar."""
        self.end_ms, self.status = at_ms, status
        self.elapsed_ms = elapsed_ms if elapsed_ms is not None else at_ms - self.start_ms

    def row(self, span: tuple[int, int | None]) -> dict[str, Any]:
        """The bar as the front end receives it; ``span`` is its round's time span."""
        return {"type": "bar", "id": self.id, "kind": self.kind, "label": self.label,
                "round": self.round, "status": self.status, "start_ms": self.start_ms,
                "end_ms": self.end_ms, "elapsed_ms": self.elapsed_ms,
                "error_code": self.error_code, "span": list(span)}


@dataclass(slots=True)
class Round:
    """One model round and its bars, in start order."""

    number: int
    bars: list[Bar] = field(default_factory=list)
    ended_ms: int | None = None
    auto_committed: str | None = None

    @property
    def span(self) -> tuple[int, int | None]:
        """``(first start, last end)``; the end is ``None`` while a bar runs (and for a
        round without bars)."""
        if not self.bars:
            return self.ended_ms or 0, None
        start = min(bar.start_ms for bar in self.bars)
        ends = [bar.end_ms for bar in self.bars]
        return start, None if None in ends else max(e for e in ends if e is not None)


Handler = Callable[["TimelineState", Any], None]


class TimelineState:
    """Every bar of a run by round, kept current by :meth:`apply`."""

    def __init__(self) -> None:
        self.rounds: dict[int, Round] = {}
        self.bars: dict[str, Bar] = {}
        self.open_round = 1
        self.last_key: tuple[int, int, int] = (0, 0, 0)
        self._commit: Bar | None = None
        self._requests: dict[tuple[str, int], dict[str, Any]] = {}
        self._rows: list[Bar | Round] | None = None
        self._filters: tuple[frozenset[str], frozenset[str], frozenset[int]] | None = None
        self._spans: dict[int, tuple[int, int | None]] = {}
        self._counts: dict[str, dict[str, int]] | None = None

    # -- building -----------------------------------------------------------------------------

    def apply_all(self, records: Iterable[Event]) -> None:
        """Apply records in order."""
        for record in records:
            self.apply(record)

    def apply(self, record: Event) -> None:
        """Apply one record (other types are ignored). A record at or before the last one
        applied is skipped, so the records read at start and those a subscription delivered
        meanwhile can both be applied."""
        key = order_key(record)
        if key <= self.last_key:
            return
        self.last_key = key
        handler = _HANDLERS.get(record.type)
        if handler is not None:
            handler(self, record)
            self._rows = self._counts = None

    def _add(self, bar: Bar) -> None:
        self.bars[bar.id] = bar
        self.rounds.setdefault(bar.round, Round(bar.round)).bars.append(bar)

    def _requested(self, event: ToolCallRequested | ToolCallStarted) -> None:
        """A call's bar opens at its request (or at its start, for a record stream that
        begins between the two)."""
        ref = event.payload
        if ref.call_id in self.bars:
            return
        self._add(Bar(ref.call_id, kind_of_tool(ref.tool_id),
                      ref.tool_id.removeprefix("builtin:"), ref.round,
                      epoch_ms(event.timestamp), arguments_path=ref.arguments_path,
                      facts={"tool_id": ref.tool_id, "invocation_id": ref.invocation_id}))

    def _stored(self, event: ToolResultStored) -> None:
        bar = self.bars.get(event.payload.call_id)
        if bar is not None:
            bar.result_path = event.payload.path

    def _ended(self, event: ToolCallCompleted | ToolCallFailed) -> None:
        outcome = event.payload
        bar = self.bars.get(outcome.call_id)
        if bar is None:
            return
        bar.end(epoch_ms(event.timestamp), call_status(outcome.error_code, outcome.is_error),
                outcome.elapsed_ms)
        bar.error_code, bar.message = outcome.error_code, outcome.message
        bar.resource_refs = list(outcome.resource_refs)
        if self._commit is not None and self._commit.facts.get("call_id") == outcome.call_id:
            self._commit.end(bar.end_ms or bar.start_ms, "error")
            self._commit = None

    def _job_started(self, record: JsJobStarted) -> None:
        job = record.payload
        label = job_label(job.command, job.argv)
        self._add(Bar(job.job_id, "js", label, self.open_round, epoch_ms(record.timestamp),
                      facts={"command": job.command, "argv": job.argv, "cwd": job.cwd,
                             "stdin_bytes": job.stdin_bytes}))

    def _job_finished(self, record: JsJobFinished) -> None:
        end = record.payload
        bar = self.bars.get(end.job_id)
        if bar is None:
            return
        status: Status = ("cancelled" if end.cancelled else
                          "error" if end.timed_out or end.exit_code != 0 else "ok")
        bar.end(epoch_ms(record.timestamp), status, end.elapsed_ms)
        bar.error_code = "timed out" if end.timed_out else None
        bar.facts.update(exit_code=end.exit_code, stdout_bytes=end.stdout_bytes,
                         stderr_bytes=end.stderr_bytes, stdout_sha256=end.stdout_sha256,
                         stderr_sha256=end.stderr_sha256)

    def _commit_requested(self, event: ChatCommitRequested) -> None:
        request = event.payload
        bar = Bar(f"commit-{event.seq}", "commit", f"commit {request.path}", request.round,
                  epoch_ms(event.timestamp), resource_refs=[request.path],
                  facts={"call_id": request.call_id, "path": request.path,
                         "explicit": request.is_explicit, "mode": request.mode,
                         "sha256": request.sha256})
        self._add(bar)
        self._commit = bar

    def _committed(self, event: RunCommitted) -> None:
        if self._commit is None:
            return
        self._commit.end(epoch_ms(event.timestamp), "ok")
        self._commit.facts.update(message_index=event.payload.message_index,
                                  swipe_id=event.payload.swipe_id)
        self._commit = None

    def _model_requested(self, event: ModelRequestCreated) -> None:
        request = event.payload
        self._requests[(request.invocation_id, request.round)] = {
            "request": dict(request.request), "toolTurn": dict(request.tool_turn)}

    def _model_attempt(self, event: ModelCallAttemptStarted) -> None:
        attempt = event.payload
        bar_id = model_bar_id(attempt.invocation_id, attempt.round)
        bar = self.bars.get(bar_id)
        if bar is None:
            asked = self._requests.pop((attempt.invocation_id, attempt.round), {})
            facts: dict[str, Any] = {
                "invocation_id": attempt.invocation_id, "round": attempt.round,
                "model": (asked.get("request") or {}).get("model"), "attempts": 1,
                "max_retries": attempt.max_retries, "retries": 0, "failures": [], **asked}
            bar = Bar(bar_id, "model", model_label(facts), attempt.round,
                      epoch_ms(event.timestamp), facts=facts)
            self._add(bar)
        else:
            bar.facts["attempts"] = attempt.attempt
            bar.label = model_label(bar.facts)

    def _model_failed(self, event: ModelCallAttemptFailed) -> None:
        failure = event.payload
        bar = self.bars.get(model_bar_id(failure.invocation_id, failure.round))
        if bar is None:
            return
        bar.facts["failures"].append({"attempt": failure.attempt, "message": failure.message,
                                      "retryable": failure.retryable,
                                      "willRetry": failure.will_retry})
        if not failure.will_retry:
            bar.end(epoch_ms(event.timestamp), "error")
            bar.error_code = failure.message.split(":", 1)[0] if ":" in failure.message \
                else None
            bar.message = failure.message

    def _model_retry(self, event: ModelCallRetryScheduled) -> None:
        retry = event.payload
        bar = self.bars.get(model_bar_id(retry.invocation_id, retry.round))
        if bar is not None:
            bar.facts["retries"] += 1
            bar.facts["interval_ms"] = retry.interval_ms

    def _model_completed(self, event: ModelCompleted) -> None:
        turn = event.payload
        bar = self.bars.get(model_bar_id(turn.invocation_id, turn.round))
        if bar is None:
            return
        bar.facts.update(attempts=turn.attempts, usage=dict(turn.usage),
                         tool_call_count=turn.tool_call_count, text_chars=turn.text_chars,
                         reasoning_chars=turn.reasoning_chars,
                         response_path=turn.model_response_path)
        bar.result_path = turn.model_response_path
        bar.label = model_label(bar.facts)
        bar.end(epoch_ms(event.timestamp), "ok", turn.elapsed_ms)

    def usage(self, round_number: int | None = None) -> dict[str, int]:
        """The tokens of the model calls of one round (``None``: of the whole run), summed
        in the records' names (``inputTokens``, ``outputTokens``, ``totalTokens`` …)."""
        total: dict[str, int] = {}
        for bar in self.bars.values():
            if bar.kind != "model" or (round_number is not None and bar.round != round_number):
                continue
            for key, value in (bar.facts.get("usage") or {}).items():
                if isinstance(value, int):
                    total[key] = total.get(key, 0) + value
        return total

    def _host_commit_ended(self, event: Event) -> None:
        """The agent loop's commit handshake ended (``chat_commit_completed`` or
        ``chat_commit_failed``): the commit bar ends with it."""
        if self._commit is None:
            return
        payload: Any = getattr(event, "payload", None)
        if event.type == "chat_commit_completed":
            self._commit.end(epoch_ms(event.timestamp), "ok")
            self._commit.facts.update(message_index=payload.message_index, swipe_id=None)
        else:
            self._commit.end(epoch_ms(event.timestamp), "error")
            self._commit.message = payload.message
        self._commit = None

    def _round_ended(self, record: RoundEnded) -> None:
        number = record.payload.round
        ended = self.rounds.setdefault(number, Round(number))
        ended.ended_ms, ended.auto_committed = epoch_ms(record.timestamp), \
            record.payload.auto_committed
        self.open_round = number + 1

    def _file_changed(self, record: FileChanged) -> None:
        change = record.payload
        bar = self.bars.get(change.call_id or "")
        if bar is not None:
            bar.files.append(change.model_dump(mode="json", by_alias=True, exclude_none=True))

    def _run_ended(self, event: Event) -> None:
        status: Status = "cancelled" if event.type == "run_cancelled" else "error"
        at = epoch_ms(event.timestamp)
        for bar in self.bars.values():
            if bar.status == "running" and bar.kind != "finish":
                bar.end(at, status)

    # -- reading ------------------------------------------------------------------------------

    def rows(self, kinds: Iterable[str] = KINDS, statuses: Iterable[str] = STATUSES,
             collapsed: Iterable[int] = ()) -> list[Bar | Round]:
        """Round headers and bars in display order after the filters (cached until the next
        record or a filter change). A round with no bar left is not shown."""
        filters = (frozenset(kinds), frozenset(statuses), frozenset(collapsed))
        if self._rows is not None and filters == self._filters:
            return self._rows
        kind_set, status_set, folded = filters
        rows: list[Bar | Round] = []
        self._spans = {number: group.span for number, group in self.rounds.items()}
        for number in sorted(self.rounds):
            shown = [bar for bar in self.rounds[number].bars
                     if bar.kind in kind_set and bar.status in status_set]
            if shown:
                rows.append(self.rounds[number])
                if number not in folded:
                    rows.extend(shown)
        self._rows, self._filters = rows, filters
        return rows

    def window(self, offset: int, count: int, *, tail: bool = False,
               kinds: Iterable[str] = KINDS, statuses: Iterable[str] = STATUSES,
               collapsed: Iterable[int] = ()) -> dict[str, Any]:
        """The rows ``offset .. offset + count`` (the last ``count`` with ``tail``), with the
        total and the counts per kind and status."""
        rows = self.rows(kinds, statuses, collapsed)
        start = max(0, len(rows) - count) if tail else max(0, min(offset, len(rows)))
        folded = set(collapsed)
        return {"total": len(rows), "offset": start, "tail": tail,
                "rows": [self._row(row, folded) for row in rows[start:start + count]],
                "counts": self.counts()}

    def _row(self, row: Bar | Round, folded: set[int]) -> dict[str, Any]:
        if isinstance(row, Bar):
            return row.row(self._spans[row.round])
        span = self._spans[row.number]
        statuses = {status: sum(1 for bar in row.bars if bar.status == status)
                    for status in STATUSES}
        return {"type": "round", "round": row.number, "bars": len(row.bars),
                "statuses": statuses, "span": list(span), "ended": row.ended_ms is not None,
                "collapsed": row.number in folded, "auto_committed": row.auto_committed,
                "usage": self.usage(row.number)}

    def counts(self) -> dict[str, dict[str, int]]:
        """How many bars of each kind and each status the run has (before filtering)."""
        if self._counts is None:
            kinds: dict[str, int] = dict.fromkeys(KINDS, 0)
            statuses: dict[str, int] = dict.fromkeys(STATUSES, 0)
            for bar in self.bars.values():
                kinds[bar.kind] += 1
                statuses[bar.status] += 1
            self._counts = {"kinds": kinds, "statuses": statuses}
        return self._counts


_HANDLERS: dict[str, Handler] = {
    "tool_call_requested": TimelineState._requested,
    "tool_call_started": TimelineState._requested,
    "tool_result_stored": TimelineState._stored,
    "tool_call_completed": TimelineState._ended,
    "tool_call_failed": TimelineState._ended,
    "js_job_started": TimelineState._job_started,
    "js_job_finished": TimelineState._job_finished,
    "chat_commit_requested": TimelineState._commit_requested,
    "run_committed": TimelineState._committed,
    "round_ended": TimelineState._round_ended,
    "file_changed": TimelineState._file_changed,
    "run_cancelled": TimelineState._run_ended,
    "run_failed": TimelineState._run_ended,
    "model_request_created": TimelineState._model_requested,
    "model_call_attempt_started": TimelineState._model_attempt,
    "model_call_attempt_failed": TimelineState._model_failed,
    "model_call_retry_scheduled": TimelineState._model_retry,
    "model_completed": TimelineState._model_completed,
    "chat_commit_completed": TimelineState._host_commit_ended,
    "chat_commit_failed": TimelineState._host_commit_ended,
}
