"""Benchmark (table, last row): the first tool call of a fresh process (not a test).

Each sample is a fresh ``python`` subprocess; the kinds run interleaved (``-c pass``,
``import tavernlab``, the first call, its plain floor...), so the load of a shared machine
hits them alike:

(a) ``import tavernlab``;
(b) the first ``workspace.write_file`` of a fresh process: ``import tempfile; from tavernlab
    import Lab``, a lab in a fresh directory, ``lab.start_run(chat_id='c')`` and
    ``run.call_tool('workspace.write_file', {'path': 'output/a.md', 'content': 'x'})``, then
    the directory removed;
(f) the plain floor of (b): a fresh process that writes the same files in plain Python
    (``json`` and ``os``, no tavernlab, no pydantic): ``import tempfile``, a fresh directory,
    every directory (b) made, then every record (b) wrote, in (b)'s order and by the same
    operation (exclusive create, temporary file and rename, one locked append per log write
    with the lines that write added, a plain write for a lock or text file), each JSON record
    encoded again with ``json``, then the directory removed. What (b) writes is traced once
    per run from Python's audit events in a fresh process (:func:`trace_first_call`); a
    file replaced several times (``run.json``) is written each time with its final content.
    ``tests/test_bench_imports.py`` pins the floor's files and line counts to (b)'s;
(c) ``python -c pass``, for reference;

and, for reference, what pydantic alone costs (import, one model, one validation) and (b) with
pydantic's plugin discovery switched off (``PYDANTIC_DISABLE_PLUGINS=__all__``, pydantic's own
variable: tavernlab never sets it), so the report can say what of (b) is pydantic's floor.

Printed: the median wall time of each (and the CPU time the children used, less sensitive to
the load), the ratio (b)/(f) (the median of the per-sample ratios) and the target: (b) <= 2.5x
its plain floor (f), measured in the same run, with the load average read before and after
the samples (a busy machine makes the row noisy). Then where (b) spends its time: the median
of each step inside the process (and, in other fresh processes, of a second ``start_run`` and
its first call after the first ones), and the top 10 modules by cumulative and by self import
time (``-X importtime``, medians over a few runs). ``-X importtime`` sees ``import``
statements only: a module a lazy face loads (``importlib.import_module``) is not listed and
its time counts as its importer's own, so the last lines come from another fresh process that
times each module's own load, every load included (:data:`COUNTS`), and counts what (b) makes:
the pydantic models it defines, the validators it builds, its dataclasses, its modules (the
top 10 tavernlab modules are listed with the models and dataclasses each defines). Bytecode
is cached in a temporary ``PYTHONPYCACHEPREFIX`` (warmed first), as it is for an installed
package, even when the environment sets ``PYTHONDONTWRITEBYTECODE``.

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
from typing import Any

from timing import Row, emit, load_average, table_options

FIRST_CALL = (
    "import time; _t0 = time.perf_counter()\n"
    "import tempfile; from tavernlab import Lab\n"
    "_t1 = time.perf_counter(); d = tempfile.mkdtemp(); lab = Lab(d)\n"
    "_t2 = time.perf_counter(); run = lab.start_run(chat_id='c')\n"
    "_t3 = time.perf_counter()\n"
    "run.call_tool('workspace.write_file', {'path': 'output/a.md', 'content': 'x'})\n"
    "_t4 = time.perf_counter()\n"
    "import json, shutil; shutil.rmtree(d)\n"
    "print(json.dumps([_t1 - _t0, _t2 - _t1, _t3 - _t2, _t4 - _t3]))\n"
)
#: The figures of a second run in the same process (where the table is not measured).
AGAIN = (
    "import time, tempfile; from tavernlab import Lab\n"
    "d = tempfile.mkdtemp(); lab = Lab(d); run = lab.start_run(chat_id='c')\n"
    "run.call_tool('workspace.write_file', {'path': 'output/a.md', 'content': 'x'})\n"
    "_t0 = time.perf_counter(); again = lab.start_run(chat_id='c')\n"
    "_t1 = time.perf_counter()\n"
    "again.call_tool('workspace.write_file', {'path': 'output/a.md', 'content': 'x'})\n"
    "_t2 = time.perf_counter()\n"
    "import json, shutil; shutil.rmtree(d)\n"
    "print(json.dumps([_t1 - _t0, _t2 - _t1]))\n"
)
#: (b) in a fresh directory ``sys.argv[1]`` under Python's audit hook: prints, as JSON, each
#: directory it made and each record it wrote, in order, with the content (the final
#: content of a created or replaced file; the lines a log write added), and the final tree
#: (each file and its line count).
TRACE = r'''
import json, os, sys
d = os.path.realpath(sys.argv[1])
events = []

def rel(path):
    if not isinstance(path, (str, bytes, os.PathLike)):
        return None
    full = os.path.realpath(os.fsdecode(path))
    return os.path.relpath(full, d) if full.startswith(d + os.sep) else None

def hook(event, args):
    if event == "open":
        path, flags = rel(args[0]), args[2] if len(args) > 2 else 0
        if path is None or not isinstance(flags, int):
            return
        if flags & os.O_APPEND:
            full = os.path.join(d, path)
            events.append(["append", path, os.path.getsize(full) if os.path.exists(full) else 0])
        elif flags & os.O_EXCL:
            events.append(["staged", path])
        elif flags & (os.O_WRONLY | os.O_RDWR):
            events.append(["write", path])
    elif event in ("os.rename", "os.link", "os.mkdir"):
        path = rel(args[1] if event != "os.mkdir" else args[0])
        if path is not None:
            staged = rel(args[0]) if event != "os.mkdir" else None
            events.append([{"os.rename": "replace", "os.link": "create",
                            "os.mkdir": "mkdir"}[event], path, staged])

sys.addaudithook(hook)
from tavernlab import Lab
lab = Lab(d)
run = lab.start_run(chat_id="c")
run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "x"})
lab.close()
# a failed attempt (its directory did not exist yet) is retried with the same staged file
done = [e for i, e in enumerate(events)
        if not (e[0] in ("replace", "create") and e in events[i + 1:])]
published = {e[2] for e in done if e[0] in ("replace", "create")}
ends = {}
for e in reversed(done):
    if e[0] == "append":
        e.append(ends.get(e[1]))
        ends[e[1]] = e[2]

def content(path):
    with open(os.path.join(d, path), encoding="utf-8") as handle:
        text = handle.read()
    return ["json", json.loads(text)] if path.endswith(".json") else ["text", text]

records, dirs = [], []
for e in done:
    if e[0] == "mkdir":
        if e[1] not in dirs and os.path.isdir(os.path.join(d, e[1])):
            dirs.append(e[1])
    elif e[0] == "append":
        with open(os.path.join(d, e[1]), "rb") as handle:
            handle.seek(e[2])
            data = handle.read() if e[3] is None else handle.read(e[3] - e[2])
        records.append(["append", e[1], [json.loads(line) for line in data.splitlines()]])
    elif e[0] in ("replace", "create"):
        if os.path.isfile(os.path.join(d, e[1])):
            records.append([e[0], e[1], content(e[1])])
    elif e[0] == "write" and e[1] not in published:
        if os.path.isfile(os.path.join(d, e[1])) and [e[0], e[1]] not in [r[:2] for r in records]:
            records.append(["write", e[1], content(e[1])])
tree = {}
for root, _, files in os.walk(d):
    for name in files:
        full = os.path.join(root, name)
        with open(full, "rb") as handle:
            tree[os.path.relpath(full, d)] = len(handle.read().splitlines())
print(json.dumps({"dirs": dirs, "records": records, "tree": tree}))
'''
#: The floor's own code (its records are appended by :func:`floor_code`).
FLOOR_BODY = r'''
import fcntl, json, os, shutil, sys, tempfile
d = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()

def encode(data):
    kind, value = data
    if kind == "json":
        return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode()
    return value.encode()

for rel in DIRS:
    os.makedirs(os.path.join(d, rel), exist_ok=True)
for n, (operation, rel, data) in enumerate(RECORDS):
    path = os.path.join(d, rel)
    if operation == "append":
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, "".join(json.dumps(line, ensure_ascii=False) + "\n"
                                 for line in data).encode())
        finally:
            os.close(fd)
    elif operation == "write":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, encode(data))
        finally:
            os.close(fd)
    else:
        temp = os.path.join(os.path.dirname(path), f".floor-{n}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, encode(data))
        finally:
            os.close(fd)
        if operation == "create":
            os.link(temp, path)
            os.unlink(temp)
        else:
            os.replace(temp, path)
if len(sys.argv) == 1:
    shutil.rmtree(d)
'''
#: The floor pydantic alone sets: import it, define one model and validate one instance.
PYDANTIC_FLOOR = ("from pydantic import BaseModel\n"
                  "class Probe(BaseModel):\n    x: int\n"
                  "Probe(x=1)\n")
#: (b) with pydantic's plugin discovery (a scan of every installed distribution's entry
#: points on the first validator built) switched off by its documented variable.
NO_PLUGINS = ("import os; os.environ['PYDANTIC_DISABLE_PLUGINS'] = '__all__'\n" + FIRST_CALL)
KINDS = {"pass": "pass", "import": "import tavernlab", "first": FIRST_CALL,
         "pydantic": PYDANTIC_FLOOR, "no-plugins": NO_PLUGINS, "again": AGAIN}
STEPS = ("import tempfile + tavernlab.Lab", "Lab(path)", "lab.start_run", "first call_tool")
AGAIN_STEPS = ("(then) a second start_run", "(then) its first call_tool")
#: The target: (b) at most this many times its plain floor (f).
LIMIT = 2.5
#: Top-level packages counted as pydantic's own import.
PYDANTIC = frozenset({"pydantic", "pydantic_core", "annotated_types", "typing_extensions",
                      "typing_inspection"})


#: (b) in a fresh process that counts what it makes, and times each module's own load (its
#: code, without the modules it imports in turn), every load included: ``-X importtime``
#: reports only ``import`` statements, so a module a lazy face loads by
#: ``importlib.import_module`` is missing there and its time counts as its importer's own.
#: Prints, as JSON, the pydantic models defined and the validators built (by the module that
#: defines the model), the dataclasses made, and each module's own load time (ms).
COUNTS = r'''
import importlib._bootstrap as bootstrap, json, sys, time
own, stack, load = {}, [], bootstrap._load_unlocked

def counting_define(mcs, name, bases, namespace, *args, **kwargs):
    cls = define(mcs, name, bases, namespace, *args, **kwargs)
    defined[cls.__module__] += 1
    return cls

def counting_complete(cls, *args, **kwargs):
    built[cls.__module__] += 1
    return complete(cls, *args, **kwargs)

def counting_process(cls, *args, **kwargs):
    made[cls.__module__] += 1
    return process(cls, *args, **kwargs)

def timed_load(spec):
    start = time.perf_counter()
    stack.append(0.0)
    try:
        return load(spec)
    finally:
        spent, inner = time.perf_counter() - start, stack.pop()
        own[spec.name] = own.get(spec.name, 0.0) + (spent - inner) * 1000
        if stack:
            stack[-1] += spent

bootstrap._load_unlocked = timed_load  # first: pydantic's own modules are timed too
import dataclasses
from collections import Counter
from pydantic._internal import _model_construction as construction

defined, built, made = Counter(), Counter(), Counter()
define, complete, process = (construction.ModelMetaclass.__new__,
                             construction.complete_model_class, dataclasses._process_class)
construction.ModelMetaclass.__new__ = counting_define
construction.complete_model_class = counting_complete
dataclasses._process_class = counting_process
''' + FIRST_CALL + r'''
print(json.dumps({"defined": defined, "built": built, "made": made, "own": own,
                  "modules": sorted(sys.modules)}))
'''


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


def trace_first_call(env: dict[str, str]) -> dict[str, Any]:
    """What (b) writes, traced in a fresh process (:data:`TRACE`): ``dirs`` (each directory
    made, in order), ``records`` (``[operation, path, content]`` in order: ``create``,
    ``replace``, ``append`` or ``write``) and ``tree`` (each file and its line count)."""
    with tempfile.TemporaryDirectory(prefix="tavernlab-bench-trace-") as where:
        done = subprocess.run([sys.executable, "-c", TRACE, where], env=env,
                              capture_output=True, text=True, check=True)
    traced: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return traced


def floor_code(traced: dict[str, Any]) -> str:
    """The plain floor (f) of the traced call: the same directories and records written by
    plain Python (:data:`FLOOR_BODY`). Run with a directory argument it writes there and
    keeps it; with none, a fresh temporary directory, removed at the end."""
    return (f"DIRS = {traced['dirs']!r}\nRECORDS = {traced['records']!r}\n" + FLOOR_BODY)


def describe(traced: dict[str, Any]) -> str:
    """The row's note: what the floor writes."""
    operations = [record[0] for record in traced["records"]]
    counts = ", ".join(f"{operations.count(op)} {op}" for op in
                       ("create", "replace", "append", "write") if op in operations)
    return (f"floor writes the call's {len(traced['tree'])} files ({len(traced['dirs'])} "
            f"directories; {counts}) with json + os in a fresh process")


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


def what_it_makes(env: dict[str, str], runs: int) -> tuple[dict[str, Any], Ranking, Ranking]:
    """What (b) makes (:data:`COUNTS`: the counts by module, from the last of ``runs``), the
    top 10 tavernlab modules by own load time and the own load time by group (ms, medians
    over ``runs``)."""
    own: dict[str, list[float]] = defaultdict(list)
    groups: dict[str, list[float]] = defaultdict(list)
    report: dict[str, Any] = {}
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", COUNTS], env=env, capture_output=True,
                              text=True, check=True)
        report = json.loads(done.stdout.splitlines()[-1])
        totals: dict[str, float] = defaultdict(float)
        for name, spent in report["own"].items():
            own[name].append(spent)
            totals[group(name)] += spent
        for name, total in totals.items():
            groups[name].append(total)
    medians = {name: statistics.median(values) for name, values in own.items()
               if group(name) == "tavernlab"}
    top = sorted(medians.items(), key=lambda item: -item[1])[:10]
    by_group = sorted(((name, statistics.median(values)) for name, values in groups.items()),
                      key=lambda item: -item[1])
    return report, top, by_group


def describe_made(report: dict[str, Any]) -> str:
    """One line: the tavernlab models, validators and dataclasses (b) made, and its modules."""

    def count(kind: str) -> tuple[int, int]:
        ours = {module: n for module, n in report[kind].items() if group(module) == "tavernlab"}
        return sum(ours.values()), len(ours)

    (models, homes), (validators, _), (dataclasses, _) = map(count, ("defined", "built", "made"))
    modules = report["modules"]
    return (f"(b) defines {models} tavernlab pydantic models (in {homes} modules) and builds "
            f"{validators} validators; makes {dataclasses} tavernlab dataclasses; loads "
            f"{len(modules)} modules ({sum(1 for m in modules if group(m) == 'tavernlab')} "
            "tavernlab's)")


def measure(samples: int, profile_runs: int) -> tuple[list[Row], list[str]]:
    """The row, and the lines that say where the time goes."""
    with tempfile.TemporaryDirectory(prefix="tavernlab-bench-pyc-") as cache:
        env = environment(cache)
        traced = trace_first_call(env)
        kinds = {**KINDS, "floor": floor_code(traced)}
        for code in kinds.values():  # warm the bytecode cache and the page cache
            sample(code, env)
            sample(code, env)
        walls: dict[str, list[float]] = defaultdict(list)
        cpus: dict[str, list[float]] = defaultdict(list)
        steps: list[list[float]] = []
        again: list[list[float]] = []
        load_before = load_average()
        for _ in range(samples):
            for kind, code in kinds.items():
                elapsed, used, out = sample(code, env)
                walls[kind].append(elapsed)
                cpus[kind].append(used)
                if kind == "first":
                    steps.append([s * 1000 for s in json.loads(out)])
                elif kind == "again":
                    again.append([s * 1000 for s in json.loads(out)])
        load_after = load_average()
        cumulative, own, groups = import_profile(env, profile_runs)
        made, own_loads, load_groups = what_it_makes(env, profile_runs)
    wall = {kind: statistics.median(values) for kind, values in walls.items()}
    cpu = {kind: statistics.median(values) for kind, values in cpus.items()}
    ratios = [b / f for b, f in zip(walls["first"], walls["floor"], strict=True)]
    cpu_ratio = cpu["first"] / cpu["floor"]
    lines = [f"fresh processes, {samples} samples each, interleaved (median wall / child CPU):"]
    for kind, label in (("import", "(a) import tavernlab"), ("first", "(b) first write_file"),
                        ("floor", "(f) its plain floor"), ("pass", "(c) python -c pass")):
        lines.append(f"  {label:24} {wall[kind]:7.1f} ms wall  {cpu[kind]:7.1f} ms CPU")
    lines.append(f"  (b)/(f) {statistics.median(ratios):.2f}x wall, {cpu_ratio:.2f}x CPU; "
                 f"(b) - (f) {wall['first'] - wall['floor']:.1f} ms; target (b) <= "
                 f"{LIMIT}x (f)")
    lines.append(f"  (f): {describe(traced)}")
    lines.append(f"  for reference: pydantic alone (import, one model, one validation) "
                 f"{wall['pydantic']:.1f} ms wall {cpu['pydantic']:.1f} ms CPU, "
                 f"{wall['pydantic'] / wall['floor']:.2f}x (f) wall, "
                 f"{cpu['pydantic'] / cpu['floor']:.2f}x (f) CPU; (b) with "
                 f"PYDANTIC_DISABLE_PLUGINS=__all__ {wall['no-plugins']:.1f} ms wall "
                 f"{cpu['no-plugins']:.1f} ms CPU")
    lines.append("where (b) goes, inside the process (median ms):")
    for index, step in enumerate(STEPS):
        lines.append(f"  {step:32} {statistics.median(s[index] for s in steps):7.1f}")
    for index, step in enumerate(AGAIN_STEPS):
        lines.append(f"  {step:32} {statistics.median(s[index] for s in again):7.1f}")
    for title, table in (("top 10 modules by cumulative", cumulative),
                         ("top 10 modules by self", own), ("self time by group of", groups)):
        lines.append(f"(b): {title} import time (-X importtime, median of {profile_runs} "
                     "runs; importtime itself adds overhead):")
        lines += [f"  {ms_value:7.1f} ms  {name}" for name, ms_value in table]
    lines.append(describe_made(made))
    lines.append(f"(b): top 10 tavernlab modules by own load time (every load, a lazy face's "
                 f"too; median of {profile_runs} runs; models defined, dataclasses made):")
    lines += [f"  {ms_value:7.1f} ms  {name} ({made['defined'].get(name, 0)} models, "
              f"{made['made'].get(name, 0)} dataclasses)" for name, ms_value in own_loads]
    lines.append("(b): own load time by group (every load):")
    lines += [f"  {ms_value:7.1f} ms  {name}" for name, ms_value in load_groups]
    first = Row("first tool call of a fresh process", f"{wall['first']:.1f} ms",
                f"plain floor {wall['floor']:.1f} ms", statistics.median(ratios),
                (min(ratios), max(ratios)), f"<= {LIMIT}x the plain floor",
                statistics.median(ratios) <= LIMIT,
                f"CPU {cpu['first']:.0f} ms vs {cpu['floor']:.0f} ms ({cpu_ratio:.2f}x); "
                f"import tavernlab {wall['import']:.1f} ms; python -c pass "
                f"{wall['pass']:.1f} ms; {describe(traced)}",
                load=(load_before, load_after))
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
