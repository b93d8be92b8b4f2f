"""Benchmark: record and replay (not a test).

Prints medians measured in one run:

1. for runs of 10, 100 and 1,000 tool calls (workspace tools, one shell call in ten): the
   time to play the calls directly in a fresh deterministic lab (the baseline), to export
   the run, and to replay the bundle (read and verify it, prepare a temporary lab, play
   every action, compare every outcome, remove the lab); the replay/direct ratio is the
   replay overhead (target: <= 1.2), in wall time and in this process's CPU time (steadier
   on a loaded machine), then where one replay's time goes;
2. ``replay_many`` over a corpus of small bundles on a process pool of 1 and of 2 workers
   (the pool is started and warmed before the clock starts); the 1-worker/2-worker ratio is
   the scaling (target on 2 cores: >= 1.7). The machine may be shared, so the same pools
   also time a pure-Python loop (the raw baseline: the parallelism the machine offers right
   now), and the load average is printed beside the figures.

Usage: ``.venv/bin/python bench/replay.py [--sizes 10,100,1000] [--repeats N]
[--corpus 200] [--corpus-calls 10]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TypeVar

import tavernlab
from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.host import Lab, Run
from tavernlab.replay import Replay, read_bundle, replay_many
from tavernlab.replay._many import replay_one
from tavernlab.workspace.roots import Profile

T = TypeVar("T")


def play(run: Run, calls: int) -> None:
    """``calls`` tool calls: a rotation of workspace tools, a shell call every tenth."""
    for number in range(calls):
        path = f"scratch/notes-{number % 7}.md"
        step = number % 10
        if step == 9:
            run.shell(f"ls /scratch | wc -l; echo {number}")
        elif step in (0, 5):
            run.call_tool("workspace.write_file", {"path": path, "content": f"note {number}\n",
                                                   "mode": "replace"})
        elif step in (1, 6):
            run.call_tool("workspace.read_file", {"path": path})
        elif step == 2:
            run.call_tool("workspace.apply_patch", {"path": path, "old_string": "note",
                                                    "new_string": "Note"})
        elif step in (3, 7):
            run.call_tool("workspace.list_files", {"path": "scratch"})
        else:
            run.call_tool("workspace.search_files", {"query": "note", "path": "scratch"})


def record(root: Path, calls: int) -> tuple[Run, Lab]:
    """Play a run of ``calls`` calls directly (lab, start, calls, close)."""
    lab = Lab(root, clock=FixedClock(), ids=SequentialIds("bench"))
    profile = Profile()
    profile.tools.max_calls_per_run = None  # the default budget allows 200 calls
    run = lab.start_run(chat_id="bench", profile=profile)
    play(run, calls)
    lab.close()
    return run, lab


def measured(call: Callable[[], T]) -> tuple[T, float, float]:
    """``(result, wall seconds, CPU seconds of this process)`` of ``call()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def phases(bundle: Path) -> str:
    """Where a replay's time goes: read, prepare, play, verify, close (wall seconds)."""
    loaded, read, _ = measured(lambda: read_bundle(bundle))
    session, prepare, _ = measured(lambda: Replay.prepare(loaded))
    _, played, _ = measured(session.play)
    report, verify, _ = measured(session.verify)
    _, close, _ = measured(session.close)
    assert report.identical, str(report)
    return (f"read {read:.3f}  prepare {prepare:.3f}  play {played:.3f}  verify {verify:.3f}"
            f"  close {close:.3f}")


def sizes_table(work: Path, sizes: list[int], repeats: int) -> None:
    print(f"{'calls':>6} {'direct s':>9} {'export s':>9} {'replay s':>9} {'wall ratio':>11} "
          f"{'cpu ratio':>10}   (medians of {repeats}, direct and replay alternating)")
    for calls in sizes:
        rows: dict[str, list[float]] = {k: [] for k in ("dw", "dc", "e", "rw", "rc")}
        bundle = work / "none"
        for attempt in range(repeats):
            root = work / f"size-{calls}-{attempt}"
            (run, _), wall, cpu = measured(lambda r=root, n=calls: record(r / "lab", n))
            rows["dw"].append(wall)
            rows["dc"].append(cpu)
            bundle, wall, _ = measured(lambda r=run, b=root: r.export(b / "run.tavernrun"))
            rows["e"].append(wall)
            report, wall, cpu = measured(lambda b=bundle: tavernlab.replay.replay(b))
            assert report.identical, str(report)
            rows["rw"].append(wall)
            rows["rc"].append(cpu)
        m = {k: statistics.median(v) for k, v in rows.items()}
        print(f"{calls:>6} {m['dw']:>9.3f} {m['e']:>9.3f} {m['rw']:>9.3f} "
              f"{m['rw'] / m['dw']:>11.2f} {m['rc'] / m['dc']:>10.2f}")
        print(f"       one replay of {calls}: {phases(bundle)}")
        for attempt in range(repeats):
            shutil.rmtree(work / f"size-{calls}-{attempt}")


def burn(steps: int) -> int:
    """A pure-Python CPU loop: the baseline of what two workers can gain."""
    total = 0
    for step in range(steps):
        total += step * step
    return total


def warm(pool: ProcessPoolExecutor, workers: int, bundles: list[Path]) -> None:
    """Start every worker and replay once in each before timing (imports, first labs)."""
    list(pool.map(replay_one, bundles[:workers * 2]))


def corpus_table(work: Path, size: int, calls: int) -> None:
    folder = work / "corpus"
    bundles = []
    for number in range(size):
        run, _ = record(folder / f"lab-{number}", calls)
        bundles.append(run.export(folder / f"run-{number}.tavernrun"))
    times: dict[int, float] = {}
    loops: dict[int, float] = {}
    context = multiprocessing.get_context("spawn")
    for workers in (1, 2):
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            warm(pool, workers, bundles)
            loops[workers] = measured(lambda p=pool: list(p.map(burn, [2_000_000] * 8)))[1]
            started = time.perf_counter()
            summary = replay_many(bundles, executor=pool)
            times[workers] = time.perf_counter() - started
        assert summary.identical == size, summary.table()
        print(f"replay_many {size} bundles of {calls} calls, {workers} worker(s): "
              f"{times[workers]:.2f} s ({times[workers] / size * 1000:.1f} ms per bundle); "
              f"baseline loop {loops[workers]:.2f} s")
    print(f"scaling 1 -> 2 workers: replay_many {times[1] / times[2]:.2f}x, baseline loop "
          f"{loops[1] / loops[2]:.2f}x (cpus: {os.cpu_count()}, load average: "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--corpus", type=int, default=200)
    parser.add_argument("--corpus-calls", type=int, default=10)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tavernlab-bench-replay-"))
    try:
        print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        sizes_table(work, [int(s) for s in args.sizes.split(",")], args.repeats)
        corpus_table(work, args.corpus, args.corpus_calls)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
