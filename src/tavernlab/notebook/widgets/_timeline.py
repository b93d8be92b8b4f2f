"""``Timeline(run)``: the run's rounds, and every call, job, commit and finish as a bar.

Each bar has its duration and a status colour (ok, error, cancelled, running); a running
bar grows in the browser until its end arrives. Selecting a bar shows its arguments, result
content, resource refs and the files it changed. The browser holds one screenful of rows:
it tells Python what it scrolled to (``viewport``) and receives those rows (``window``),
so a run with 10,000 records stays responsive. ``kinds`` and ``statuses`` filter the bars,
``collapsed`` folds rounds, ``selected`` is the selected bar's id (a call id, a job id or
``commit-<seq>``), readable and settable from Python.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import traitlets

from tavernlab.clock import SYSTEM_CLOCK, Clock, epoch_ms
from tavernlab.host import Run
from tavernlab.notebook.widgets._live import LiveWidget
from tavernlab.notebook.widgets._snapshots import plural, timeline_html, timeline_text
from tavernlab.notebook.widgets._timeline_detail import describe
from tavernlab.notebook.widgets._timeline_state import (
    KINDS,
    STATUSES,
    TIMELINE_TYPES,
    TimelineState,
)

STATIC = Path(__file__).with_name("static")

#: Rows sent per window (the browser asks for what it shows plus a margin).
WINDOW_ROWS = 80


def _choices(allowed: tuple[str, ...], what: str) -> Any:
    def check(widget: Timeline, proposal: dict[str, Any]) -> list[str]:
        values = [str(value) for value in proposal["value"]]
        unknown = sorted(set(values) - set(allowed))
        if unknown:
            raise traitlets.TraitError(f"unknown {what} {unknown}; choose from "
                                       f"{list(allowed)}")
        return values
    return check


class Timeline(LiveWidget):
    """A live timeline of ``run``. ``clock`` is what running bars are measured against in
    the browser (the kernel's wall clock; pass the lab's clock for a lab with a fixed one).
    """

    _esm = STATIC / "widgets.js"
    _css = STATIC / "widgets.css"
    _view = traitlets.Unicode("timeline", read_only=True).tag(sync=True)

    run_id = traitlets.Unicode(read_only=True).tag(sync=True)
    window = traitlets.Dict().tag(sync=True)
    viewport = traitlets.Dict({"offset": 0, "count": WINDOW_ROWS, "tail": True}).tag(sync=True)
    kinds = traitlets.List[str](traitlets.Unicode(), default_value=list(KINDS)).tag(sync=True)
    statuses = traitlets.List[str](traitlets.Unicode(),
                                   default_value=list(STATUSES)).tag(sync=True)
    collapsed = traitlets.List(traitlets.Int()).tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    detail = traitlets.Dict().tag(sync=True)

    def __init__(self, run: Run, *, selected: str = "", clock: Clock = SYSTEM_CLOCK) -> None:
        self._run = run
        self._clock = clock
        self._lock = threading.RLock()
        self._detail_key: tuple[Any, ...] | None = None
        self._state = TimelineState()
        self._listen(run, TIMELINE_TYPES, "window", "detail")
        self._state.apply_all(run.events(types=TIMELINE_TYPES))
        super().__init__(window=self._window())
        self.set_trait("run_id", run.id)
        self._start(self._compute, self._snapshots)
        if selected:
            self.selected = selected

    _check_kinds = traitlets.validate("kinds")(_choices(KINDS, "kinds"))
    _check_statuses = traitlets.validate("statuses")(_choices(STATUSES, "statuses"))

    @traitlets.validate("selected")
    def _check_selected(self, proposal: dict[str, Any]) -> str:
        bar_id = str(proposal["value"])
        with self._lock:
            if bar_id and bar_id not in self._state.bars:
                raise traitlets.TraitError(f"no bar `{bar_id}` in the timeline of run "
                                           f"{self._run.id}")
        return bar_id

    @traitlets.observe("viewport", "kinds", "statuses", "collapsed")
    def _view_changed(self, change: dict[str, Any]) -> None:
        self._sync_touch("window")

    @traitlets.observe("selected")
    def _selection_changed(self, change: dict[str, Any]) -> None:
        self._sync_touch("detail")

    # -- the pump thread ----------------------------------------------------------------------

    def _window(self) -> dict[str, Any]:
        view = self.viewport
        window = self._state.window(int(view.get("offset", 0)),
                                    int(view.get("count", WINDOW_ROWS)),
                                    tail=bool(view.get("tail", False)), kinds=self.kinds,
                                    statuses=self.statuses, collapsed=self.collapsed)
        return {**window, "now_ms": epoch_ms(self._clock.now())}

    def _compute(self, names: frozenset[str]) -> dict[str, Any]:
        with self._lock:
            self._state.apply_all(self._inbox.drain())
            out: dict[str, Any] = {}
            if "window" in names:
                out["window"] = self._window()
            if "detail" in names:
                bar = self._state.bars.get(self.selected)
                key = None if bar is None else (bar.id, bar.status, bar.end_ms,
                                                len(bar.files), bar.result_path)
                if key != self._detail_key:
                    self._detail_key = key
                    out["detail"] = {} if bar is None else describe(
                        bar, self._run.dir, self._run.workspace_dir)
            return out

    def _snapshots(self) -> tuple[str, str]:
        with self._lock:
            rows = list(self._state.rows())
            bars, rounds = len(self._state.bars), len(self._state.rounds)
            tokens = self._state.usage().get("totalTokens")
        title = f"Timeline of {self._run.id}: {plural(bars, 'bar')} in {plural(rounds, 'round')}"
        if tokens:
            title += f", {tokens} tokens"
        return timeline_text(title, rows), timeline_html(title, rows)
