"""Benchmark (table rows 2 and 3): ``workspace.read_file`` as a full tool call (not a
test).

The path: ``run.call_tool("workspace.read_file", {"path": ...})`` of a 1 KiB, a 64 KiB and a
1 MiB text file (mixed English and CJK, so the word count takes its slower paths), with every
record the host keeps. At 1 KiB and 64 KiB the baseline is the tight floor of
``bench/floor.py`` (the records one real call of the row wrote, replayed in plain Python with
the minimum system calls and one encode per record, around a raw read of the file; for a
first read also decoding it and counting its characters and words, which a re-read finds
cached), measured
interleaved in the same run; target <= 1.5x the floor (the raw read is printed beside it). At
1 MiB the baseline is the raw read (``open(...).read()``); target <= 5x.
The 64 KiB and 1 MiB reads are previews (over the 80,000-character budget the file is shown
in part), as a model sees them.

Two rows per size: a **re-read** (the same unchanged file again: the tool's per-process cache
of text measures already knows it) and a **first read** (nothing cached: each sample reads a
file whose content no read has seen, written untimed before the round; the baseline reads
it raw the same way, and its floor encodes new strings each sample, as a call that has just
built its text does: see ``floor.renewed``).

Usage: ``.venv/bin/python bench/read_file.py [--rounds N] [--quick] [--json]``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from timing import Comparison, Row, bench_run, compare, fresh_dir, ms, rounds_main, row

from tavernlab.host import Lab, Run

#: Per size: bytes, the target ratio, and whether it is to the tight floor (else the raw read).
SIZES = {"1 KiB": (1024, 1.5, True), "64 KiB": (64 * 1024, 1.5, True),
         "1 MiB": (1024 * 1024, 5.0, False)}
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


def read_and_count(host: Path) -> None:
    """A first read's floor work: the file's bytes, decoded, its characters and
    whitespace-separated words counted (a first read must measure what it shows; the tool's
    own word rules, CJK included, cost more than this lower bound)."""
    with open(host, "rb") as handle:
        text = handle.read().decode("utf-8")
    len(text), len(text.split())


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


def against(run: Run, base: Path, name: str, tool: Callable[[], None],
            read: Callable[[], None], work: Callable[[], None], floored: bool, *,
            rounds: int, per_round: int, fresh: bool = False) -> tuple[Comparison, str, str]:
    """``tool`` against its baseline: the tight floor of one captured call of ``tool`` around
    ``work`` (the raw ``read`` printed beside it; ``fresh``: the floor encodes new strings
    each sample, as a first read does), or ``read`` itself."""
    if not floored:
        return compare(tool, read, rounds=rounds, per_round=per_round), "raw read", ""
    from floor import Captured, floor_of  # floor.py imports the other bench scripts

    captured = Captured(run, tool)
    floor = floor_of(captured, base / f"floor-{name}", work, fresh=fresh)
    result = compare(tool, floor, rounds=rounds, per_round=per_round)
    raw = compare(floor, read, rounds=max(3, rounds // 2), per_round=per_round)
    return result, "tight floor", f"; raw read {ms(raw.baseline)}; floor {captured.describe()}"


def rows(rounds: int = 7) -> list[Row]:
    """Every row of this script (on tmpfs: the figures are CPU-bound)."""
    out = []
    with fresh_dir("tmpfs") as base:
        run = bench_run(Lab(base / "lab"))
        for label, (size, limit, floored) in SIZES.items():
            path = f"scratch/{size}.md"
            run.call_tool("workspace.write_file", {"path": path, "content": mixed_text(size)})
            host = Path(run.workspace_dir) / path
            args = {"path": path}

            def tool(args: dict[str, str] = args) -> None:
                result = run.call_tool("workspace.read_file", args)
                assert not result.is_error, result.content

            per_round = 15 if size < 1 << 20 else 3
            target = f"<= {limit:g}x" + (" floor" if floored else "")
            result, name, note = against(run, base, f"{size}-re", tool,
                                         partial(raw_read, host), partial(raw_read, host),
                                         floored, rounds=rounds, per_round=per_round)
            out.append(row(f"read_file {label}, re-read", result, name, limit, target,
                           "tmpfs; the file's measures already cached" + note))
            # warmup (3), the floor's captured call and every round's samples, for the tool
            # and for the baseline (the floor's raw read, then the raw read beside it)
            count = 4 + 2 * rounds * per_round
            ours, theirs = first_reads(run, size, count), first_reads(run, size + 8, 3 * count)

            def first(paths: Iterator[str] = ours) -> None:
                result = run.call_tool("workspace.read_file", {"path": next(paths)})
                assert not result.is_error, result.content

            def first_raw(paths: Iterator[str] = theirs) -> None:
                raw_read(Path(run.workspace_dir) / next(paths))

            def first_work(paths: Iterator[str] = theirs) -> None:
                read_and_count(Path(run.workspace_dir) / next(paths))

            result, name, note = against(run, base, f"{size}-first", first, first_raw,
                                         first_work, floored, rounds=rounds,
                                         per_round=per_round, fresh=True)
            out.append(row(f"read_file {label}, first read", result, name, limit, target,
                           "tmpfs; nothing cached: a content never read" + note))
    return out


def main() -> None:
    """Measure and print."""
    rounds_main(__doc__, rows)


if __name__ == "__main__":
    main()
