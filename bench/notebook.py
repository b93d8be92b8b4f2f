"""Benchmark: a ``%%js`` cell through a real tavernlab kernel against a plain Python cell.

Starts the tavernlab kernel from ``kernel-spec/`` (through a temporary ``JUPYTER_PATH``, in a
temporary working directory so its lab is fresh), warms both cells up, then alternates

* ``print(1)`` (the raw baseline: ipykernel's own round trip), and
* ``%%js`` / ``console.log(1)`` (the magic, a model round per cell, a ``js`` job in the worker
  pool, the output streamed back),

timing each from ``execute_request`` to ``execute_reply`` on the client. Prints the p50 and
p90 of both, the p50 difference and ratio. Target: the ``%%js`` cell at most 10 ms over the
plain cell at p50.

Usage: ``.venv/bin/python bench/notebook.py [--runs N]``. Not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_client import KernelManager

REPO = Path(__file__).resolve().parents[1]
CELLS = {"print(1)": "print(1)", "%%js": "%%js\nconsole.log(1)"}


def round_trip_ms(client: Any, code: str) -> float:
    """One cell: execute_request to its execute_reply, in milliseconds (IOPub drained)."""
    start = time.perf_counter()
    msg_id = client.execute(code)
    while True:
        reply = client.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    elapsed = (time.perf_counter() - start) * 1000
    assert reply["content"]["status"] == "ok", reply["content"]
    while True:  # the cell's IOPub traffic, up to idle, so cells do not overlap
        msg = client.get_iopub_msg(timeout=60)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"):
            return elapsed


def percentile(samples: list[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``samples``."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="samples per cell (default 100)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tavernlab-bench-") as scratch:
        root = Path(scratch)
        shutil.copytree(REPO / "kernel-spec" / "tavernlab", root / "jp" / "kernels" / "tavernlab")
        os.environ["JUPYTER_PATH"] = str(root / "jp")
        (root / "cwd").mkdir()
        manager = KernelManager(kernel_name="tavernlab")
        manager.start_kernel(cwd=str(root / "cwd"))
        client = manager.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=60)
            samples: dict[str, list[float]] = {name: [] for name in CELLS}
            for _ in range(10):
                for code in CELLS.values():
                    round_trip_ms(client, code)
            for _ in range(args.runs):
                for name, code in CELLS.items():
                    samples[name].append(round_trip_ms(client, code))
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=False)
    plain, js = samples["print(1)"], samples["%%js"]
    for name, values in samples.items():
        print(f"{name:>9}: p50 {statistics.median(values):6.2f} ms   "
              f"p90 {percentile(values, 0.9):6.2f} ms   ({len(values)} cells)")
    over = statistics.median(js) - statistics.median(plain)
    print(f"%%js over print(1) at p50: {over:+.2f} ms "
          f"(ratio {statistics.median(js) / statistics.median(plain):.2f}x; target <= 10 ms)")


if __name__ == "__main__":
    main()
