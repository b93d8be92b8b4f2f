"""Benchmark: importing each script-kit module, against bare jsbox loading the same source.

For every ``@tauritavern/kit/*`` module, the script
``import * as m from '<module>'; console.log(Object.keys(m).length)`` is measured as:

1. bare jsbox in this process (baseline): a fresh ``Runtime`` with the sandbox's limits, the
   built kit source and the script registered as modules, evaluated, console captured;
2. ``run_js_command`` through a warm pool (the kit source is memoized in the parent after the
   first import; each job still gets a fresh Runtime that compiles and evaluates the module);
3. the first job of a freshly started worker (the pool is warmed first, so process spawn is not
   counted; each sample uses a new one-worker pool);
4. reading the built module from the per-user cache (what the first import of a process adds
   in the parent: file read + SHA-256 check against the manifest).

Also printed: the same job without any import (the sandbox's fixed cost). Medians and p90s in
ms, ratios against the baseline. The kit is fetched first if it is not cached (uses
``$TAVERNLAB_KIT_CACHE`` / ``$TAVERNLAB_NPM_REGISTRY`` like ``tavernlab kit fetch``).

Usage: ``.venv/bin/python bench/kit.py [--runs N] [--cold N]``. Not a test.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import jsbox

from tavernlab.js import WorkerPool, run_js_command
from tavernlab.js._limits import MEMORY_LIMIT, STACK_LIMIT
from tavernlab.js.kit import KitPin, KitSettings, fetch_kit
from tavernlab.js.kit._pins import PINS
from tavernlab.workspace.macros import FrozenContext, FrozenMacros
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.scope._scope import Policy
from tavernlab.workspace.storage import WorkspaceFs

BARE_ENTRY = "/<eval>"


def script(pin: KitPin) -> str:
    """The measured script for one kit module."""
    return f"import * as m from '{pin.module}';\nconsole.log(Object.keys(m).length);\n"


def samples_ms(action: Callable[[], object], runs: int, warmup: int = 3) -> list[float]:
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
    """The 90th percentile (the maximum for fewer than two samples)."""
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else max(values)


def cell(values: list[float], baseline: list[float] | None = None) -> str:
    """``p50 / p90 (xratio)``."""
    text = f"{statistics.median(values):7.2f} /{p90(values):7.2f}"
    if baseline is not None:
        text += f" (x{statistics.median(values) / statistics.median(baseline):4.1f})"
    return text


def bare_jsbox(modules: dict[str, str]) -> list[object]:
    """Fresh Runtime with the sandbox's limits, ``modules`` registered, the entry evaluated."""
    lines: list[object] = []
    runtime = jsbox.Runtime(memory_limit=MEMORY_LIMIT, max_stack_size=STACK_LIMIT,
                            on_console=lambda level, args: lines.append(args))
    for name, source in modules.items():
        runtime.add_static_module(name, source)
    runtime.eval_module(BARE_ENTRY, timeout=30)
    return lines


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="warm samples per module")
    parser.add_argument("--cold", type=int, default=5, help="cold-worker samples per module")
    options = parser.parse_args()

    settings = KitSettings.from_environment()
    fetched = fetch_kit(settings=settings)
    sources = {result.module.pin.module: result.module.source for result in fetched}
    root = Path(tempfile.mkdtemp(prefix="tavernlab-bench-kit-"))
    (root / "scratch").mkdir()
    scope = ScopedWorkspaceFs(WorkspaceFs(root), Policy.from_profile())
    context = FrozenContext(None, FrozenMacros())

    def js(source: str, pool: WorkerPool) -> object:
        result = run_js_command(["-e", source], scope=scope, context=context, pool=pool)
        assert result.exit_code == 0, result.stderr
        return result

    print(f"Script kit import benchmark (cache {settings.cache.directory}; {options.runs} warm "
          f"and {options.cold} cold-worker samples per module)")
    print("  p50 / p90 ms (x ratio to bare jsbox)")
    with WorkerPool(2) as pool:
        pool.warm()
        plain = samples_ms(lambda: js("console.log(1)", pool), options.runs)
        plain_bare = samples_ms(lambda: bare_jsbox({BARE_ENTRY: "console.log(1)"}),
                                options.runs)
        print(f"  {'no import':<18} {'':>8}  bare {cell(plain_bare)}   warm pool "
              f"{cell(plain, plain_bare)}")
        for pin in PINS:
            source = script(pin)
            modules = {pin.module: sources[pin.module], BARE_ENTRY: source}
            bare = samples_ms(partial(bare_jsbox, modules), options.runs)
            warm = samples_ms(partial(js, source, pool), options.runs)
            cold = [first_job_ms(js, source) for _ in range(options.cold)]
            read = samples_ms(partial(settings.cache.read, pin), options.runs)
            size = len(sources[pin.module].encode("utf-8"))
            print(f"  {pin.name:<18} {size:>8} B")
            print(f"      bare jsbox {cell(bare)}   warm pool {cell(warm, bare)}   first job "
                  f"of a new worker {cell(cold, bare)}   cache read {cell(read)}")


def first_job_ms(js: Callable[[str, WorkerPool], object], source: str) -> float:
    """The wall time of the first job a freshly started (and ready) worker runs."""
    with WorkerPool(1) as pool:
        pool.warm()
        start = time.perf_counter()
        js(source, pool)
        return (time.perf_counter() - start) * 1000


if __name__ == "__main__":
    main()
