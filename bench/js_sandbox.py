"""Benchmark: the JavaScript sandbox (worker pool) against bare jsbox, measured in one run.

Prints medians (ms), p90s and ratios:

1. ``js -e 'console.log(1)'``: bare jsbox in this process (a fresh ``Runtime`` with the same
   limits, the source registered as a module and evaluated, ``console`` captured) vs
   ``run_js_command`` through the pool (argument scan, module graph, job protocol, worker
   Runtime, output back). "Warm" means an idle worker whose next Runtime is prepared: each
   sample waits ``--idle`` ms first. Back-to-back (no pause: the worker prepares the next
   Runtime while the next job waits) is printed too. Target (issue 16): warm p50 <= 1.5x bare.
2. A skill script of 3 modules (entry + 2 relative imports + ``@tauritavern/runtime``) through
   the V5 command and through the legacy engine (``run_skill_script``), vs bare jsbox.
3. Throughput with 2 workers, fed by 1, 2 and 4 submitting threads, vs the baseline: jsbox in
   a 2-process ``multiprocessing`` pool, each task a fresh Runtime running the same module
   (``imap_unordered``, one task per message). Target (issue 16): >= 3,000 jobs/s, and two
   threads per worker never slower than one.
4. Worker startup: spawn to ready, and the cost of a cancel that has to kill and replace a
   worker running a pure CPU loop.

Usage: ``.venv/bin/python bench/js_sandbox.py [--runs N] [--jobs N] [--idle MS]``. Not a test.
The machine's load matters (2 cores shared): the figures are medians, and every ratio is
against a baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import jsbox

from tavernlab.cancel import CancelToken
from tavernlab.js.command import run_js_command
from tavernlab.js.legacy import SkillScriptRequest, run_skill_script
from tavernlab.js.limits import MEMORY_LIMIT, STACK_LIMIT
from tavernlab.js.pool import WorkerPool
from tavernlab.js.process import WorkerProcess
from tavernlab.workspace.context import FrozenContext
from tavernlab.workspace.fs import WorkspaceFs
from tavernlab.workspace.macros import FrozenMacros
from tavernlab.workspace.scope import Policy, ScopedWorkspaceFs

MAIN = ("import { workspace } from '@tauritavern/runtime';\n"
        "import { slug } from './lib/slug.js';\n"
        "import { count } from './lib/count.js';\n"
        "const [title] = process.argv.slice(2);\n"
        "console.log(JSON.stringify({ slug: slug(title), words: count(title), "
        "roots: workspace.listFiles().length }));\n")
SLUG = "export const slug = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-');\n"
COUNT = "export const count = (s) => s.split(/\\s+/).filter(Boolean).length;\n"
LEGACY_MAIN = ("import { workspace } from '@tauritavern/runtime/v1';\n"
               "import { slug } from './lib/slug.js';\n"
               "import { count } from './lib/count.js';\n"
               "export default (a) => ({ slug: slug(a.title), words: count(a.title), "
               "roots: workspace.listFiles().length });\n")


def samples_ms(action: Callable[[], object], runs: int, warmup: int = 5) -> list[float]:
    """Wall times of ``action`` in milliseconds (after ``warmup`` unmeasured calls)."""
    for _ in range(warmup):
        action()
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        out.append((time.perf_counter() - start) * 1000)
    return out


def p90(values: list[float]) -> float:
    """The 90th percentile."""
    return statistics.quantiles(values, n=10)[-1]


def report(label: str, values: list[float], baseline: list[float] | None = None) -> None:
    """Print median and p90 (and the median ratio against ``baseline``)."""
    line = f"  {label:<46} p50 {statistics.median(values):7.3f} ms   p90 {p90(values):7.3f} ms"
    if baseline is not None:
        line += f"   x{statistics.median(values) / statistics.median(baseline):.1f}"
    print(line)


def bare_jsbox(modules: dict[str, str], entry: str) -> object:
    """What the sandbox does minus the process boundary: fresh Runtime, modules, evaluation."""
    lines: list[object] = []
    runtime = jsbox.Runtime(memory_limit=MEMORY_LIMIT, max_stack_size=STACK_LIMIT,
                            on_console=lambda level, args: lines.append(args))
    for name, source in modules.items():
        runtime.add_static_module(name, source)
    runtime.eval_module(entry, timeout=30)
    return lines


def baseline_task(_: int) -> int:
    """One job of the baseline pool: a fresh Runtime runs ``console.log(1)``."""
    return len(bare_jsbox({"/<eval>": "console.log(1)"}, "/<eval>"))  # type: ignore[arg-type]


def baseline_throughput(jobs: int) -> float:
    """Jobs per second of jsbox in a 2-process ``multiprocessing`` pool."""
    with multiprocessing.get_context("spawn").Pool(2) as workers:
        list(workers.imap_unordered(baseline_task, range(200), chunksize=1))  # warm up
        start = time.perf_counter()
        done = sum(workers.imap_unordered(baseline_task, range(jobs), chunksize=1))
        elapsed = time.perf_counter() - start
    assert done == jobs
    return jobs / elapsed


def pool_throughput(js: Callable[..., object], jobs: int, threads: int) -> float:
    """Jobs per second of ``run_js_command`` fed by ``threads`` submitting threads."""
    per_thread = jobs // threads

    def feed() -> None:
        for _ in range(per_thread):
            js("-e", "console.log(1)")

    workers = [threading.Thread(target=feed) for _ in range(threads)]
    start = time.perf_counter()
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    return per_thread * threads / (time.perf_counter() - start)


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="samples per case (default 300)")
    parser.add_argument("--jobs", type=int, default=2000, help="jobs for throughput")
    parser.add_argument("--idle", type=float, default=5.0,
                        help="ms an idle worker gets before each warm sample (default 5)")
    options = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="tavernlab-bench-"))
    for name in ("output", "scratch"):
        (root / name).mkdir()
    (root / "scratch" / "lib").mkdir()
    (root / "scratch" / "main.js").write_text(MAIN)
    (root / "scratch" / "lib" / "slug.js").write_text(SLUG)
    (root / "scratch" / "lib" / "count.js").write_text(COUNT)
    scope = ScopedWorkspaceFs(WorkspaceFs(root), Policy.from_profile())
    context = FrozenContext(None, FrozenMacros())
    pool = WorkerPool(2)
    start = time.perf_counter()
    pool.warm()
    cold_pool_ms = (time.perf_counter() - start) * 1000

    def js(*argv: str) -> object:
        result = run_js_command(list(argv), scope=scope, context=context, pool=pool)
        assert result.exit_code == 0, result.stderr
        return result

    print(f"JavaScript sandbox benchmark ({options.runs} samples per case)")
    print("1. js -e 'console.log(1)'")
    bare = samples_ms(lambda: bare_jsbox({"/<eval>": "console.log(1)"}, "/<eval>"),
                      options.runs)

    def idle_then_js() -> float:
        time.sleep(options.idle / 1000)
        start = time.perf_counter()
        js("-e", "console.log(1)")
        return (time.perf_counter() - start) * 1000

    for _ in range(5):
        idle_then_js()
    warm = [idle_then_js() for _ in range(options.runs)]
    back_to_back = samples_ms(lambda: js("-e", "console.log(1)"), options.runs)
    report("fresh jsbox Runtime in-process (baseline)", bare)
    report(f"warm pool (worker idle {options.idle:g} ms)", warm, bare)
    report("pool back-to-back", back_to_back, bare)
    ratio = statistics.median(warm) / statistics.median(bare)
    print(f"  warm/bare p50 ratio: {ratio:.2f} (target <= 1.5)")

    print("2. a 3-module skill script")
    bare_modules = {"/scratch/main.js": MAIN.replace("./lib/", "/scratch/lib/").replace(
        "import { workspace } from '@tauritavern/runtime';\n", "const workspace = "
        "{ listFiles: () => [] };\n").replace("process.argv.slice(2)", "['A Title Here']"),
        "/scratch/lib/slug.js": SLUG, "/scratch/lib/count.js": COUNT}
    bare3 = samples_ms(lambda: bare_jsbox(bare_modules, "/scratch/main.js"), options.runs)
    v5 = samples_ms(lambda: js("/scratch/main.js", "A Title Here"), options.runs)
    request = SkillScriptRequest(
        skill="bench", entry="scripts/main.js", args={"title": "A Title Here"},
        modules={"scripts/main.js": LEGACY_MAIN, "scripts/lib/slug.js": SLUG,
                 "scripts/lib/count.js": COUNT},
        visible_roots=("output", "scratch"), writable_roots=("output", "scratch"))
    legacy = samples_ms(lambda: run_skill_script(request, pool=pool), options.runs)
    report("bare jsbox in-process (baseline)", bare3)
    report("js /scratch/main.js (V5 command)", v5, bare3)
    report("run_skill_script (legacy engine)", legacy, bare3)

    print("3. throughput with 2 workers")
    baseline_rate = baseline_throughput(options.jobs)
    print(f"  jsbox in a 2-process multiprocessing pool (baseline): {baseline_rate:7.0f} jobs/s")
    for threads in (1, 2, 4):
        rate = pool_throughput(js, options.jobs, threads)
        print(f"  run_js_command, {threads} submitting thread(s):          {rate:7.0f} jobs/s"
              f"   x{rate / baseline_rate:.2f} of baseline (target >= 3000 jobs/s)")

    print("4. workers")
    print(f"  cold pool start (2 workers, spawn to ready): {cold_pool_ms:.1f} ms")
    spawn = []
    for _ in range(10):
        worker = WorkerProcess()
        begin = time.perf_counter()
        worker.start()
        worker.wait_ready(time.monotonic() + 20)
        spawn.append((time.perf_counter() - begin) * 1000)
        worker.stop()
    print(f"  one worker, spawn to ready: p50 {statistics.median(spawn):.1f} ms")
    kills = []
    marker = root / "scratch" / "running.txt"
    loop = ("import { workspace } from '@tauritavern/runtime';\n"
            "workspace.writeText('scratch/running.txt', 'yes');\nwhile (true) {}\n")
    for _ in range(5):
        pool.warm()
        marker.unlink(missing_ok=True)
        token = CancelToken()
        cancelled_at: list[float] = []

        def cancel_when_running(token: CancelToken = token, stamps: list[float] = cancelled_at
                                ) -> None:
            while not marker.exists():
                time.sleep(0.001)
            stamps.append(time.perf_counter())
            token.cancel()

        helper = threading.Thread(target=cancel_when_running)
        helper.start()
        result = run_js_command(["-e", loop], scope=scope, context=context, pool=pool,
                                token=token)
        kills.append((time.perf_counter() - cancelled_at[0]) * 1000)
        helper.join()
        assert result.cancelled
    print(f"  cancel of a running CPU loop (grace {pool.grace * 1000:.0f} ms, then kill; the "
          f"replacement starts in the background): p50 {statistics.median(kills):.1f} ms")
    pool.close()


if __name__ == "__main__":
    main()
