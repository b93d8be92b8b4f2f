"""What a replay found: :class:`ReplayReport`, its :class:`Divergence` list and the skill
versions both sides ran.

A divergence says *where* (``index``: the action, ``-1`` for the start of the run,
``actions`` for the state after the last action), *what kind* of outcome differed
(``kind``: ``result``, ``error_code``, ``exit_code``, ``stdout``, ``stderr``, ``event``,
``file``, ``persist_state``, ``chat``, ``setup``, ``error``), *which* one (``subject``: a
path, a record), the recorded and replayed values in short, and a unified diff where the
outcome is text. Divergences are ordered by action, so ``report.first`` is where behaviour
changed first. The text form is ``str(report)``; the notebook form is ``_repr_html_`` (the
pure renderer :func:`tavernlab.replay.render.report_html`); ``to_json()`` is what
``tavernlab replay --json`` prints.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from tavernlab.replay.render import report_html

DivergenceKind = Literal["result", "error_code", "exit_code", "stdout", "stderr", "event",
                         "file", "persist_state", "chat", "setup", "error"]


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

    def summary(self) -> str:
        """One line: ``action 3 (workspace.shell call_3): exit_code of result: 0 -> 1``."""
        where = f"action {self.index}" if self.index >= 0 else "run start"
        values = ""
        if self.expected is not None or self.actual is not None:
            values = f": recorded {self.expected}, replayed {self.actual}"
        return f"{where} ({self.action}): {self.kind} {self.subject}{values}"

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


@dataclass
class ReplayReport:
    """The outcome of replaying one bundle."""

    bundle: str
    run_id: str
    actions: int
    divergences: list[Divergence] = field(default_factory=list)
    skills: list[SkillVersions] = field(default_factory=list)
    lab: str | None = None
    elapsed_s: float = 0.0

    @property
    def identical(self) -> bool:
        """Whether every outcome, byte for byte, matched the recording."""
        return not self.divergences

    @property
    def first(self) -> Divergence | None:
        """The earliest divergence (by action), or ``None`` when identical."""
        return self.divergences[0] if self.divergences else None

    def headline(self) -> str:
        """``identical: 12 actions of run_…`` or ``diverged: 3 divergences, first at …``."""
        if self.identical:
            return f"identical: {self.actions} actions of {self.run_id} replayed byte for byte"
        first = self.divergences[0]
        return (f"diverged: {len(self.divergences)} divergence"
                f"{'s' if len(self.divergences) != 1 else ''} in {self.run_id}, first: "
                f"{first.summary()}")

    def __str__(self) -> str:
        lines = [self.headline()]
        lines += [f"skill {s.name}: {s.recorded_hash[:12]} -> {s.replayed_hash[:12]}"
                  f" ({s.source})" for s in self.skills if s.changed]
        if self.first is not None and self.first.diff:
            lines.append(self.first.diff.rstrip("\n"))
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
                "divergences": [d.to_json() for d in self.divergences]}
