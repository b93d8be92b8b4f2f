"""Shared measuring rules of the performance table's benchmarks (not a test).

* :func:`compare` times a path and its raw baseline *interleaved*, in rounds (each round: a
  few baseline samples, then a few samples of the path), so that the load of a shared machine
  hits both alike; the figure and the baseline are medians over every sample, and the ratio is
  the median of the per-round ratios, printed with its spread (lowest-highest round).
* :class:`Row` is one line of the table ``bench/all.py`` prints: the path, today's figure,
  the baseline, the ratio with its spread, the target and whether it is met.
* :func:`table_options` adds the flags every script shares (``--quick``: fewer samples, so
  ``bench/all.py`` finishes in minutes; ``--json``: the rows as one JSON line), :func:`emit`
  prints the rows either way and :func:`rows_in` reads them back from a script's output.
* :func:`fresh_dirs` gives a fresh directory on tmpfs (``/dev/shm``) and one on the real disk,
  for the file-heavy rows.
* The load of the machine: every comparison reads the load average (1 minute) before and
  after its samples and its row carries both; a row measured while it was above
  :data:`LOAD_LIMIT`, or moved by more than :data:`LOAD_MOVE`, is **noisy** (too busy to
  tell) rather than met or not met (:func:`noisy`). :func:`wait_quiet` waits, bounded, for a
  quiet machine.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: The prefix of the line that carries a script's rows as JSON (``--json``).
ROWS_PREFIX = "bench-rows: "

DISK_NOTE = ("disk: on this ext4, creating files right after a mass delete can cost 10x more "
             "(the allocator skips recently freed inodes); each disk figure uses a fresh "
             "directory")


#: A load average above this, or moving by more than :data:`LOAD_MOVE`, makes a row noisy.
LOAD_LIMIT = 1.5
LOAD_MOVE = 1.0


def load_average() -> float:
    """The 1-minute load average."""
    return os.getloadavg()[0]


def noisy(before: float, after: float) -> bool:
    """Whether the machine was too busy to tell, from the load averages read before and after
    the samples: either above :data:`LOAD_LIMIT`, or moved by more than :data:`LOAD_MOVE`."""
    return max(before, after) > LOAD_LIMIT or abs(after - before) > LOAD_MOVE


def load_note(before: float, after: float) -> str:
    """``load 0.42 -> 0.57`` (``NOISY (...)`` when :func:`noisy`)."""
    text = f"load {before:.2f} -> {after:.2f}"
    if noisy(before, after):
        text = f"NOISY ({text}; quiet is <= {LOAD_LIMIT}, moving <= {LOAD_MOVE})"
    return text


def wait_quiet(limit_s: float, poll_s: float = 5.0) -> tuple[bool, float]:
    """Wait until the load average is at most :data:`LOAD_LIMIT`, for ``limit_s`` seconds at
    most; returns whether the machine is quiet and the seconds waited."""
    start = time.monotonic()
    while load_average() > LOAD_LIMIT:
        waited = time.monotonic() - start
        if waited >= limit_s:
            return False, waited
        time.sleep(min(poll_s, limit_s - waited))
    return True, time.monotonic() - start


@dataclass
class Comparison:
    """Medians (in the unit of the timer) of a path and its baseline, their ratio, and the
    load average before and after the samples."""

    figure: float
    baseline: float
    ratio: float
    low: float
    high: float
    load_before: float | None = None
    load_after: float | None = None


def _samples(action: Callable[[], object], count: int) -> list[float]:
    out = []
    for _ in range(count):
        start = time.perf_counter()
        action()
        out.append(time.perf_counter() - start)
    return out


def compare(subject: Callable[[], object], baseline: Callable[[], object], *, rounds: int = 7,
            per_round: int = 20, warmup: int = 3) -> Comparison:
    """Interleaved medians (milliseconds) of ``subject`` and ``baseline``."""
    before = load_average()
    for _ in range(warmup):
        baseline()
        subject()
    ours: list[float] = []
    theirs: list[float] = []
    ratios = []
    for _ in range(rounds):
        base = _samples(baseline, per_round)
        mine = _samples(subject, per_round)
        theirs += base
        ours += mine
        ratios.append(statistics.median(mine) / statistics.median(base))
    return Comparison(statistics.median(ours) * 1000, statistics.median(theirs) * 1000,
                      statistics.median(ratios), min(ratios), max(ratios), before,
                      load_average())


def compare_once(subject: Callable[[], object], baseline: Callable[[], object], *,
                 rounds: int = 5) -> Comparison:
    """Like :func:`compare` for actions too slow to repeat within a round (one sample each
    per round), in milliseconds."""
    return compare(subject, baseline, rounds=rounds, per_round=1, warmup=0)


def compare_prepared(prepare: Callable[[], T], subject: Callable[[T], object],
                     baseline: Callable[[], object], *, rounds: int = 5) -> Comparison:
    """Like :func:`compare_once`, for a path that needs an untimed preparation per sample
    (``subject(prepare())``, only ``subject`` timed)."""
    ours, theirs, ratios = [], [], []
    before = load_average()
    for _ in range(rounds):
        start = time.perf_counter()
        baseline()
        base = time.perf_counter() - start
        prepared = prepare()
        start = time.perf_counter()
        subject(prepared)
        mine = time.perf_counter() - start
        ours.append(mine)
        theirs.append(base)
        ratios.append(mine / base)
    return Comparison(statistics.median(ours) * 1000, statistics.median(theirs) * 1000,
                      statistics.median(ratios), min(ratios), max(ratios), before,
                      load_average())


@dataclass
class Row:
    """One line of the performance table."""

    path: str
    figure: str
    baseline: str
    ratio: float
    spread: tuple[float, float]
    target: str
    met: bool
    note: str = ""
    #: A floor (``bench/floor.py``): not a path of the issue's table but the least its row
    #: can cost, so it is under or above the row's target rather than met.
    floor: bool = False
    #: The load average before and after the row's samples (``None``: not read).
    load: tuple[float, float] | None = None

    @property
    def noisy(self) -> bool:
        """Measured on a machine too busy to tell (:func:`noisy`)."""
        return self.load is not None and noisy(*self.load)

    def status(self) -> str:
        """``met`` / ``NOT met`` (a floor: ``floor under`` / ``floor ABOVE``), or ``noisy``
        (with what it would have said) when the machine was busy."""
        said = ("floor under" if self.met else "floor ABOVE") if self.floor else (
            "met" if self.met else "NOT met")
        return f"noisy (would be {said})" if self.noisy else said

    def cells(self) -> list[str]:
        """The printed cells."""
        low, high = self.spread
        note = self.note
        if self.load is not None:
            note = f"{load_note(*self.load)}; {note}" if note else load_note(*self.load)
        return [self.path, self.figure, self.baseline,
                f"{self.ratio:.2f}x ({low:.2f}-{high:.2f})", self.target, self.status(), note]


def ms(value: float) -> str:
    """Milliseconds, to a sensible precision."""
    return f"{value:.3f} ms" if value < 10 else f"{value:.1f} ms"


def row(path: str, result: Comparison, baseline_name: str, limit: float, target: str,
        note: str = "", *, floor: bool = False) -> Row:
    """A row whose target is ``ratio <= limit`` (a floor's: see :attr:`Row.floor`)."""
    load = None if result.load_before is None or result.load_after is None else (
        result.load_before, result.load_after)
    return Row(path, ms(result.figure), f"{baseline_name} {ms(result.baseline)}", result.ratio,
               (result.low, result.high), target, result.ratio <= limit, note, floor, load)


def print_table(rows: list[Row]) -> None:
    """The table, aligned, with the load it was measured under."""
    header = ["path", "now (median)", "raw baseline (median)", "ratio (spread)", "target",
              "", "note"]
    table = [header, *[r.cells() for r in rows]]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for index, line in enumerate(table):
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))
        if index == 0:
            print("  ".join("-" * width for width in widths))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def absolute_row(path: str, figure: float, baseline_name: str, baseline: float, limit: float,
                 note: str = "", *, unit: str = "ms", at_least: bool = False,
                 load: tuple[float, float] | None = None) -> Row:
    """A row whose target is absolute: ``figure <= limit`` (``>= limit`` with ``at_least``),
    the ratio to the baseline given for reference."""
    ratio = figure / baseline
    shown = ms if unit == "ms" else (lambda v: f"{v:,.0f} {unit}")
    return Row(path, shown(figure), f"{baseline_name} {shown(baseline)}", ratio, (ratio, ratio),
               f"{'>=' if at_least else '<='} {shown(limit)}",
               figure >= limit if at_least else figure <= limit, note, load=load)


def table_options(parser: argparse.ArgumentParser) -> None:
    """``--quick`` and ``--json``, the flags ``bench/all.py`` passes."""
    parser.add_argument("--quick", action="store_true",
                        help="fewer samples (what bench/all.py runs)")
    parser.add_argument("--json", action="store_true",
                        help=f"print the rows as one line `{ROWS_PREFIX}<json>`")


def rounds_main(doc: str, rows: Callable[[int], list[Row]], *, rounds: int = 7,
                quick_rounds: int = 4) -> None:
    """The ``main`` of a script whose only knob is its number of rounds: ``--rounds N``
    (default ``rounds``), ``--quick`` (``quick_rounds``) and ``--json``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=rounds)
    table_options(parser)
    options = parser.parse_args()
    emit(rows(quick_rounds if options.quick else options.rounds), options.json)


def emit(rows: list[Row], as_json: bool) -> None:
    """Print ``rows``: as the table, or as one JSON line for ``bench/all.py``."""
    if as_json:
        print(ROWS_PREFIX + json.dumps([asdict(r) for r in rows]), flush=True)
    else:
        print_table(rows)


def rows_in(output: str) -> list[Row]:
    """The rows a script printed with ``--json``."""
    rows = []
    for line in output.splitlines():
        if line.startswith(ROWS_PREFIX):
            for item in json.loads(line.removeprefix(ROWS_PREFIX)):
                item["spread"] = tuple(item["spread"])
                if item.get("load") is not None:
                    item["load"] = tuple(item["load"])
                rows.append(Row(**item))
    return rows


def append_locked(path: Path, data: bytes) -> None:
    """Append ``data`` under an exclusive ``flock``, the way the host appends to a log (the
    raw baseline of an append)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, data)
    finally:
        os.close(fd)


def bench_run(lab: Any) -> Any:
    """A run of ``lab`` whose tool-call budget never runs out (a full benchmark makes more
    calls than the default profile's 200)."""
    from tavernlab.workspace.roots import Profile

    profile = Profile()
    profile.tools.max_calls_per_run = None
    return lab.start_run(chat_id="bench", profile=profile)


@contextmanager
def fresh_dir(kind: str) -> Iterator[Path]:
    """A fresh empty directory on ``tmpfs`` (``/dev/shm``) or on the real ``disk`` (the
    system temporary directory, if it is not tmpfs itself), removed afterwards."""
    parent = "/dev/shm" if kind == "tmpfs" else os.environ.get("TAVERNLAB_BENCH_DISK",
                                                               tempfile.gettempdir())
    path = Path(tempfile.mkdtemp(prefix="tavernlab-bench-", dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def fresh_dirs() -> list[str]:
    """The directory kinds file-heavy rows are measured on."""
    return ["tmpfs", "disk"] if os.path.isdir("/dev/shm") else ["disk"]
