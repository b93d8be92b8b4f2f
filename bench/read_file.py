"""Benchmark (table rows 2 and 3): ``workspace.read_file`` as a full tool call (not a
test).

The path: ``run.call_tool("workspace.read_file", {"path": ...})`` of a 1 KiB, a 64 KiB and a
1 MiB text file (mixed English and CJK, so the word count takes its slower paths), with every
record the host keeps. The raw baseline: reading the same file's bytes
(``open(...).read()``). Targets: <= 10x the raw read at 1 KiB, <= 5x at 64 KiB and 1 MiB.
The 64 KiB and 1 MiB reads are previews (over the 80,000-character budget the file is shown
in part), as a model sees them.

Two rows per size: a **re-read** (the same unchanged file again: the tool's per-process cache
of text measures already knows it) and a **first read** (nothing cached: each sample reads a
file whose content no read has seen, written untimed before the round; the baseline reads
it raw the same way).

Usage: ``.venv/bin/python bench/read_file.py [--rounds N] [--quick] [--json]``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from timing import Row, bench_run, compare, fresh_dir, rounds_main, row

from tavernlab.host import Lab, Run

SIZES = {"1 KiB": (1024, 10.0), "64 KiB": (64 * 1024, 5.0), "1 MiB": (1024 * 1024, 5.0)}
WORDS = ["the", "lantern", "reads", "agent", "workspace", "notes", "42", "tool", "calls"]


def mixed_text(size: int, seed: int = 7) -> str:
    """Lines of English words and CJK ideographs, ``size`` UTF-8 bytes or a little less."""
    rng = random.Random(seed)
    lines: list[str] = []
    length = 0
    while True:
        if rng.random() < 0.6:
            line = " ".join(rng.choices(WORDS, k=rng.randint(4, 12))) + "."
        else:
            line = "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(rng.randint(5, 25)))
        encoded = len(line.encode()) + 1
        if length + encoded > size:
            return "\n".join(lines)
        lines.append(line)
        length += encoded


def raw_read(host: Path) -> None:
    """The baseline: the file's bytes."""
    with open(host, "rb") as handle:
        handle.read()


def first_reads(run: Run, size: int, count: int) -> Iterator[str]:
    """``count`` workspace paths of ``size``-byte files, each of a content no read has seen
    (a different first line), written now, untimed."""
    text = mixed_text(size - 16)
    paths = []
    for index in range(count):
        path = f"scratch/first-{size}-{index}.md"
        (Path(run.workspace_dir) / path).write_text(f"{index:015d}\n{text}", encoding="utf-8")
        paths.append(path)
    return iter(paths)


def rows(rounds: int = 7) -> list[Row]:
    """Every row of this script (on tmpfs: the figures are CPU-bound)."""
    out = []
    with fresh_dir("tmpfs") as base:
        run = bench_run(Lab(base / "lab"))
        for label, (size, limit) in SIZES.items():
            path = f"scratch/{size}.md"
            run.call_tool("workspace.write_file", {"path": path, "content": mixed_text(size)})
            host = Path(run.workspace_dir) / path
            args = {"path": path}

            def tool(args: dict[str, str] = args) -> None:
                result = run.call_tool("workspace.read_file", args)
                assert not result.is_error, result.content

            per_round = 15 if size < 1 << 20 else 3
            result = compare(tool, partial(raw_read, host), rounds=rounds, per_round=per_round)
            out.append(row(f"read_file {label}, re-read", result, "raw read", limit,
                           f"<= {limit:g}x", "tmpfs; the file's measures already cached"))
            # warmup (3) and every round's samples, for the tool and for the baseline
            count = 3 + rounds * per_round
            ours, theirs = first_reads(run, size, count), first_reads(run, size + 8, count)

            def first(paths: Iterator[str] = ours) -> None:
                result = run.call_tool("workspace.read_file", {"path": next(paths)})
                assert not result.is_error, result.content

            def first_raw(paths: Iterator[str] = theirs) -> None:
                raw_read(Path(run.workspace_dir) / next(paths))

            result = compare(first, first_raw, rounds=rounds, per_round=per_round)
            out.append(row(f"read_file {label}, first read", result, "raw read", limit,
                           f"<= {limit:g}x", "tmpfs; nothing cached: a content never read"))
    return out


def main() -> None:
    """Measure and print."""
    rounds_main(__doc__, rows)


if __name__ == "__main__":
    main()
