"""Benchmark: the JavaScript sandbox (worker pool) against bare jsbox, measured in one run.

Prints medians (ms), p90s and ratios:

1. ``js -e 'console.log(1)'``: bare jsbox in this process (a fresh ``Runtime`` with the same
   limits, the source registered as a module and evaluated, ``console`` captured) vs
   ``run_js_command`` through the warm pool (argument scan, module graph, job protocol,
   worker Runtime, output back). Target: warm p50 <= 5 ms.
2. A skill script of 3 modules (entry + 2 relative imports + ``@tauritavern/runtime``) through
   the V5 command and through the legacy engine (``run_skill_script``), vs bare jsbox.
3. Throughput: jobs per second with 2 workers, fed by 4 threads. Target >= 200 jobs/s.
4. Worker startup: spawn to ready, and the cost of a cancel that has to kill and replace a
   worker running a pure CPU loop.

Usage: ``.venv/bin/python bench/js_sandbox.py [--runs N] [--jobs N]``. Not a test.
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="samples per case (default 300)")
    parser.add_argument("--jobs", type=int, default=2000, help="jobs for throughput")
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
    pooled = samples_ms(lambda: js("-e", "console.log(1)"), options.runs)
    report("bare jsbox in-process (baseline)", bare)
    report("run_js_command through the warm pool", pooled, bare)
    print(f"  overhead p50: {statistics.median(pooled) - statistics.median(bare):.3f} ms "
          f"(target: pool p50 <= 5 ms)")

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

    print("3. throughput with 2 workers, 4 submitting threads")
    per_thread = options.jobs // 4

    def feed() -> None:
        for _ in range(per_thread):
            js("-e", "console.log(1)")

    threads = [threading.Thread(target=feed) for _ in range(4)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    print(f"  {per_thread * 4} jobs in {elapsed:.2f} s = {per_thread * 4 / elapsed:.0f} jobs/s "
          f"(target >= 200 jobs/s)")

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
