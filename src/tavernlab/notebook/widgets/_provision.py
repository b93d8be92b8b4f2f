"""``ProvisionProgress``: a worktree provision, live, with a Cancel button.

The widget is the notebook's version of the command line's progress lines: it is the
``on_progress`` observer of a :class:`~tavernlab.worktree.ProvisionContext` (the same
seam the CLI's text progress uses) and its ``on_output`` observer for the lines the ``deps``
command and the setup hooks print. It shows the queue position while waiting, each phase
with its time as it starts and ends, the last lines of hook output, and the outcome. Cancel
cancels the provision through the context's signal: the running hook's process group is
killed and the half-made worktree and its branch are removed, as for an interrupt.

Phases: upstream reports only the heavy ones (``clone``, ``deps``, ``copy``, ``setup``) and
the queue. The cheap steps before them (``git worktree add``, the creation marker, the
configuration, ``linkPaths``, ``writeFiles``) are shown as one "prepare" phase, timed from
:meth:`ProvisionProgress.context` to the first event (tavernlab choice).

The Cancel click is handled while the provision blocks the cell only where the frontend
sends widget messages on a kernel subshell (JupyterLab 4.6 with ipykernel 7; see
:mod:`~tavernlab.notebook.widgets._sync`); elsewhere interrupting the kernel cancels the same
way.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from html import escape
from typing import Any

import ipywidgets  # type: ignore[import-untyped]

from tavernlab.cancel import CancelToken
from tavernlab.clock import SYSTEM_CLOCK, Clock
from tavernlab.errors import TavernlabError
from tavernlab.notebook.widgets._snapshots import format_duration
from tavernlab.notebook.widgets._sync import StateSync, route_replies_to_frontend
from tavernlab.views import STATUS_COLOURS
from tavernlab.worktree import (
    OutputLine,
    ProgressEvent,
    ProvisionContext,
    WorktreeRuntime,
    call_tool,
    run_with_provision_context,
)

#: How often the running phase's time is refreshed.
TICK_S = 0.5
PREPARE = "prepare (worktree add, links, files)"


@dataclass(slots=True)
class PhaseTiming:
    """One phase as the widget shows it: times are the clock's monotonic seconds."""

    name: str
    started: float
    ended: float | None = None
    outcome: str = "running"

    def seconds(self, now: float) -> float:
        """How long the phase took (so far)."""
        return (self.ended if self.ended is not None else now) - self.started


class ProvisionProgress(ipywidgets.VBox):  # type: ignore[misc]
    """The live progress of provisioning the worktree ``slug``."""

    def __init__(self, slug: str, *, clock: Clock = SYSTEM_CLOCK, tail_lines: int = 12
                 ) -> None:
        self.slug = slug
        self.clock = clock
        self.signal = CancelToken()
        self.phases: list[PhaseTiming] = []
        self.position: int | None = None
        self.outcome: str | None = None
        self.error: str | None = None
        self.lines_seen = 0
        self.tail: deque[OutputLine] = deque(maxlen=tail_lines)
        self._lock = threading.Lock()
        self._header = ipywidgets.HTML()
        self._table = ipywidgets.HTML()
        self._log = ipywidgets.HTML()
        self.cancel_button = ipywidgets.Button(description="Cancel", icon="stop",
                                               button_style="danger",
                                               tooltip="Cancel: remove the worktree and branch")
        self.cancel_button.on_click(lambda _: self.cancel())
        top = ipywidgets.HBox([self._header, self.cancel_button],
                              layout=ipywidgets.Layout(justify_content="space-between",
                                                       align_items="center"))
        super().__init__([top, self._table, self._log],
                         layout=ipywidgets.Layout(border="1px solid #ddd", padding="6px 10px",
                                                  max_width="760px"))
        self.add_class("tl-provision")
        self._sync = StateSync(self, self._compute)
        self._render()
        route_replies_to_frontend(self)

    # -- the seam the provision reports through -----------------------------------------------

    def context(self, caller_key: str | None = "notebook") -> ProvisionContext:
        """The provisioning context to run the provision in; its time starts now."""
        with self._lock:
            self.phases = [PhaseTiming(PREPARE, self.clock.monotonic())]
        self._sync.touch("view")
        return ProvisionContext(caller_key=caller_key, signal=self.signal, on_progress=self,
                                on_output=self.on_output)

    def provision(self, tool_input: dict[str, Any], runtime: WorktreeRuntime | None = None, *,
                  caller_key: str | None = "notebook") -> Any:
        """Run ``worktree.provision`` with this widget as its progress; returns ``{cwd,
        branch}``. An error before progress started (a bad base, an invalid config) is shown
        as failed and re-raised; a cancelled provision raises ``ProvisionCancelledError``."""
        context = self.context(caller_key)
        try:
            return run_with_provision_context(
                context, lambda: call_tool("worktree.provision", tool_input, runtime))
        except TavernlabError as exc:
            self._failed(f"{exc.code}: {exc.message}")
            raise

    def __call__(self, event: ProgressEvent) -> None:
        """``on_progress``: one upstream progress event (from the provisioning thread)."""
        now = self.clock.monotonic()
        with self._lock:
            if not self.phases:
                self.phases.append(PhaseTiming(PREPARE, now))
            if event["kind"] == "queued":
                self.position = event["position"]
                if self.phases[-1].name != "queue":
                    self._close_phase(now, "ok")
                    self.phases.append(PhaseTiming("queue", now))
            elif event["kind"] == "started":
                self.position = None
                self._close_phase(now, "ok")
            elif event["kind"] == "phase":
                self._close_phase(now, "ok")
                self.phases.append(PhaseTiming(event["phase"], now))
            else:
                self.outcome = event["outcome"]
                self._close_phase(now, event["outcome"])
        self._sync.touch("view")

    def on_output(self, line: OutputLine) -> None:
        """``on_output``: one line a hook printed (from a reader thread)."""
        with self._lock:
            self.tail.append(line)
            self.lines_seen += 1
        self._sync.touch("view")

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until the view shows the latest state (``False`` after ``timeout``); while
        the provision runs, the view refreshes every :data:`TICK_S`, so wait after it ends."""
        return self._sync.settle(timeout)

    def cancel(self) -> None:
        """Cancel the provision (what the Cancel button does; safe from any thread)."""
        self.signal.cancel("cancelled")
        self._sync.touch("view")

    def failed(self, message: str) -> None:
        """Show the provision as failed with ``message`` (an error before or after its
        progress started)."""
        self._failed(message)

    def _failed(self, message: str) -> None:
        with self._lock:
            if self.outcome is None:
                self.outcome, self.error = "failed", message
                self._close_phase(self.clock.monotonic(), "failed")
        self._sync.touch("view")

    def _close_phase(self, now: float, outcome: str) -> None:
        """End the open phase, if one is open."""
        if self.phases and self.phases[-1].ended is None:
            self.phases[-1].ended, self.phases[-1].outcome = now, outcome

    # -- drawing (on the pump thread) -----------------------------------------------------------

    def _compute(self, names: frozenset[str]) -> dict[str, Any]:
        self._render()
        if self.outcome is None:
            self._sync.touch("view", delay=TICK_S)
        return {}

    def _render(self) -> None:
        with self._lock:
            header, table, log = self._html()
            done = self.outcome is not None or self.signal.cancelled
        self._header.value, self._table.value, self._log.value = header, table, log
        if done and not self.cancel_button.disabled:
            self.cancel_button.disabled = True
        route_replies_to_frontend(self)

    def _state_line(self, now: float) -> tuple[str, str]:
        total = 0.0
        if self.phases:
            last = self.phases[-1].ended
            total = (last if last is not None else now) - self.phases[0].started
        took = format_duration(int(total * 1000))
        if self.outcome == "ok":
            return f"ready in {took}", STATUS_COLOURS["ok"]
        if self.outcome == "cancelled":
            return f"cancelled after {took}: worktree and branch removed", \
                STATUS_COLOURS["cancelled"]
        if self.outcome == "failed":
            return f"failed after {took}", STATUS_COLOURS["error"]
        if self.signal.cancelled:
            return "cancelling…", STATUS_COLOURS["cancelled"]
        if self.position is not None:
            return f"queued at position {self.position}", STATUS_COLOURS["running"]
        return (f"running {took}" if self.phases else "waiting to start"), \
            STATUS_COLOURS["running"]

    def _html(self) -> tuple[str, str, str]:
        now = self.clock.monotonic()
        state, colour = self._state_line(now)
        header = (f'<b>Worktree <code>{escape(self.slug)}</code></b> '
                  f'<span style="color:{colour};margin-left:8px">{escape(state)}</span>')
        rows = "".join(self._phase_row(phase, now) for phase in self.phases)
        if self.error:
            rows += (f'<tr><td colspan="3" style="color:{STATUS_COLOURS["error"]}">'
                     f'{escape(self.error)}</td></tr>')
        table = (f'<table class="tl-phases" style="border-collapse:collapse;line-height:1.5">'
                 f'{rows}</table>')
        return header, table, self._log_html()

    def _phase_row(self, phase: PhaseTiming, now: float) -> str:
        marks = {"ok": "✓", "failed": "✗", "cancelled": "⊘", "running": "●"}
        colour = STATUS_COLOURS.get({"failed": "error"}.get(phase.outcome, phase.outcome),
                                    STATUS_COLOURS["running"])
        name = phase.name
        if phase.name == "queue" and phase.ended is None and self.position is not None:
            name = f"queued at position {self.position}"
        seconds = format_duration(int(phase.seconds(now) * 1000))
        return (f'<tr data-phase="{escape(phase.name)}" data-outcome="{phase.outcome}">'
                f'<td style="color:{colour};padding:1px 6px">{marks.get(phase.outcome, "●")}</td>'
                f'<td style="padding:1px 12px 1px 0">{escape(name)}</td>'
                f'<td style="text-align:right;color:#666;font-variant-numeric:tabular-nums">'
                f'{escape(seconds)}</td></tr>')

    def _log_html(self) -> str:
        if not self.tail:
            return ""
        lines = "\n".join(
            (f'<span style="color:{STATUS_COLOURS["error"]}">{escape(line["line"])}</span>'
             if line["stream"] == "stderr" else escape(line["line"])) for line in self.tail)
        return (f'<div style="color:#666;font-size:11px">last {len(self.tail)} of '
                f'{self.lines_seen} output lines</div><pre class="tl-hook-output" '
                f'style="margin:2px 0;padding:4px 6px;background:#f6f6f6;max-height:14em;'
                f'overflow:auto;font-size:12px">{lines}</pre>')

    # -- closing and the static snapshot --------------------------------------------------------

    def close(self) -> None:
        """Stop updating; close the widget and its parts."""
        self._sync.close()
        for child in (self._header, self._table, self._log, self.cancel_button,
                      *self.children):
            child.close()
        super().close()

    def snapshot_text(self) -> str:
        """The progress as plain text: the state, one line per phase, the output tail."""
        with self._lock:
            now = self.clock.monotonic()
            state, _ = self._state_line(now)
            lines = [f"Worktree {self.slug}: {state}"]
            lines += [f"  {phase.outcome:<9} {phase.name:<40} "
                      f"{format_duration(int(phase.seconds(now) * 1000))}"
                      for phase in self.phases]
            lines += [f"  | {line['line']}" for line in self.tail]
        return "\n".join(lines)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        with self._lock:
            header, table, log = self._html()
        return {**data, "text/plain": self.snapshot_text(),
                "text/html": f"<div>{header}{table}{log}</div>"}, metadata


def progress_for(slug: str, *, clock: Clock = SYSTEM_CLOCK, tail_lines: int = 12
                 ) -> ProvisionProgress:
    """The progress widget for provisioning ``slug`` (what ``%worktree new`` displays)."""
    return ProvisionProgress(slug, clock=clock, tail_lines=tail_lines)
