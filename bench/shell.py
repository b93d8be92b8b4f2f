"""Benchmark: ``workspace.shell`` against bare bashkit, measured in one run.

Prints medians (ms) and ratios:

1. ``echo hi``: a bare ``bashkit.Bash().execute_sync("echo hi")`` (fresh interpreter, as the
   shell makes one per call), the same on a reused interpreter, ``execute_shell`` (the adapter:
   policy view, Python filesystem bridge, builtins, caps), and the full tool call
   ``run.call_tool("workspace.shell", ...)`` (adds the arguments file, events and the stored
   result). Target: adapter overhead over the fresh bare interpreter <= 3 ms.
2. A 5-command pipeline over a 1,000-file workspace, through the adapter vs bare bashkit with
   the same directory mounted natively (``FileSystem.real``), so the ratio is the price of
   routing every file operation through ``ScopedWorkspaceFs``.

Usage: ``.venv/bin/python bench/shell.py [--runs N] [--files N]``. Not a test.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import bashkit

from tavernlab.host import Lab
from tavernlab.shell import execute_shell

PIPELINE = ("find /scratch/notes -type f -name '*.md' | sort | head -n 800 "
            "| xargs grep -l lantern | wc -l")


def median_ms(action: Callable[[], object], runs: int, warmup: int = 3) -> float:
    """Median wall time of ``action`` in milliseconds."""
    for _ in range(warmup):
        action()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def fill(notes: Path, files: int) -> None:
    """``files`` small markdown notes in 20 folders; every third mentions a lantern."""
    for index in range(files):
        path = notes / f"part{index % 20:02d}" / f"note{index:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        word = "lantern" if index % 3 == 0 else "candle"
        path.write_text(f"# Note {index}\nThe {word} burns.\n")


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="samples for echo (default 200)")
    parser.add_argument("--files", type=int, default=1000, help="workspace files (default 1000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lab = Lab(Path(tmp) / "lab")
        run = lab.start_run(chat_id="bench")
        scope = run.scope

        reused = bashkit.Bash()
        raw_fresh = median_ms(lambda: bashkit.Bash().execute_sync("echo hi"), args.runs)
        raw_reused = median_ms(lambda: reused.execute_sync("echo hi"), args.runs)
        adapter = median_ms(lambda: execute_shell(scope, run.context, "echo hi"), args.runs)
        tool = median_ms(lambda: run.call_tool("workspace.shell", {"command": "echo hi"}),
                         max(args.runs // 4, 20))
        print("echo hi (median ms)")
        print(f"  bare bashkit, fresh Bash()      {raw_fresh:8.3f}")
        print(f"  bare bashkit, reused Bash       {raw_reused:8.3f}")
        print(f"  execute_shell (adapter)         {adapter:8.3f}   overhead "
              f"{adapter - raw_fresh:+.3f} ms   ratio {adapter / raw_fresh:.2f}x")
        print(f"  run.call_tool(workspace.shell)  {tool:8.3f}   overhead "
              f"{tool - raw_fresh:+.3f} ms   ratio {tool / raw_fresh:.2f}x  "
              "(+ arguments file, events, stored result)")

        notes = run.workspace_dir / "scratch" / "notes"
        fill(notes, args.files)
        expected = execute_shell(scope, run.context, PIPELINE).stdout
        host = str(run.workspace_dir / "scratch")
        native = bashkit.Bash()
        native.mount("/scratch", bashkit.FileSystem.real(host, writable=False), read_only=True)
        assert native.execute_sync(PIPELINE).stdout == expected, "pipelines disagree"
        runs = max(args.runs // 20, 7)

        def native_fresh() -> None:
            bash = bashkit.Bash()
            bash.mount("/scratch", bashkit.FileSystem.real(host, writable=False),
                       read_only=True)
            bash.execute_sync(PIPELINE)

        raw_pipe = median_ms(native_fresh, runs, warmup=1)
        ours_pipe = median_ms(lambda: execute_shell(scope, run.context, PIPELINE), runs,
                              warmup=1)
        print(f"\n5-command pipeline over {args.files} files: {PIPELINE}")
        print(f"  result: {expected.strip()} files")
        print(f"  bare bashkit, real-dir mount    {raw_pipe:8.3f}")
        print(f"  execute_shell (adapter)         {ours_pipe:8.3f}   ratio "
              f"{ours_pipe / raw_pipe:.2f}x")


if __name__ == "__main__":
    main()
