"""Benchmark (table rows 1, 2 and 4): the floor under a tool call's records (not a test).

What is the least a ``workspace.write_file``, ``workspace.read_file`` or ``workspace.shell``
call can cost while it keeps every record a call leaves, in upstream's formats?
This script runs one real call, notes every file it wrote (the arguments file, the stored
result, the lines appended to ``events.jsonl`` and ``journal.jsonl``, ``run.json``), then
times **those same operations in plain Python**: the same objects encoded again (``json``
for log lines, pydantic-core for the indented files), each file created, replaced or
appended the way the host does it (exclusive create, temporary file and rename, one locked
append per log), and the call's own file work (read, or read and replace; for the shell, a
fresh bare bashkit running the command, which is the shell row's baseline). No tavernlab
code runs in the timed loop: no validation, no containment, no metrics, no ids.

The floor is measured against the same raw baselines as ``bench/write_file.py``,
``bench/read_file.py`` and ``bench/shell.py``, interleaved in the same run. A floor above a
target's ratio shows the target cannot be met by any implementation that keeps the records;
a floor below it (the shell's) puts a number on what the implementation itself may cost.

Usage: ``.venv/bin/python bench/floor.py [--rounds N] [--quick] [--json]``.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bashkit
from pydantic_core import to_json
from timing import (
    DISK_NOTE,
    Row,
    append_locked,
    bench_run,
    compare,
    fresh_dir,
    fresh_dirs,
    rounds_main,
    row,
)
from write_file import atomic_write

from tavernlab.host import Lab, Run

SIZE = 1024


class Captured:
    """What one tool call wrote, as plain JSON objects (the floor encodes them again)."""

    def __init__(self, run: Run, call: Callable[[], object]) -> None:
        run_dir = Path(run.dir)
        events, journal = run_dir / "events.jsonl", run_dir / "journal.jsonl"
        before = {p: p.stat().st_size if p.exists() else 0 for p in (events, journal)}
        files = set(_files(run_dir))
        call()
        created = sorted(set(_files(run_dir)) - files)
        self.args = [json.loads(p.read_text()) for p in created if "tool-args" in p.parts]
        self.results = [json.loads(p.read_text()) for p in created if "tool-results" in p.parts]
        self.events = _appended(events, before[events])
        self.journal = _appended(journal, before[journal])
        self.record = json.loads((run_dir / "run.json").read_text())

    def describe(self) -> str:
        """The note of a floor row: what the call writes."""
        return (f"{len(self.args)} args file, {len(self.results)} result, "
                f"{len(self.events)} events + {len(self.journal)} journal lines in one append "
                "each, run.json")


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.json") if p.is_file()]


def _appended(path: Path, offset: int) -> list[dict[str, Any]]:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return [json.loads(line) for line in handle.read().splitlines()]


def pretty(data: Any) -> str:
    """``json.dumps(data, indent=2)`` plus a newline, by pydantic-core's encoder (the same
    bytes for these plain objects, several times faster than ``json``'s indenting one)."""
    return to_json(data, indent=2).decode() + "\n"


def create(path: Path, text: str) -> None:
    """Exclusive create, as the host writes an arguments file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def append_lines(path: Path, lines: list[dict[str, Any]]) -> None:
    """One ``flock``ed append of every line, as the host appends a call's records."""
    append_locked(path, "".join(json.dumps(line, ensure_ascii=False) + "\n"
                                for line in lines).encode())


def floor_of(captured: Captured, base: Path, work: Callable[[], None]) -> Callable[[], None]:
    """The captured call's writes in plain Python, around ``work`` (the call's own file work,
    done under a shared lock of the workspace)."""
    root = base / "floor"
    root.mkdir()
    lock = root / ".workspace.lock"
    lock.touch()
    numbers = itertools.count()

    def floor() -> None:
        n = next(numbers)
        for args in captured.args:
            create(root / f"args-{n}.json", pretty(args))
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            work()
        finally:
            os.close(fd)
        for result in captured.results:
            atomic_write(root / f"result-{n}.json", pretty(result).encode())
        append_lines(root / "events.jsonl", captured.events)
        if captured.journal:
            append_lines(root / "journal.jsonl", captured.journal)
        atomic_write(root / "run.json", pretty(captured.record).encode())

    return floor


def write_rows(kind: str, rounds: int) -> Row:
    """The write_file floor on one kind of directory."""
    with fresh_dir(kind) as base:
        run = Lab(base / "lab").start_run(chat_id="bench")
        args = {"path": "scratch/file.md", "content": "a" * SIZE}
        run.call_tool("workspace.write_file", args)
        args["content"] = "b" * SIZE
        captured = Captured(run, lambda: run.call_tool("workspace.write_file", args))
        target = base / "target.md"
        target.write_bytes(b"a" * SIZE)
        contents = itertools.cycle([b"a" * SIZE, b"b" * SIZE])

        def work() -> None:
            with open(target, "rb") as handle:  # the write guard's look at the current bytes
                handle.read()
            atomic_write(target, next(contents))

        raw = base / "raw.md"
        result = compare(floor_of(captured, base, work),
                         lambda: atomic_write(raw, next(contents)), rounds=rounds, per_round=15)
    return row(f"write_file 1 KiB: its records in plain Python, the floor ({kind})", result,
               "atomic write", 3.0, "<= 3x",
               captured.describe() + ("; " + DISK_NOTE if kind == "disk" else ""), floor=True)


def read_rows(rounds: int) -> Row:
    """The read_file floor (tmpfs, like bench/read_file.py)."""
    with fresh_dir("tmpfs") as base:
        run = Lab(base / "lab").start_run(chat_id="bench")
        run.call_tool("workspace.write_file", {"path": "scratch/r.md", "content": "a" * SIZE})
        args = {"path": "scratch/r.md"}
        run.call_tool("workspace.read_file", args)
        captured = Captured(run, lambda: run.call_tool("workspace.read_file", args))
        host = Path(run.workspace_dir) / "scratch" / "r.md"

        def work() -> None:
            with open(host, "rb") as handle:
                handle.read()

        result = compare(floor_of(captured, base, work), work, rounds=rounds, per_round=15)
    return row("read_file 1 KiB: its records in plain Python, the floor", result, "raw read",
               10.0, "<= 10x", "tmpfs; " + captured.describe(), floor=True)


def shell_rows(rounds: int) -> Row:
    """The ``run.shell('echo hi')`` floor: its records in plain Python around a fresh bare
    interpreter running the command (the baseline itself: the shell makes one per call)."""
    with fresh_dir("tmpfs") as base:
        lab = Lab(base / "lab")
        run = bench_run(lab)
        run.shell("echo hi")
        captured = Captured(run, lambda: run.shell("echo hi"))

        def work() -> None:
            bashkit.Bash().execute_sync("echo hi")

        result = compare(floor_of(captured, base, work), work, rounds=rounds, per_round=20)
        lab.close()
    return row("run.shell('echo hi'): its records in plain Python, the floor", result,
               "fresh bashkit", 2.0, "<= 2x", "tmpfs; " + captured.describe(), floor=True)


def rows(rounds: int = 7) -> list[Row]:
    """Every row of this script."""
    return [*(write_rows(kind, rounds) for kind in fresh_dirs()), read_rows(rounds),
            shell_rows(rounds)]


def main() -> None:
    """Measure and print."""
    rounds_main(__doc__, rows)


if __name__ == "__main__":
    main()
