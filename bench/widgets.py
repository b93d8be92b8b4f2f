"""Benchmark: the notebook widgets on a large run (not a test).

Builds a real run with at least 10,000 records (events and journal: tool calls in rounds,
shell calls, a few ``run.js`` jobs), then prints medians measured in the same process:

1. the raw baseline: ``run.events()``, reading and parsing every record (what any reader of
   the run pays, widget or not);
2. the timeline's own state from those parsed records (``TimelineState.apply_all`` and the
   first window of rows) — the target is well under a second for 10,000 records;
3. ``Timeline(run)`` as a notebook makes it (read, build, widget with its first window);
4. a filter change (the rows rebuilt and one window cut) and a scroll (one window cut);
5. ``FileTree(run)`` for the same run's workspace, next to ``run.tree()`` alone;
6. coalescing: while a thread makes 300 tool calls, how many ``window`` messages the
   timeline sends for the records they produce.

Usage: ``.venv/bin/python bench/widgets.py [--records N] [--repeats N]``.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tavernlab.host import Lab, Run
from tavernlab.notebook.widgets import TIMELINE_TYPES, FileTree, Timeline, TimelineState


def median_ms(call: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``call`` in milliseconds."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def big_run(lab: Lab, records: int) -> Run:
    """A run with at least ``records`` records: rounds of tool and shell calls, a few jobs."""
    run = lab.start_run(chat_id="bench", profile={
        "tools": {"maxRounds": None, "maxCallsPerRun": None}})
    call = 0
    while len(run.events()) < records:
        for _ in range(40):
            call += 1
            run.call_tool("workspace.write_file", {"path": f"scratch/r{run.round}/f{call}.md",
                                                   "content": f"call {call}\n"})
        run.shell(f"echo {call} > scratch/shell-{call}.txt")
        if run.round % 5 == 0:
            run.js(["-e", f"console.log({call})"])
        run.next_round()
    return run


def build_state(records: list[Any]) -> dict[str, Any]:
    state = TimelineState()
    state.apply_all(records)
    return state.window(0, 80, tail=True)


def closing(make: Callable[[], Any]) -> Callable[[], None]:
    def run_once() -> None:
        make().close()
    return run_once


def coalescing(run: Run, calls: int) -> tuple[int, int]:
    """``(records produced, window messages sent)`` while a thread makes ``calls`` calls."""
    timeline = Timeline(run)
    sent: list[int] = []
    timeline.observe(lambda change: sent.append(1), names=["window"])
    before = len(run.events())

    def work() -> None:
        for i in range(calls):
            run.call_tool("workspace.write_file", {"path": f"plan/c{i}.md", "content": "x"})

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    timeline.settle()
    produced = len(run.events()) - before
    timeline.close()
    return produced, len(sent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Lab(Path(tmp) / "lab") as lab:
        started = time.perf_counter()
        run = big_run(lab, args.records)
        records = run.events()
        timeline_records = run.events(types=TIMELINE_TYPES)
        state = TimelineState()
        state.apply_all(timeline_records)
        print(f"run: {len(records)} records ({len(timeline_records)} read by the timeline), "
              f"{len(state.bars)} bars in {len(state.rounds)} rounds, "
              f"{sum(1 for _ in run.tree().walk())} tree nodes; built in "
              f"{time.perf_counter() - started:.1f} s")
        raw = median_ms(run.events, args.repeats)
        own = median_ms(lambda: build_state(timeline_records), args.repeats)
        widget = median_ms(closing(lambda: Timeline(run)), args.repeats)
        filters = itertools.cycle([["tool"], ["tool", "shell"]])
        refilter = median_ms(lambda: state.window(0, 80, kinds=next(filters)), args.repeats)
        scroll = median_ms(lambda: state.window(5000, 80, kinds=["tool"]), args.repeats)
        tree_raw = median_ms(run.tree, args.repeats)
        tree = median_ms(closing(lambda: FileTree(run)), args.repeats)
        print(f"1. raw baseline run.events():           {raw:8.1f} ms")
        print(f"2. timeline state from parsed records:  {own:8.1f} ms  "
              f"({own / raw:.2f} x the raw read)")
        print(f"3. Timeline(run), all included:         {widget:8.1f} ms  "
              f"({widget / raw:.2f} x the raw read)")
        print(f"4. filter change / scroll (one window): {refilter:8.1f} ms / {scroll:.2f} ms")
        print(f"5. FileTree(run) / run.tree() alone:    {tree:8.1f} ms / {tree_raw:.1f} ms  "
              f"({tree / tree_raw:.2f} x)")
        produced, sent = coalescing(run, 300)
        print(f"6. coalescing: {produced} records -> {sent} window messages "
              f"({produced / max(sent, 1):.0f} records per message)")


if __name__ == "__main__":
    main()
