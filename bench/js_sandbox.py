"""Benchmark: the JavaScript sandbox (worker pool) against bare jsbox, measured in one run.

Prints medians (ms), p90s and ratios:

1. ``js -e 'console.log(1)'``: bare jsbox in this process (a fresh ``Runtime`` with the same
   limits, the source registered as a module and evaluated, ``console`` captured) vs
   ``run_js_command`` through the pool (argument scan, module graph, job protocol, worker
   Runtime, output back). "Warm" means an idle worker whose next Runtime is prepared: each
   sample waits ``--idle`` ms first. Back-to-back (no pause: the worker prepares the next
   Runtime while the next job waits) is printed too. Target: warm p50 <= 1.5x bare.
2. A skill script of 3 modules (entry + 2 relative imports + ``@tauritavern/runtime``) through
   the V5 command and through the legacy engine (``run_skill_script``), vs bare jsbox.
3. Throughput with 2 workers, fed by 2 submitting threads, vs the baseline: a **lean** jsbox
   pool, the least protocol that runs a job (2 worker processes, each driven by its own
   thread: one byte down a pipe, a fresh Runtime runs the same module, one byte back).
   Baseline and tavernlab batches alternate in rounds; the ratio is the median of the rounds'
   rate ratios. Target: >= 0.5x the lean pool's rate. 1 and 4 submitting threads are
   printed beside it (two threads per worker should never be slower than one). Its floor:
   what a worker itself does for one job (the job the pool ran, evaluated in this process by
   the worker's own classes, then the next Runtime prepared; no protocol at all), in CPU time
   against the lean pool's job. With both pools CPU-bound on the same cores, the best rate
   ratio any protocol could reach is the inverse of that floor's ratio.
4. Worker startup: spawn to ready, and the cost of a cancel that has to kill and replace a
   worker running a pure CPU loop.

Usage: ``.venv/bin/python bench/js_sandbox.py [--runs N] [--jobs N] [--idle MS] [--quick]
[--json]``. Not a test. ``--quick`` measures sections 1 and 3 only, with fewer samples;
``--json`` ends with the table's rows (warm latency, throughput with 2 submitting threads).
The machine's load matters (2 cores shared): the figures are medians, every ratio is
against a baseline measured in the same run, interleaved with it, and each row carries the
load average before and after its samples (noisy above 1.5). The temporary workspace is
removed at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import jsbox
from timing import Comparison, Row, emit, load_average, row, table_options

from tavernlab.cancel import CancelToken
from tavernlab.js import SkillScriptRequest, WorkerPool, run_js_command, run_skill_script
from tavernlab.js._engine import load_engine
from tavernlab.js._job import Job
from tavernlab.js._limits import MEMORY_LIMIT, STACK_LIMIT
from tavernlab.js._process import WorkerProcess
from tavernlab.js._worker import JobRunner, SpareRuntime
from tavernlab.workspace.macros import FrozenContext, FrozenMacros
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.scope._scope import Policy
from tavernlab.workspace.storage import WorkspaceFs

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


def warm_samples_ms(action: Callable[[], object], runs: int, idle_ms: float,
                    warmup: int = 5) -> list[float]:
    """Like :func:`samples_ms`, but each sample first leaves the workers ``idle_ms`` idle."""

    def one() -> float:
        time.sleep(idle_ms / 1000)
        start = time.perf_counter()
        action()
        return (time.perf_counter() - start) * 1000

    for _ in range(warmup):
        one()
    return [one() for _ in range(runs)]


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


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of the processes ``pids`` (from ``/proc``)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


class CpuMeter:
    """CPU time spent by this process and the given workers between start and stop."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.parent_start = time.process_time()
        self.workers_start = cpu_seconds(pids)
        self.start = self.parent_start + self.workers_start
        self.split: tuple[float, float] = (0.0, 0.0)

    def per_job_ms(self, jobs: int) -> float:
        """CPU milliseconds per job since the meter started (``split`` keeps the parent's
        and the workers' shares)."""
        parent = (time.process_time() - self.parent_start) / jobs * 1000
        workers = (cpu_seconds(self.pids) - self.workers_start) / jobs * 1000
        self.split = (parent, workers)
        return parent + workers


#: A lean pool worker: after one ``r`` (ready), each byte read runs one job (a fresh Runtime
#: with the sandbox's limits evaluating ``console.log(1)``) and answers ``k``.
LEAN_WORKER = """
import os, jsbox
def job():
    lines = []
    runtime = jsbox.Runtime(memory_limit={memory}, max_stack_size={stack},
                            on_console=lambda level, args: lines.append(args))
    runtime.add_static_module("/<eval>", "console.log(1)")
    runtime.eval_module("/<eval>", timeout=30)
    return len(lines)
os.write(1, b"r")
while os.read(0, 1):
    os.write(1, b"k" if job() == 1 else b"x")
"""


class LeanPool:
    """The throughput baseline: ``size`` worker processes, each driven by its own thread
    (one byte down, one byte back per job); no queue, no pickling, no result thread."""

    def __init__(self, size: int = 2) -> None:
        code = LEAN_WORKER.format(memory=MEMORY_LIMIT, stack=STACK_LIMIT)
        self.workers = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, bufsize=0)
                        for _ in range(size)]
        for worker in self.workers:
            assert worker.stdout is not None and worker.stdout.read(1) == b"r"

    def pids(self) -> list[int]:
        """The worker processes."""
        return [worker.pid for worker in self.workers]

    def throughput(self, jobs: int) -> float:
        """Jobs per second for ``jobs`` jobs spread over the workers."""
        share = jobs // len(self.workers)

        def drive(worker: subprocess.Popen[bytes]) -> None:
            assert worker.stdin is not None and worker.stdout is not None
            down, up = worker.stdin.fileno(), worker.stdout.fileno()
            for _ in range(share):
                os.write(down, b"j")
                assert os.read(up, 1) == b"k"

        threads = [threading.Thread(target=drive, args=(w,)) for w in self.workers]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return share * len(self.workers) / (time.perf_counter() - start)

    def close(self) -> None:
        """End the workers (end of input), and wait for them."""
        for worker in self.workers:
            assert worker.stdin is not None
            worker.stdin.close()
        for worker in self.workers:
            worker.wait(timeout=10)
            assert worker.stdout is not None
            worker.stdout.close()


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
    table_options(parser)
    options = parser.parse_args()
    if options.quick:
        options.runs, options.jobs = min(options.runs, 150), min(options.jobs, 1000)

    root = Path(tempfile.mkdtemp(prefix="tavernlab-bench-"))
    try:
        measure(options, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def measure(options: argparse.Namespace, root: Path) -> None:
    """Every section, in a temporary workspace at ``root``."""
    rows: list[Row] = []
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
    print("1. js -e 'console.log(1)' (baseline and pool interleaved, in rounds)")
    bare: list[float] = []
    warm: list[float] = []
    ratios = []
    before = load_average()
    per_round = max(5, options.runs // 10)
    for _ in range(max(1, options.runs // per_round)):
        theirs = samples_ms(lambda: bare_jsbox({"/<eval>": "console.log(1)"}, "/<eval>"),
                            per_round, warmup=1)
        mine = warm_samples_ms(lambda: js("-e", "console.log(1)"), per_round, options.idle,
                               warmup=1)
        bare += theirs
        warm += mine
        ratios.append(statistics.median(mine) / statistics.median(theirs))
    after = load_average()
    back_to_back = samples_ms(lambda: js("-e", "console.log(1)"), options.runs)
    report("fresh jsbox Runtime in-process (baseline)", bare)
    report(f"warm pool (worker idle {options.idle:g} ms)", warm, bare)
    report("pool back-to-back", back_to_back, bare)
    ratio = statistics.median(ratios)
    print(f"  warm/bare p50 ratio: {ratio:.2f} (target <= 1.5)")
    rows.append(row("warm js -e 'console.log(1)'", Comparison(
        statistics.median(warm), statistics.median(bare), ratio, min(ratios), max(ratios),
        before, after), "fresh jsbox Runtime", 1.5, "<= 1.5x",
        f"p90 {p90(warm):.3f} vs {p90(bare):.3f} ms; back-to-back p50 "
        f"{statistics.median(back_to_back):.3f} ms"))
    if not options.quick:
        modules_section(options, js, pool)
    throughput_section(options, js, pool, rows)
    rows.append(worker_floor_row(scope, context, pool, options.runs))
    if not options.quick:
        workers_section(root, scope, context, pool, cold_pool_ms)
    pool.close()
    emit(rows, options.json)


def modules_section(options: argparse.Namespace, js: Callable[..., object],
                    pool: WorkerPool) -> None:
    """Section 2: a 3-module skill script, V5 command and legacy engine, against bare."""

    print("2. a 3-module skill script")
    bare_modules = {"/scratch/main.js": MAIN.replace("./lib/", "/scratch/lib/").replace(
        "import { workspace } from '@tauritavern/runtime';\n", "const workspace = "
        "{ listFiles: () => [] };\n").replace("process.argv.slice(2)", "['A Title Here']"),
        "/scratch/lib/slug.js": SLUG, "/scratch/lib/count.js": COUNT}
    bare3 = samples_ms(lambda: bare_jsbox(bare_modules, "/scratch/main.js"), options.runs)
    v5 = warm_samples_ms(lambda: js("/scratch/main.js", "A Title Here"), options.runs,
                         options.idle)
    request = SkillScriptRequest(
        skill="bench", entry="scripts/main.js", args={"title": "A Title Here"},
        modules={"scripts/main.js": LEGACY_MAIN, "scripts/lib/slug.js": SLUG,
                 "scripts/lib/count.js": COUNT},
        visible_roots=("output", "scratch"), writable_roots=("output", "scratch"))
    legacy = warm_samples_ms(lambda: run_skill_script(request, pool=pool), options.runs,
                             options.idle)
    report("bare jsbox in-process (baseline)", bare3)
    report("js /scratch/main.js (V5 command, warm)", v5, bare3)
    report("run_skill_script (legacy engine, warm)", legacy, bare3)


def throughput_section(options: argparse.Namespace, js: Callable[..., object],
                       pool: WorkerPool, rows: list[Row]) -> None:
    """Section 3: jobs per second with 2 workers against a lean 2-process jsbox pool, in
    alternating rounds."""
    print("3. throughput with 2 workers (CPU ms per job: parent + workers, load-independent)")
    lean = LeanPool(2)
    try:
        lean.throughput(200)  # warm up
        pool_throughput(js, 200, 2)
        before = load_average()
        batch = max(100, options.jobs // 4)
        theirs, mine, ratios, lean_cpu, our_cpu = [], [], [], [], []
        lean_split: list[tuple[float, float]] = []
        our_split: list[tuple[float, float]] = []
        for _ in range(4):
            meter = CpuMeter(lean.pids())
            theirs.append(lean.throughput(batch))
            lean_cpu.append(meter.per_job_ms(batch // 2 * 2))
            lean_split.append(meter.split)
            meter = CpuMeter(pool.worker_pids())
            mine.append(pool_throughput(js, batch, 2))
            our_cpu.append(meter.per_job_ms(batch // 2 * 2))
            our_split.append(meter.split)
            ratios.append(mine[-1] / theirs[-1])
        after = load_average()
    finally:
        lean.close()
    rate, baseline_rate = statistics.median(mine), statistics.median(theirs)
    print(f"  lean jsbox pool, 2 processes (baseline): {baseline_rate:6.0f} jobs/s   "
          f"{statistics.median(lean_cpu):.3f} CPU ms/job {split_text(lean_split)}")
    print(f"  run_js_command, 2 submitting threads:    {rate:6.0f} jobs/s   "
          f"{statistics.median(our_cpu):.3f} CPU ms/job {split_text(our_split)}   "
          f"x{statistics.median(ratios):.2f}")
    others = {}
    for threads in (1, 4):
        others[threads] = pool_throughput(js, options.jobs // 2, threads)
        print(f"  run_js_command, {threads} submitting thread(s):  {others[threads]:6.0f} jobs/s")
    print("  target: >= 0.5x the lean pool's rate; 2 threads per worker never slower than 1")
    ratio = statistics.median(ratios)
    rows.append(Row("JS throughput, 2 workers (2 submitting threads)", f"{rate:,.0f} jobs/s",
                    f"lean 2-process jsbox pool {baseline_rate:,.0f} jobs/s", ratio,
                    (min(ratios), max(ratios)), ">= 0.5x", ratio >= 0.5,
                    f"rate ratio (higher is better); CPU {statistics.median(our_cpu):.2f} vs "
                    f"{statistics.median(lean_cpu):.2f} ms/job; 1 thread {others[1]:,.0f}, "
                    f"4 threads {others[4]:,.0f} jobs/s", load=(before, after)))


class _Sink:
    """Where the floor's job sends its messages: nowhere (no socket, no pipe)."""

    def send_bytes(self, data: bytes) -> None:
        """Drop ``data``."""

    def poll(self, timeout: float) -> bool:
        """Nothing ever arrives."""
        return False


class _Capture:
    """A pool that keeps the last job it ran (so the floor runs exactly what the pool ran)."""

    def __init__(self, pool: WorkerPool) -> None:
        self.pool = pool
        self.job: Job | None = None

    def run(self, job: Job, server: object, **options: object) -> object:
        """Keep ``job`` and run it in the real pool."""
        self.job = job
        return self.pool.run(job, server, **options)


def worker_floor_row(scope: ScopedWorkspaceFs, context: FrozenContext, pool: WorkerPool,
                     runs: int) -> Row:
    """The floor of the throughput row: what a worker itself does for one job, in this
    process with no protocol at all (the job ``run_js_command`` sent, evaluated by the
    worker's own :class:`JobRunner` in a :class:`SpareRuntime`, then the next Runtime
    prepared), in CPU time, against the lean pool's job (:func:`bare_jsbox`), interleaved.
    Both pools are CPU-bound on the same cores, so with no parent or protocol cost at all the
    rate ratio would be the inverse of this one: a floor above 2x means 0.5x the lean pool's
    rate cannot be reached with a fresh Runtime, the core script and the bootstrap per job."""
    capture = _Capture(pool)
    result = run_js_command(["-e", "console.log(1)"], scope=scope, context=context,
                            pool=capture)
    assert result.exit_code == 0 and capture.job is not None
    job, engine, sink = capture.job, load_engine(), _Sink()
    spare = SpareRuntime(engine)

    def worker_steps() -> None:
        runner = JobRunner(engine, sink, job, time.monotonic() + 30, sink)
        outcome = runner.run(spare)
        assert outcome["status"] == "ok", outcome
        runner.runtime = None
        spare.replenish()

    def lean_job() -> None:
        bare_jsbox({"/<eval>": "console.log(1)"}, "/<eval>")

    per_round = max(50, runs // 3)
    ours: list[float] = []
    theirs: list[float] = []
    before = load_average()
    for action in (worker_steps, lean_job) * 3:
        action()
    for _ in range(7):
        theirs.append(cpu_ms_per_call(lean_job, per_round))
        ours.append(cpu_ms_per_call(worker_steps, per_round))
    ratios = [mine / base for mine, base in zip(ours, theirs, strict=True)]
    ratio = statistics.median(ratios)
    return row("JS throughput: a worker's own work per job, the floor", Comparison(
        statistics.median(ours), statistics.median(theirs), ratio, min(ratios), max(ratios),
        before, load_average()), "lean job", 2.0, "<= 2x",
        f"CPU ms per job in this process, no protocol; at best {1 / ratio:.2f}x the lean "
        "pool's rate", floor=True)


def cpu_ms_per_call(action: Callable[[], object], count: int) -> float:
    """CPU milliseconds of this process per call of ``action`` (``count`` calls)."""
    start = time.process_time()
    for _ in range(count):
        action()
    return (time.process_time() - start) / count * 1000


def split_text(splits: list[tuple[float, float]]) -> str:
    """``(parent P + workers W)``: the medians of the CPU shares per job, in ms."""
    return (f"(parent {statistics.median(p for p, _ in splits):.3f} + workers "
            f"{statistics.median(w for _, w in splits):.3f})")


def workers_section(root: Path, scope: ScopedWorkspaceFs, context: FrozenContext,
                    pool: WorkerPool, cold_pool_ms: float) -> None:
    """Section 4: worker startup and the cost of killing a CPU-bound job."""
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


if __name__ == "__main__":
    main()
