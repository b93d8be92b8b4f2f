"""Benchmark (table, last row): the first tool call of a fresh process (not a test).

Each sample is a fresh ``python`` subprocess; the three kinds run interleaved (``-c pass``,
``import tavernlab``, the first call), so the load of a shared machine hits them alike:

(a) ``import tavernlab``;
(b) the first ``workspace.write_file`` of a fresh process: ``import tempfile; from tavernlab
    import Lab``, a lab in a fresh directory, ``lab.start_run(chat_id='c')`` and
    ``run.call_tool('workspace.write_file', {'path': 'output/a.md', 'content': 'x'})``;
(c) ``python -c pass``, the baseline;

and, for reference, what pydantic alone costs (import, one model, one validation) and (b) with
pydantic's plugin discovery switched off (``PYDANTIC_DISABLE_PLUGINS=__all__``, pydantic's own
variable: tavernlab never sets it), so the report can say what of (b) is pydantic's floor.

Printed: the median wall time of each (and the CPU time the children used, less sensitive to
the load), the ratio (b)/(c), and the target: (b) <= 50 ms absolute. Then where (b) spends its
time: the median of each step inside the process, and the top 10 modules by cumulative and by
self import time (``-X importtime``, medians over a few runs). Bytecode is cached in a
temporary ``PYTHONPYCACHEPREFIX`` (warmed first), as it is for an installed package, even when
the environment sets ``PYTHONDONTWRITEBYTECODE``.

Usage: ``.venv/bin/python bench/imports.py [--samples N] [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

from timing import Row, emit, table_options

FIRST_CALL = (
    "import time; _t0 = time.perf_counter()\n"
    "import tempfile; from tavernlab import Lab\n"
    "_t1 = time.perf_counter(); d = tempfile.mkdtemp(); lab = Lab(d)\n"
    "_t2 = time.perf_counter(); run = lab.start_run(chat_id='c')\n"
    "_t3 = time.perf_counter()\n"
    "run.call_tool('workspace.write_file', {'path': 'output/a.md', 'content': 'x'})\n"
    "_t4 = time.perf_counter(); again = lab.start_run(chat_id='c')\n"
    "_t5 = time.perf_counter()\n"
    "again.call_tool('workspace.write_file', {'path': 'output/a.md', 'content': 'x'})\n"
    "_t6 = time.perf_counter()\n"
    "import json, shutil; shutil.rmtree(d)\n"
    "print(json.dumps([_t1 - _t0, _t2 - _t1, _t3 - _t2, _t4 - _t3, _t5 - _t4, _t6 - _t5]))\n"
)
#: The floor pydantic alone sets: import it, define one model and validate one instance.
PYDANTIC_FLOOR = ("from pydantic import BaseModel\n"
                  "class Probe(BaseModel):\n    x: int\n"
                  "Probe(x=1)\n")
#: (b) with pydantic's plugin discovery (a scan of every installed distribution's entry
#: points on the first validator built) switched off by its documented variable.
NO_PLUGINS = ("import os; os.environ['PYDANTIC_DISABLE_PLUGINS'] = '__all__'\n" + FIRST_CALL)
KINDS = {"pass": "pass", "import": "import tavernlab", "first": FIRST_CALL,
         "pydantic": PYDANTIC_FLOOR, "no-plugins": NO_PLUGINS}
STEPS = ("import tempfile + tavernlab.Lab", "Lab(path)", "lab.start_run", "first call_tool",
         "(then) a second start_run", "(then) its first call_tool")
#: Top-level packages counted as pydantic's own import.
PYDANTIC = frozenset({"pydantic", "pydantic_core", "annotated_types", "typing_extensions",
                      "typing_inspection"})


def environment(cache: str) -> dict[str, str]:
    """The children's environment: bytecode cached under ``cache``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def sample(code: str, env: dict[str, str]) -> tuple[float, float, str]:
    """``(wall ms, child CPU ms, stdout)`` of one fresh ``python -c code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, done.stdout


def group(module: str) -> str:
    """Who a module belongs to: tavernlab, pydantic (and its helpers), stdlib or other."""
    top = module.split(".")[0]
    if top == "tavernlab":
        return "tavernlab"
    if top in PYDANTIC:
        return "pydantic"
    return "stdlib" if top in sys.stdlib_module_names else "other"


Ranking = list[tuple[str, float]]


def import_profile(env: dict[str, str], runs: int) -> tuple[Ranking, Ranking, Ranking]:
    """Top 10 modules of (b) by cumulative and by self import time, and the self time by
    group (ms, medians over ``runs``)."""
    cumulative: dict[str, list[float]] = defaultdict(list)
    own: dict[str, list[float]] = defaultdict(list)
    groups: dict[str, list[float]] = defaultdict(list)
    for _ in range(runs):
        totals: dict[str, float] = defaultdict(float)
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", FIRST_CALL], env=env,
                              capture_output=True, text=True, check=True)
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "cumulative" in line:
                continue
            self_us, cumulative_us, name = line.removeprefix("import time:").split("|")
            cumulative[name.strip()].append(int(cumulative_us) / 1000)
            own[name.strip()].append(int(self_us) / 1000)
            totals[group(name.strip())] += int(self_us) / 1000
        for name, total in totals.items():
            groups[name].append(total)

    def top(table: dict[str, list[float]]) -> list[tuple[str, float]]:
        medians = {name: statistics.median(values) for name, values in table.items()}
        return sorted(medians.items(), key=lambda item: -item[1])[:10]

    return top(cumulative), top(own), top(groups)


def measure(samples: int, profile_runs: int) -> tuple[list[Row], list[str]]:
    """The row, and the lines that say where the time goes."""
    with tempfile.TemporaryDirectory(prefix="tavernlab-bench-pyc-") as cache:
        env = environment(cache)
        for code in KINDS.values():  # warm the bytecode cache and the page cache
            sample(code, env)
            sample(code, env)
        walls: dict[str, list[float]] = defaultdict(list)
        cpus: dict[str, list[float]] = defaultdict(list)
        steps: list[list[float]] = []
        for _ in range(samples):
            for kind, code in KINDS.items():
                elapsed, used, out = sample(code, env)
                walls[kind].append(elapsed)
                cpus[kind].append(used)
                if kind == "first":
                    steps.append([s * 1000 for s in json.loads(out)])
        cumulative, own, groups = import_profile(env, profile_runs)
    wall = {kind: statistics.median(values) for kind, values in walls.items()}
    cpu = {kind: statistics.median(values) for kind, values in cpus.items()}
    ratios = [b / c for b, c in zip(walls["first"], walls["pass"], strict=True)]
    lines = [f"fresh processes, {samples} samples each, interleaved (median wall / child CPU):"]
    for kind, label in (("import", "(a) import tavernlab"), ("first", "(b) first write_file"),
                        ("pass", "(c) python -c pass")):
        lines.append(f"  {label:24} {wall[kind]:7.1f} ms wall  {cpu[kind]:7.1f} ms CPU")
    lines.append(f"  (b)/(c) {wall['first'] / wall['pass']:.1f}x; (b) - (c) "
                 f"{wall['first'] - wall['pass']:.1f} ms; target (b) <= 50 ms")
    lines.append(f"  for reference: pydantic alone (import, one model, one validation) "
                 f"{wall['pydantic']:.1f} ms wall {cpu['pydantic']:.1f} ms CPU; (b) with "
                 f"PYDANTIC_DISABLE_PLUGINS=__all__ {wall['no-plugins']:.1f} ms wall "
                 f"{cpu['no-plugins']:.1f} ms CPU")
    lines.append("where (b) goes, inside the process (median ms):")
    for index, step in enumerate(STEPS):
        lines.append(f"  {step:32} {statistics.median(s[index] for s in steps):7.1f}")
    for title, table in (("top 10 modules by cumulative", cumulative),
                         ("top 10 modules by self", own), ("self time by group of", groups)):
        lines.append(f"(b): {title} import time (-X importtime, median of {profile_runs} "
                     "runs; importtime itself adds overhead):")
        lines += [f"  {ms_value:7.1f} ms  {name}" for name, ms_value in table]
    first = Row("first tool call of a fresh process", f"{wall['first']:.1f} ms",
                f"python -c pass {wall['pass']:.1f} ms", statistics.median(ratios),
                (min(ratios), max(ratios)), "<= 50 ms", wall["first"] <= 50.0,
                f"import tavernlab {wall['import']:.1f} ms; CPU {cpu['first']:.0f} ms vs "
                f"{cpu['pass']:.0f} ms")
    return [first], lines


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=21, help="samples per kind (>= 15)")
    table_options(parser)
    options = parser.parse_args()
    samples = max(15, options.samples)
    rows, lines = measure(samples, 3 if options.quick else 5)
    if not options.json:
        print("\n".join(lines))
        print()
    else:
        print("\n".join(lines), file=sys.stderr)
    emit(rows, options.json)


if __name__ == "__main__":
    main()
