"""Benchmark: workspace storage I/O against its raw baselines (not a test).

Prints medians and ratios measured in one run:

1. guarded writes per second through ``WorkspaceFs.write_file(..., MustMatchSha256)`` vs a raw
   write-temp-then-rename loop on the same file sizes (target: ratio >= 0.5). The guarded
   write does everything the contract requires: the cross-process lock, the containment walk,
   reading and hashing the current content for the compare-and-swap, and the atomic publish;
2. ``workspace.search_files`` over 1,000 files through a run's tool dispatch (median latency),
   next to a raw read-and-scan of the same files;
3. publishing a 10,000-file persist tree vs ``shutil.copytree`` (target: <= 1.5x).

Usage: ``.venv/bin/python bench/workspace_io.py [--writes N] [--repeats N]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from tavernlab.host import Lab
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.persist import PersistSnapshot
from tavernlab.workspace.persist._persist import PersistRepository
from tavernlab.workspace.storage import WorkspaceFs
from tavernlab.workspace.storage._fs import WriteGuard

SIZES = (1024, 64 * 1024, 1024 * 1024)
SEARCH_FILES = 1000


def median_rate(loop: Callable[[], None], count: int, repeats: int) -> float:
    """Median operations per second of ``loop`` (which does ``count`` operations)."""
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        loop()
        rates.append(count / (time.perf_counter() - started))
    return statistics.median(rates)


def median_ms(call: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``call`` in milliseconds."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def raw_write_loop(target: Path, payloads: list[bytes]) -> Callable[[], None]:
    """The baseline: write a temporary sibling, flush, rename it over the target."""
    def loop() -> None:
        for data in payloads:
            temp = target.with_name(f".raw-{uuid.uuid4().hex}")
            with open(temp, "wb") as handle:
                handle.write(data)
                handle.flush()
            os.replace(temp, target)
    return loop


def guarded_write_loop(fs: WorkspaceFs, path: WorkspacePath, payloads: list[bytes]
                       ) -> Callable[[], None]:
    """Guarded writes, each expecting the digest of the previous content (the caller knows
    it, as a tool knows its read record's digest, so it is computed outside the loop)."""
    digests = [hashlib.sha256(data).hexdigest() for data in payloads]

    def loop() -> None:
        expected = hashlib.sha256(fs.read_file(path, None)).hexdigest()
        for data, digest in zip(payloads, digests, strict=True):
            fs.write_file(path, data, WriteGuard.must_match_sha256(expected))
            expected = digest
    return loop


def bench_guarded_writes(base: Path, writes: int, repeats: int) -> None:
    """Guarded writes/s vs raw write+rename, per file size."""
    print("guarded writes (WorkspaceFs.write_file + MustMatchSha256) vs raw write+rename")
    print(f"{'size':>9} {'raw/s':>10} {'guarded/s':>10} {'ratio':>7}")
    for size in SIZES:
        count = {1024: writes, 64 * 1024: writes // 2}.get(size, max(20, writes // 10))
        payloads = [bytes([i % 251]) * size for i in range(count)]
        raw_dir = base / f"raw-{size}"
        raw_dir.mkdir()
        raw_target = raw_dir / "file.bin"
        raw_target.write_bytes(payloads[-1])
        fs = WorkspaceFs(base / f"ws-{size}")
        path = WorkspacePath("scratch/file.bin")
        fs.write_text(path, "", WriteGuard.unchecked())
        raw_loop = raw_write_loop(raw_target, payloads)
        guarded_loop = guarded_write_loop(fs, path, payloads)
        raw_loop()       # warm both paths (page cache, imports)
        guarded_loop()
        raw_rates, guarded_rates = [], []
        for _ in range(repeats):  # interleave so that machine load hits both alike
            raw_rates.append(median_rate(raw_loop, count, 1))
            guarded_rates.append(median_rate(guarded_loop, count, 1))
        raw, guarded = statistics.median(raw_rates), statistics.median(guarded_rates)
        print(f"{_size(size):>9} {raw:>10.0f} {guarded:>10.0f} {guarded / raw:>7.2f}")


def bench_search(base: Path, repeats: int) -> None:
    """``workspace.search_files`` over 1,000 files vs a raw read-and-scan of the same files."""
    lab = Lab(base / "lab")
    run = lab.start_run(chat_id="bench")
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    for index in range(SEARCH_FILES):
        lines = [f"{words[(index + n) % 8]} line {n} of note {index}" for n in range(40)]
        if index % 50 == 0:
            lines[20] = "the needle and the haystack"
        run.internals.fs.write_text(WorkspacePath(f"scratch/notes/d{index % 20}/n{index:04d}.md"),
                          "\n".join(lines), WriteGuard.unchecked())
    args = {"query": "needle haystack", "path": "scratch", "limit": 50}
    first = run.call_tool("workspace.search_files", args)
    assert first.structured["searchedFiles"] == SEARCH_FILES, first.content
    tool = median_ms(lambda: run.call_tool("workspace.search_files", args), repeats)
    files = sorted((run.workspace_dir / "scratch").rglob("*.md"))

    def raw_scan() -> int:
        found = 0
        for file in files:
            for line in file.read_text(encoding="utf-8").lower().split("\n"):
                if "needle" in line or "haystack" in line:
                    found += 1
        return found

    raw = median_ms(raw_scan, repeats)
    print(f"\nsearch_files over {SEARCH_FILES} files ({len(first.structured['hits'])} hits)")
    print(f"  tool median {tool:.1f} ms   raw read+scan median {raw:.1f} ms   "
          f"ratio {tool / raw:.2f}x")


def bench_persist_publish(base: Path, files: int = 10_000, repeats: int = 3) -> None:
    """Publishing a ``files``-file persist tree vs ``shutil.copytree`` of the same tree
    (target: <= 1.5x). Publication hashes every file, diffs it against the base snapshot,
    copies it into a hidden staging directory and renames that into place."""
    print(f"\npersist publish of a {files}-file tree (100 directories, 1 KiB files)")
    source = base / "persist-src"
    for d in range(100):
        folder = source / f"d{d:03d}"
        folder.mkdir(parents=True)
        for f in range(files // 100):
            (folder / f"f{f:03d}.md").write_bytes(os.urandom(512).hex().encode())
    repo = PersistRepository(base / "chat", "chat_bench", "bench")
    empty = PersistSnapshot(files=[], directories=[])
    copies, publishes = [], []
    for index in range(repeats):
        start = time.perf_counter()
        shutil.copytree(source, base / f"copytree-{index}")
        copies.append(time.perf_counter() - start)
        start = time.perf_counter()
        repo.publish(run_id="run_bench", persist_dir=source, snapshot=empty)
        publishes.append(time.perf_counter() - start)
    raw, ours = statistics.median(copies), statistics.median(publishes)
    print(f"  copytree median {raw * 1000:.0f} ms   publish median {ours * 1000:.0f} ms   "
          f"ratio {ours / raw:.2f}x (target <= 1.5x)")


def _size(size: int) -> str:
    return f"{size // 1024} KiB" if size < 1024 * 1024 else f"{size // (1024 * 1024)} MiB"


def main() -> None:
    """Run every benchmark once in a fresh temporary directory."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=400, help="writes per 1 KiB round")
    parser.add_argument("--repeats", type=int, default=7)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tavernlab-bench-") as temp:
        base = Path(temp)
        bench_guarded_writes(base, options.writes, options.repeats)
        bench_search(base, options.repeats)
        bench_persist_publish(base)


if __name__ == "__main__":
    main()
