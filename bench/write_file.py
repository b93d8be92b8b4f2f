"""Benchmark (table row 1): ``workspace.write_file`` of 1 KiB as a full tool call (not a
test).

The path: ``run.call_tool("workspace.write_file", ...)`` replacing a 1 KiB file the call may
rewrite (its read record is the last write), with every record the host keeps (arguments
file, events, journal, stored result, run.json, checkpoint). The raw baseline: an atomic
write of the same 1 KiB (temporary sibling, write, rename over the file), in the same kind of
directory, printed beside the row; the row's baseline is the tight floor of ``bench/floor.py``
(the records one real call of this run wrote, replayed in plain Python with the minimum
system calls and one encode per record, around the same read and atomic write), measured
interleaved in the same run. Target: <= 1.5x the floor. Measured on tmpfs and on the real
disk, each in a fresh directory.

Usage: ``.venv/bin/python bench/write_file.py [--rounds N] [--quick] [--json]``.
"""

from __future__ import annotations

from floor import Captured, atomic_write, floor_of
from timing import (
    DISK_NOTE,
    Row,
    bench_run,
    compare,
    fresh_dir,
    fresh_dirs,
    ms,
    rounds_main,
    row,
)

from tavernlab.host import Lab

SIZE = 1024


def measure(kind: str, rounds: int) -> Row:
    """The row on one kind of directory."""
    with fresh_dir(kind) as base:
        run = bench_run(Lab(base / "lab"))
        contents = ["a" * SIZE, "b" * SIZE]
        turn = iter(range(10**9))
        args = {"path": "scratch/file.md", "content": contents[0]}
        run.call_tool("workspace.write_file", args)
        raw_path = base / "raw.md"
        raw_path.write_bytes(contents[0].encode())

        def tool() -> None:
            args["content"] = contents[next(turn) % 2]
            result = run.call_tool("workspace.write_file", args)
            assert not result.is_error, result.content


        captured = Captured(run, tool)
        target = base / "target.md"
        target.write_bytes(contents[0].encode())

        def work() -> None:  # the write guard's look at the current bytes, then the write
            with open(target, "rb") as handle:
                handle.read()
            atomic_write(target, contents[next(turn) % 2].encode())

        floor = floor_of(captured, base / "floor", work)
        result = compare(tool, floor, rounds=rounds, per_round=15)
        raw = compare(floor, lambda: atomic_write(raw_path, contents[next(turn) % 2].encode()),
                      rounds=max(3, rounds // 2), per_round=15)
        note = (f"atomic write {ms(raw.baseline)}; floor {captured.describe()}"
                + (f"; {DISK_NOTE}" if kind == "disk" else ""))
    return row(f"write_file 1 KiB ({kind})", result, "tight floor", 1.5, "<= 1.5x floor", note)


def rows(rounds: int = 7) -> list[Row]:
    """Every row of this script."""
    return [measure(kind, rounds) for kind in fresh_dirs()]


def main() -> None:
    """Measure and print."""
    rounds_main(__doc__, rows)


if __name__ == "__main__":
    main()
