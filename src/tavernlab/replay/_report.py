"""What a replay found: :class:`ReplayReport`, its :class:`Divergence` list and the skill
versions both sides ran.

A divergence says *where* (``index``: the action, ``-1`` for the start of the run,
``actions`` for the state after the last action), *what kind* of outcome differed
(``kind``: ``result``, ``error_code``, ``exit_code``, ``stdout``, ``stderr``, ``event``,
``file``, ``persist_state``, ``chat``, ``setup``, ``error``, ``model_request``), *which* one
(``subject``: a path, a record, a request's message), the recorded and replayed values in
short, and a unified diff where the outcome is text. Divergences are ordered by action, so
``report.first`` is where behaviour changed first; for a model-driven run whose model request
differed it is that request (``model_divergence``, with its invocation, round and the tool
call whose result differed), the point where the model would have seen something else. A
model-driven run's report also lists its ``model_turns`` and, after a live continuation, the
``live`` run. The text form is ``str(report)``; the notebook form is ``_repr_html_``
(:func:`report_html`: pure functions, no notebook import, so a report shows itself in any
notebook front end: the status first, then the skills of both sides with a changed hash
marked, then one row per divergence with the recording and the replay side by side,
:func:`side_by_side`, in a ``<details>`` that folds long content; nothing is cut);
``to_json()`` is what ``tavernlab replay --json`` prints.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from html import escape
from typing import Any, Literal

from tavernlab.errors import one_line

DivergenceKind = Literal["result", "error_code", "exit_code", "stdout", "stderr", "event",
                         "file", "persist_state", "chat", "setup", "error", "model_request"]


@dataclass(frozen=True)
class Divergence:
    """One outcome that differs between the recording and the replay."""

    index: int
    action: str
    kind: DivergenceKind
    subject: str
    expected: str | None = None
    actual: str | None = None
    diff: str | None = None
    #: A model request's divergence: the invocation and round of the model call, and the
    #: tool call whose result differed (``None`` when another part of the request did).
    invocation: str | None = None
    round: int | None = None
    call: str | None = None

    def summary(self) -> str:
        """One line: ``action 3 (workspace.shell call_3): exit_code of result: 0 -> 1``; a
        model request's: ``round 2 model request (inv_root, call c2): model_request message
        4 (tool result of c2)``."""
        if self.kind == "model_request":
            call = f", call {self.call}" if self.call else ""
            return (f"round {self.round} model request ({self.invocation}{call}): "
                    f"{self.kind} {self.subject}")
        where = f"action {self.index}" if self.index >= 0 else "run start"
        values = ""
        if self.expected is not None or self.actual is not None:
            values = f": recorded {self.expected}, replayed {self.actual}"
        return one_line(f"{where} ({self.action}): {self.kind} {self.subject}{values}")

    def to_json(self) -> dict[str, Any]:
        """The divergence as a JSON object."""
        return asdict(self)


@dataclass(frozen=True)
class SkillVersions:
    """A bound skill on both sides: the hash the recording ran and the hash the replay ran
    (``source`` says where the replayed package came from: the bundle or a given path)."""

    name: str
    recorded_hash: str
    replayed_hash: str
    source: str = "bundle"

    @property
    def changed(self) -> bool:
        """Whether the replay ran another version of the skill."""
        return self.recorded_hash != self.replayed_hash


@dataclass(frozen=True)
class RecordedModelCall:
    """One model call of a model-driven run, as recorded and as replayed: its invocation and
    round, the recorded response's id, model and tokens, and whether the replay served it
    (``False`` after a divergence, or where the replayed run ended sooner)."""

    invocation: str
    round: int
    response_id: str | None
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    served: bool

    def summary(self) -> str:
        """``round 1 (inv_root): resp_1 (test-model), 10 in + 5 out tokens, served``."""
        tokens = f"{self.input_tokens if self.input_tokens is not None else '?'} in + " \
                 f"{self.output_tokens if self.output_tokens is not None else '?'} out tokens"
        return (f"round {self.round} ({self.invocation}): {self.response_id or 'no id'}"
                f" ({self.model or 'unknown model'}), {tokens}, "
                f"{'served' if self.served else 'not served'}")

    def to_json(self) -> dict[str, Any]:
        """The turn as a JSON object (camelCase)."""
        return {"invocationId": self.invocation, "round": self.round,
                "responseId": self.response_id, "model": self.model,
                "inputTokens": self.input_tokens, "outputTokens": self.output_tokens,
                "served": self.served}


@dataclass(frozen=True)
class LiveContinuation:
    """The new run a live model continued from a divergence: its id, terminal status,
    failure code (``None`` unless it failed), rounds, and the round the live model answered
    first."""

    run_id: str
    status: str
    failure: str | None
    rounds: int
    from_round: int
    invocation: str

    def summary(self) -> str:
        """``live run run_…: completed after 3 rounds (live from round 2 of inv_root)``."""
        failure = f" ({self.failure})" if self.failure else ""
        return (f"live run {self.run_id}: {self.status}{failure} after {self.rounds} rounds "
                f"(live from round {self.from_round} of {self.invocation})")

    def to_json(self) -> dict[str, Any]:
        """The continuation as a JSON object (camelCase)."""
        return {"runId": self.run_id, "status": self.status, "failure": self.failure,
                "rounds": self.rounds, "fromRound": self.from_round,
                "invocationId": self.invocation}


@dataclass
class ReplayReport:
    """The outcome of replaying one bundle.

    A model-driven run adds its ``model_turns`` (one per recorded model call) and, when a
    model request differed from the recorded one, ``model_divergence`` (which is then
    :attr:`first`: the point where the model would have seen something else), and ``live``
    when a live model continued from there as a new run.
    """

    bundle: str
    run_id: str
    actions: int
    divergences: list[Divergence] = field(default_factory=list)
    skills: list[SkillVersions] = field(default_factory=list)
    lab: str | None = None
    elapsed_s: float = 0.0
    model_turns: list[RecordedModelCall] = field(default_factory=list)
    model_divergence: Divergence | None = None
    live: LiveContinuation | None = None

    @property
    def identical(self) -> bool:
        """Whether every outcome, byte for byte, matched the recording."""
        return not self.divergences

    @property
    def first(self) -> Divergence | None:
        """The model request that diverged, else the earliest divergence (by action), or
        ``None`` when identical."""
        if self.model_divergence is not None:
            return self.model_divergence
        return self.divergences[0] if self.divergences else None

    def headline(self) -> str:
        """``identical: 12 actions of run_…`` or ``diverged: 3 divergences, first at …``."""
        return f"{self.status}: {self.detail()}"

    @property
    def status(self) -> str:
        """``identical`` or ``diverged``."""
        return "identical" if self.identical else "diverged"

    def detail(self) -> str:
        """The headline after its status."""
        if self.identical:
            return f"{self.actions} actions of {self.run_id} replayed byte for byte"
        first = self.first
        assert first is not None
        return (f"{len(self.divergences)} divergence"
                f"{'s' if len(self.divergences) != 1 else ''} in {self.run_id}, first: "
                f"{first.summary()}")

    def __str__(self) -> str:
        lines = [self.headline()]
        lines += [f"skill {s.name}: {s.recorded_hash[:12]} -> {s.replayed_hash[:12]}"
                  f" ({s.source})" for s in self.skills if s.changed]
        if self.first is not None and self.first.diff:
            lines.append(self.first.diff.rstrip("\n"))
        if self.model_turns:
            lines.append("model turns:")
            lines += [f"  {turn.summary()}" for turn in self.model_turns]
        if self.live is not None:
            lines.append(self.live.summary())
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's plain text: the same lines as :meth:`__str__` (not the dataclass dump)."""
        printer.text(str(self))

    def _repr_html_(self) -> str:
        return report_html(self)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON (what ``tavernlab replay --json`` prints)."""
        return {"bundle": self.bundle, "runId": self.run_id, "identical": self.identical,
                "actions": self.actions, "elapsedSeconds": round(self.elapsed_s, 3),
                "lab": self.lab,
                "skills": [{"name": s.name, "recordedHash": s.recorded_hash,
                            "replayedHash": s.replayed_hash, "source": s.source}
                           for s in self.skills],
                "divergences": [d.to_json() for d in self.divergences],
                "modelTurns": [t.to_json() for t in self.model_turns],
                "modelDivergence": (None if self.model_divergence is None
                                    else self.model_divergence.to_json()),
                "live": None if self.live is None else self.live.to_json()}


_STYLE = ("<style>.tl-replay table{border-collapse:collapse}"
          ".tl-replay td,.tl-replay th{border:1px solid #ddd;padding:2px 6px;"
          "vertical-align:top;text-align:left}"
          ".tl-replay .del{background:#fdd}.tl-replay .add{background:#dfd}"
          ".tl-replay pre{margin:0;white-space:pre-wrap}</style>")


def side_by_side(diff: str) -> str:
    """A two-column table (recorded | replayed) from a unified diff: removed lines on the
    left, added lines on the right, context on both."""
    rows: list[tuple[str, str, str, str]] = []
    left: list[str] = []
    right: list[str] = []

    def flush() -> None:
        for index in range(max(len(left), len(right))):
            a = left[index] if index < len(left) else ""
            b = right[index] if index < len(right) else ""
            rows.append((a, "del" if index < len(left) else "",
                         b, "add" if index < len(right) else ""))
        left.clear()
        right.clear()

    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            flush()
            rows.append((line, "", line, ""))
        elif line.startswith("-"):
            left.append(line[1:])
        elif line.startswith("+"):
            right.append(line[1:])
        else:
            flush()
            rows.append((line[1:], "", line[1:], ""))
    flush()
    body = "".join(f'<tr><td class="{ca}"><pre>{escape(a)}</pre></td>'
                   f'<td class="{cb}"><pre>{escape(b)}</pre></td></tr>'
                   for a, ca, b, cb in rows)
    return f"<table><tr><th>recorded</th><th>replayed</th></tr>{body}</table>"


def divergence_html(divergence: Divergence) -> str:
    """The table rows of a divergence: its cells, then its diff folded in a row below, side
    by side."""
    d = divergence
    cells = [str(d.index), d.action, d.kind, d.subject, d.expected or "", d.actual or ""]
    row = "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>"
    if d.diff:
        row += (f'<tr><td colspan="6"><details><summary>diff</summary>'
                f"{side_by_side(d.diff)}</details></td></tr>")
    return row


def model_turns_html(report: ReplayReport) -> str:
    """The model calls of a model-driven run: one row per round (invocation, response id,
    model, tokens, served or not), the diverged round marked, with its request's diff folded
    below it."""
    diverged = report.model_divergence
    rows = []
    for turn in report.model_turns:
        here = (diverged is not None and diverged.invocation == turn.invocation
                and diverged.round == turn.round)
        cells = [str(turn.round), turn.invocation, turn.response_id or "", turn.model or "",
                 "" if turn.input_tokens is None else str(turn.input_tokens),
                 "" if turn.output_tokens is None else str(turn.output_tokens),
                 "served" if turn.served else "not served",
                 f"diverged: {diverged.subject}" if here and diverged else ""]
        css = ' class="del"' if here else ""
        rows.append(f"<tr{css}>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
        if here and diverged is not None and diverged.diff:
            rows.append(f'<tr><td colspan="8"><details open><summary>request diff</summary>'
                        f"{side_by_side(diverged.diff)}</details></td></tr>")
    if diverged is not None and not any(
            t.invocation == diverged.invocation and t.round == diverged.round
            for t in report.model_turns):
        rows.append(f'<tr class="del"><td>{diverged.round}</td>'
                    f"<td>{escape(diverged.invocation or '')}</td>"
                    f'<td colspan="6">diverged: {escape(diverged.subject)}</td></tr>')
    return ("<table><tr><th>round</th><th>invocation</th><th>response</th><th>model</th>"
            "<th>input tokens</th><th>output tokens</th><th>replay</th><th>divergence</th>"
            f"</tr>{''.join(rows)}</table>")


def report_html(report: ReplayReport) -> str:
    """The whole report as HTML."""
    parts = [_STYLE, '<div class="tl-replay">',
             f"<p><b>{report.status}</b>: {escape(report.detail())}</p>"]
    if report.skills:
        skills = "".join(
            f"<tr><td>{escape(s.name)}</td><td><code>{escape(s.recorded_hash)}</code></td>"
            f"<td><code>{escape(s.replayed_hash)}</code></td><td>{escape(s.source)}</td>"
            f"<td>{'changed' if s.changed else 'same'}</td></tr>" for s in report.skills)
        parts.append("<table><tr><th>skill</th><th>recorded hash</th><th>replayed hash</th>"
                     f"<th>replayed from</th><th></th></tr>{skills}</table>")
    if report.model_turns:
        parts.append(model_turns_html(report))
    if report.live is not None:
        parts.append(f"<p>{escape(report.live.summary())}</p>")
    if report.divergences:
        rows = "".join(divergence_html(d) for d in report.divergences)
        parts.append("<table><tr><th>action</th><th>label</th><th>kind</th><th>subject</th>"
                     f"<th>recorded</th><th>replayed</th></tr>{rows}</table>")
    parts.append("</div>")
    return "".join(parts)
