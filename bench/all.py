"""The performance table: every benchmark row in one table (not a test).

Runs each benchmark script as its own subprocess with ``--json`` (and ``--quick`` unless
``--full``), collects the rows they print (:func:`timing.rows_in`) and prints the issue's table:
path | now (median) | raw baseline (median, measured in the same run of the same script) |
ratio (spread over rounds) | target | met?. Nothing is measured here: each figure comes from
its script, measured with :mod:`timing`. File-heavy rows are measured on a fresh directory of
tmpfs (``/dev/shm``) and of the real disk (the system temporary directory, or
``TAVERNLAB_BENCH_DISK``); the footer says which file system that is. Each script's full
output is kept in a log directory (printed at the end).

The load average is read before and after each row (by its script, around the row's
samples; a row whose script does not read it gets the readings around the whole script):
above 1.5, or moving by more than 1, the row says **noisy** instead of met / not met
(:func:`timing.noisy`). ``--wait-quiet`` first waits, before each script, until the load is
at most 1.5 (at most ``--quiet-limit`` seconds each time; past that the script runs anyway
and its rows say whether they were noisy).

Before the first script, a child process writes (then frees) ``--warm-memory`` GiB, at most a
quarter of the memory available (default 3; 0 skips it). On this virtual machine the first
write to a guest page that nothing has used since boot costs far more than a later one:
starting a run from a 50,000-file state (whose journal gets 16 MB of required records)
measured 1.31x its hard-link copy on a fresh machine and 1.04-1.14x on every one of twelve
starts once 3 GiB had been written and freed, while the link copy (which writes no data) was
the same both times. Warming it measures tavernlab, not the hypervisor's first touch.

Usage: ``.venv/bin/python bench/all.py [--full] [--only NAME,...] [--wait-quiet
[--quiet-limit S]]``; about 5 minutes on 2 shared cores with ``--quick`` (the default).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import DISK_NOTE, Row, load_average, print_table, rows_in, wait_quiet

HERE = Path(__file__).resolve().parent

#: The scripts, in the order of the issue's table, with the arguments all.py adds.
SCRIPTS: dict[str, list[str]] = {
    "write_file": [],
    "read_file": [],
    "floor": [],
    "shell": [],
    "events": [],
    "persist": [],
    "js_sandbox": [],
    "imports": [],
    "start": [],
    "agent": [],
}
#: Within a script, rows whose path starts with an earlier prefix come first (the issue's
#: order: every "finish" row, then every "next run" row).
ORDER = ("finish", "next run")


def file_system(path: str) -> str:
    """The type of the file system ``path`` is on (from ``/proc/mounts``)."""
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                fields = line.split()
                point = fields[1]
                if (path == point or path.startswith(point.rstrip("/") + "/")) and \
                        len(point) > len(best):
                    best, kind = point, fields[2]
    except OSError:
        pass
    return kind


def run_script(name: str, extra: list[str], quick: bool, logs: Path) -> tuple[list[Row], str]:
    """The rows of ``bench/<name>.py`` and a line saying how it went."""
    command = [sys.executable, str(HERE / f"{name}.py"), "--json", *extra]
    if quick:
        command.append("--quick")
    start = time.perf_counter()
    before = load_average()
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    after = load_average()
    elapsed = time.perf_counter() - start
    (logs / f"{name}.log").write_text(
        f"$ {' '.join(command)}\n{done.stdout}\n--- stderr ---\n{done.stderr}", encoding="utf-8")
    rows = rows_in(done.stdout)
    for item in rows:
        if item.load is None:
            item.load = (before, after)
    status = "ok" if done.returncode == 0 and rows else f"FAILED (exit {done.returncode})"
    return rows, f"{name}.py {status} in {elapsed:.0f} s (load {before:.2f} -> {after:.2f})"


def warm_memory(gib: float) -> str:
    """Write and free up to ``gib`` GiB in a child process (capped at a quarter of
    ``MemAvailable``); a line saying how much."""
    available = 0
    try:
        with open("/proc/meminfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
    except OSError:
        pass
    size = int(min(gib * 2**30, available / 4))
    if size <= 0:
        return "memory not warmed"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"b'\\x01' * {size}"], check=True)
    return f"warmed {size / 2**30:.1f} GiB of memory in {time.perf_counter() - start:.1f} s"


def ordered(rows: list[Row]) -> list[Row]:
    """``rows`` with the :data:`ORDER` prefixes grouped, otherwise as measured."""
    def rank(item: Row) -> int:
        for index, prefix in enumerate(ORDER):
            if item.path.startswith(prefix):
                return index
        return -1

    return sorted(rows, key=rank)


def main() -> None:
    """Run every script and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="each script's default settings")
    parser.add_argument("--only", default="", help="comma-separated script names")
    parser.add_argument("--wait-quiet", action="store_true",
                        help="before each script, wait for a load average <= 1.5")
    parser.add_argument("--quiet-limit", type=float, default=300.0,
                        help="seconds --wait-quiet waits at most each time (default 300)")
    parser.add_argument("--warm-memory", type=float, default=3.0,
                        help="GiB a child writes and frees first (default 3; 0 skips)")
    options = parser.parse_args()
    chosen = [n for n in options.only.split(",") if n] or list(SCRIPTS)
    logs = Path(tempfile.mkdtemp(prefix="tavernlab-bench-all-"))
    started = time.perf_counter()
    rows: list[Row] = []
    statuses = [warm_memory(options.warm_memory)]
    print(statuses[0], file=sys.stderr, flush=True)
    for name in chosen:
        if options.wait_quiet:
            quiet, waited = wait_quiet(options.quiet_limit)
            print(f"waited {waited:.0f} s for a quiet machine before {name}.py"
                  + ("" if quiet else f" (still busy: load {load_average():.2f})"),
                  file=sys.stderr, flush=True)
        found, status = run_script(name, SCRIPTS[name], not options.full, logs)
        print(status, file=sys.stderr, flush=True)
        rows += ordered(found)
        statuses.append(status)
    for item in rows:
        item.note = item.note.replace(f"; {DISK_NOTE}", "").replace(DISK_NOTE, "")
    disk = os.environ.get("TAVERNLAB_BENCH_DISK", tempfile.gettempdir())
    print(f"performance table, {'full' if options.full else 'quick'} run: medians; every baseline "
          "measured in the same run of the same script, interleaved with the path")
    print(f"file-heavy rows: a fresh directory on tmpfs (/dev/shm, {file_system('/dev/shm')}) "
          f"and on the disk ({disk}, {file_system(disk)})")
    print()
    print_table(rows)
    paths = [r for r in rows if not r.floor and not r.noisy]
    floors = [r for r in rows if r.floor and not r.noisy]
    print(f"{sum(r.met for r in paths)} of {len(paths)} quiet rows met; "
          f"{sum(not r.met for r in floors)} of {len(floors)} quiet floors above their target; "
          f"{sum(r.noisy for r in rows)} of {len(rows)} rows noisy (too busy to tell); "
          f"{'; '.join(statuses)}; {time.perf_counter() - started:.0f} s in all")
    print(f"(*) {DISK_NOTE}")
    print(f"each script's full output: {logs}")


if __name__ == "__main__":
    main()
