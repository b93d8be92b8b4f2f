"""Benchmark (table rows 4 and 5): ``workspace.shell`` against bare bashkit and bash (not a
test).

1. ``run.shell('echo hi')``, the full tool call (arguments file, events, stored result, the
   adapter's policy view, Python filesystem bridge, builtins and caps), against a bare
   ``bashkit.Bash().execute_sync("echo hi")`` (a fresh interpreter: what a call must look like
   to the command; the shell keeps its interpreters and resets them instead). Target: <= 2x.
   The adapter alone (``execute_shell``) and a reused bare interpreter are printed beside it.
2. A 5-command pipeline (``find | sort | head | xargs grep -l | wc -l``) over a workspace of
   1,000 and of 10,000 files, as a full ``run.shell`` call, against ``bash -c`` running the
   same pipeline on the same tree (a real process, real files). Target: <= 3x. Measured on a
   fresh directory of tmpfs and of the real disk.

Usage: ``.venv/bin/python bench/shell.py [--rounds N] [--files 1000,10000] [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import bashkit
from timing import (
    DISK_NOTE,
    Row,
    bench_run,
    compare,
    emit,
    fresh_dir,
    fresh_dirs,
    ms,
    row,
    table_options,
)

from tavernlab.host import Lab
from tavernlab.shell import execute_shell

PIPELINE = ("find {root}scratch/notes -type f -name '*.md' | sort | head -n 800 "
            "| xargs grep -l lantern | wc -l")


def fill(notes: Path, files: int) -> None:
    """``files`` small markdown notes in folders of 50; every third mentions a lantern."""
    for index in range(files):
        folder = notes / f"part{index // 50:04d}"
        if index % 50 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        word = "lantern" if index % 3 == 0 else "candle"
        (folder / f"note{index:05d}.md").write_text(f"# Note {index}\nThe {word} burns.\n")


def echo_row(base: Path, rounds: int) -> Row:
    """``run.shell('echo hi')`` against a fresh bare interpreter."""
    lab = Lab(base / "lab")
    run = bench_run(lab)
    result = compare(lambda: run.shell("echo hi"), lambda: bashkit.Bash().execute_sync("echo hi"),
                     rounds=rounds, per_round=20)
    reused = bashkit.Bash()
    side = compare(lambda: execute_shell(run.internals.scope, run.internals.context, "echo hi"),
                   lambda: reused.execute_sync("echo hi"), rounds=max(3, rounds // 2),
                   per_round=20)
    lab.close()
    return row("run.shell('echo hi'), full tool call", result, "fresh bashkit", 2.0, "<= 2x",
               f"adapter alone {ms(side.figure)}; reused bare Bash {ms(side.baseline)}")


def pipeline_row(kind: str, files: int, rounds: int) -> Row:
    """The pipeline over ``files`` files, full tool call against ``bash -c``."""
    with fresh_dir(kind) as base:
        lab = Lab(base / "lab")
        run = bench_run(lab)
        fill(run.workspace_dir / "scratch" / "notes", files)
        ours = PIPELINE.format(root="/")
        theirs = PIPELINE.format(root="./")
        expected = run.shell(ours).stdout
        bash = ["bash", "-c", theirs]
        assert subprocess.run(bash, cwd=run.workspace_dir, capture_output=True, text=True,
                              check=True).stdout == expected, "pipelines disagree"
        result = compare(lambda: run.shell(ours),
                         lambda: subprocess.run(bash, cwd=run.workspace_dir, check=True,
                                                stdout=subprocess.DEVNULL),
                         rounds=rounds, per_round=3 if files > 2000 else 5, warmup=1)
        lab.close()
    disk = f"; {DISK_NOTE}" if kind == "disk" else ""
    return row(f"5-command pipeline, {files:,} files ({kind})", result, "bash -c", 3.0,
               "<= 3x", f"{expected.strip()} files match{disk}")


def rows(rounds: int, sizes: tuple[int, ...]) -> list[Row]:
    """Every row of this script."""
    with fresh_dir("tmpfs") as base:
        out = [echo_row(base, rounds)]
    return out + [pipeline_row(kind, files, rounds) for kind in fresh_dirs() for files in sizes]


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--files", default="1000,10000")
    table_options(parser)
    options = parser.parse_args()
    sizes = tuple(int(n) for n in options.files.split(","))
    emit(rows(4 if options.quick else options.rounds, sizes), options.json)


if __name__ == "__main__":
    main()
