"""Benchmark: how long a fresh process takes to start tavernlab (not a test).

Each sample is a fresh ``python`` subprocess; the three kinds run interleaved, so the load of a
shared machine hits them alike:

* ``import tavernlab`` (target: <= 60 ms);
* ``tavernlab --help``, as the console script runs it (``from tavernlab.cli import main``,
  ``main()``; target: <= 150 ms);
* ``python -c pass``, the baseline.

Printed: the median wall time of each and the CPU time the children used, the ratio to the
baseline (median of the per-sample ratios, with their spread) and the targets. Bytecode is
cached in a temporary ``PYTHONPYCACHEPREFIX`` (warmed first), as for an installed package.

A figure taken on a busy machine says little: the load average (1 minute) is read before and
after the samples, and each row is marked noisy when either reading is above 1.5 or the two
differ by more than 1 (:func:`timing.noisy`, shared by every benchmark).

Usage: ``.venv/bin/python bench/start.py [--samples N] [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections import defaultdict

from imports import environment, sample
from timing import LOAD_LIMIT, LOAD_MOVE, Row, emit, ms, noisy, table_options

KINDS = {
    "pass": "pass",
    "import": "import tavernlab",
    "help": "import sys; from tavernlab.cli import main; sys.exit(main(['--help']))",
}
#: The rows: kind, path, target (ms).
TARGETS = (("import", "import tavernlab (fresh process)", 60.0),
           ("help", "tavernlab --help (fresh process)", 150.0))
__all__ = ["LOAD_LIMIT", "LOAD_MOVE", "measure", "noisy"]


def measure(samples: int) -> list[Row]:
    """The rows, from ``samples`` interleaved samples of each kind."""
    with tempfile.TemporaryDirectory(prefix="tavernlab-bench-pyc-") as cache:
        env = environment(cache)
        for code in KINDS.values():  # warm the bytecode cache and the page cache
            sample(code, env)
            sample(code, env)
        walls: dict[str, list[float]] = defaultdict(list)
        cpus: dict[str, list[float]] = defaultdict(list)
        before = os.getloadavg()[0]
        for _ in range(samples):
            for kind, code in KINDS.items():
                wall, cpu, _ = sample(code, env)
                walls[kind].append(wall)
                cpus[kind].append(cpu)
        after = os.getloadavg()[0]
    rows = []
    base = statistics.median(walls["pass"])
    for kind, path, limit in TARGETS:
        figure = statistics.median(walls[kind])
        ratios = [mine / theirs for mine, theirs in zip(walls[kind], walls["pass"], strict=True)]
        cpu = (f"CPU {statistics.median(cpus[kind]):.0f} ms vs "
               f"{statistics.median(cpus['pass']):.0f} ms")
        rows.append(Row(path, ms(figure), f"python -c pass {ms(base)}",
                        statistics.median(ratios), (min(ratios), max(ratios)),
                        f"<= {ms(limit)}", figure <= limit, cpu, load=(before, after)))
    return rows


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=21, help="samples per kind (>= 9)")
    table_options(parser)
    options = parser.parse_args()
    samples = 11 if options.quick else max(9, options.samples)
    emit(measure(samples), options.json)
    if not options.json:
        print(f"{samples} samples of each kind, interleaved; {sys.executable}")


if __name__ == "__main__":
    main()
