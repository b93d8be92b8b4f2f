"""Benchmark: the event path (not a test).

Prints medians measured in one run:

1. the cost of one emit (validated typed event, appended under the log's flock, handed to
   the subscribers) with 0, 1 and 10 subscribers, next to a raw ``os.write`` of a line of
   the same size under ``flock`` (the floor any durable append pays);
2. ``run.events(after_seq=...)`` for the last 10 records of a run with 10,000 records,
   against re-reading the whole file (``run.events()``) and against a plain
   ``json.loads`` of every line: the incremental read must cost O(new records), so its
   ratio to the full read must be tiny and must not grow with the run.
3. The table's rows, on a run of about 71,000 records (events and journal): ``run.events()``
   (every record, typed) against ``json.loads`` of every line of the same files (target:
   <= 1.2x), and ``lab.open_run(id)`` (target: <= 20 ms absolute, the same ``json.loads``
   given for reference).

Also printed: ``run.events(types=...)`` for a type the 10,000-record run does not have (its
lines are ruled out on their bytes, not parsed).

Usage: ``.venv/bin/python bench/events.py [--records N] [--repeats N] [--big N] [--quick]
[--json]`` (``--json``/``--quick``: the performance table's rows only).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from timing import Row, absolute_row, append_locked, compare_once, emit, row, table_options

from tavernlab.events import ContextAssembled, ContextSummary, Event
from tavernlab.host import Lab, Run


def median_us(call: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``call`` in microseconds."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1e6)
    return statistics.median(times)


def emit_cost(root: Path, subscribers: int, count: int) -> float:
    """Median microseconds of one emit with ``subscribers`` no-op subscribers."""
    run = Lab(root / f"lab-{subscribers}").start_run(chat_id="bench")
    seen: list[Event] = []
    for _ in range(subscribers):
        run.subscribe(seen.append)
    payload = ContextSummary(has_host_context=False)
    return median_us(lambda: run._core.emit(ContextAssembled, payload), count)


def raw_append_cost(root: Path, count: int) -> float:
    """Median microseconds of appending one event-sized line under ``flock``."""
    path = root / "raw.jsonl"
    line = (json.dumps({"seq": 1, "id": "evt_" + "0" * 32, "runId": "run_" + "0" * 32,
                        "timestamp": "2026-12-01T00:00:00.000000Z", "level": "info",
                        "type": "context_assembled", "payload": {"hasHostContext": False}})
            + "\n").encode()

    return median_us(lambda: append_locked(path, line), count)


def reading(root: Path, records: int, repeats: int
            ) -> tuple[float, float, float, float, int]:
    """``(incremental ms, full ms, json.loads ms, filtered ms, total records)`` on a run of
    ``records`` (filtered: ``types=`` one type no line of the run has)."""
    run = Lab(root / "lab-read").start_run(chat_id="bench")
    payload = ContextSummary(has_host_context=False)
    for _ in range(records - len(run.events(journal=False))):
        run._core.emit(ContextAssembled, payload)
    for index in range(5):  # a few journal records too
        run.js(["-e", f"console.log({index})"])
    total = len(run.events())
    after = run.events(journal=False)[-10].seq
    path = run.dir / "events.jsonl"

    def plain() -> None:
        with open(path, encoding="utf-8") as handle:
            [json.loads(line) for line in handle]

    incremental = median_us(lambda: run.events(after_seq=after), repeats) / 1000
    full = median_us(lambda: run.events(), max(3, repeats // 10)) / 1000
    raw = median_us(plain, max(3, repeats // 10)) / 1000
    filtered = median_us(lambda: run.events(types="run_failed"), max(3, repeats // 10)) / 1000
    return incremental, full, raw, filtered, total


def fill(run: Run, records: int) -> None:
    """Grow ``run`` to about ``records`` records, a few of them journal records."""
    payload = ContextSummary(has_host_context=False)
    for index in range(5):
        run.js(["-e", f"console.log({index})"])
    for _ in range(records - len(run.events())):
        run._core.emit(ContextAssembled, payload)


def big_run_rows(root: Path, records: int, rounds: int) -> list[Row]:
    """``run.events()`` and ``lab.open_run`` on a run of about ``records`` records."""
    lab = Lab(root / "lab-big")
    run = lab.start_run(chat_id="bench")
    fill(run, records)
    files = [run.dir / "events.jsonl", run.dir / "journal.jsonl"]
    total = len(run.events())

    def plain() -> None:
        for path in files:
            with open(path, encoding="utf-8") as handle:
                [json.loads(line) for line in handle]

    reading = compare_once(run.events, plain, rounds=rounds)
    opening = compare_once(lambda: lab.open_run(run.id), plain, rounds=rounds)
    lab.close()
    return [row(f"run.events(), {total:,} records", reading, "json.loads", 1.2, "<= 1.2x",
                "events.jsonl + journal.jsonl, every line"),
            absolute_row(f"lab.open_run, {total:,} records", opening.figure, "json.loads",
                         opening.baseline, 20.0, "checkpoint: no log is read")]


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--big", type=int, default=71_000, help="records of the big run")
    table_options(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tavernlab-bench-events-") as tmp:
        root = Path(tmp)
        big = big_run_rows(root, args.big, 3 if args.quick else 5)
        if args.json:
            emit(big, True)
            return
        raw = raw_append_cost(root, args.repeats)
        print(f"raw flock + os.write of one line: {raw:8.1f} us (baseline)")
        for subscribers in (0, 1, 10):
            cost = emit_cost(root, subscribers, args.repeats)
            print(f"emit, {subscribers:2d} subscriber(s):            {cost:8.1f} us  "
                  f"(x{cost / raw:.1f} the raw append)")
        incremental, full, plain, filtered, total = reading(root, args.records, args.repeats)
        print(f"\nrun of {total} records (events + journal):")
        print(f"  events(after_seq=<10 from the end>): {incremental:8.3f} ms")
        print(f"  events() (re-read everything):        {full:8.3f} ms  "
              f"(incremental is x{incremental / full:.4f} of it)")
        print(f"  events(types='run_failed') (none):    {filtered:8.3f} ms  "
              f"(lines are skipped on their bytes)")
        print(f"  plain json.loads of events.jsonl:     {plain:8.3f} ms (baseline)\n")
        emit(big, False)


if __name__ == "__main__":
    main()
