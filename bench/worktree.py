"""Benchmark: worktree provisioning and clone globs against their raw baselines.

Prints medians (ms) and ratios measured in one run:

1. ``worktree.provision`` with no heavy phase vs a raw ``git worktree add`` of the same
   repository (target ratio <= 1.3);
2. cloning a 20,000-file ``node_modules`` through ``cloneGlobs`` vs ``cp -a`` of the same tree.

Usage: ``.venv/bin/python bench/worktree.py [--files N] [--runs N]``. Not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tavernlab.worktree import call_tool
from tavernlab.worktree.globs import clone_entries

IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_repo(base: Path, files: int) -> Path:
    repo = base / "app"
    git(base, "init", "-q", "-b", "main", str(repo))
    for index in range(files):
        path = repo / "src" / f"pkg{index % 40}" / f"module{index}.ts"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"export const value{index} = {index};\n")
    (repo / ".gitignore").write_text("node_modules/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def make_node_modules(root: Path, files: int) -> None:
    for index in range(files):
        path = root / "node_modules" / f"pkg{index % 400}" / "lib" / f"file{index}.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"module.exports = {index};\n")


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def remove_worktree(repo: Path, path: Path, branch: str) -> None:
    git(repo, "worktree", "remove", "--force", str(path))
    git(repo, "branch", "-D", branch)


def bench_provision(repo: Path, runs: int) -> tuple[float, float]:
    raw_times, tool_times = [], []
    pool = repo.parent / "_worktrees"
    for run in range(runs + 1):  # the first round warms caches and is discarded
        raw_dir, raw_branch = pool / f"raw-{run}", f"raw/{run}"
        raw_argv = ["git", "-C", str(repo), "worktree", "add", "-b", raw_branch, str(raw_dir),
                    "main"]
        raw = timed(lambda argv=raw_argv: subprocess.run(argv, check=True, capture_output=True))
        remove_worktree(repo, raw_dir, raw_branch)
        slug = f"tool-{run}"
        tool_input = {"repoRoot": str(repo), "slug": slug, "base": "main"}
        tool = timed(lambda data=tool_input: call_tool("worktree.provision", data))
        remove_worktree(repo, pool / slug, f"wt/{slug}")
        if run:
            raw_times.append(raw)
            tool_times.append(tool)
    return statistics.median(raw_times), statistics.median(tool_times)


def bench_clone(base: Path, files: int, runs: int) -> tuple[float, float]:
    source = base / "clone-src"
    make_node_modules(source, files)
    cp_times, clone_times = [], []
    for run in range(runs + 1):
        cp_dest, clone_dest = base / f"cp-{run}", base / f"clone-{run}"
        cp_dest.mkdir()
        clone_dest.mkdir()
        cp_argv = ["cp", "-a", str(source / "node_modules"), str(cp_dest / "node_modules")]
        cp = timed(lambda argv=cp_argv: subprocess.run(argv, check=True))
        clone = timed(lambda dest=clone_dest: clone_entries(source, dest, ["node_modules"]))
        assert (clone_dest / "node_modules").is_dir()
        shutil.rmtree(cp_dest)
        shutil.rmtree(clone_dest)
        if run:
            cp_times.append(cp)
            clone_times.append(clone)
    return statistics.median(cp_times), statistics.median(clone_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000, help="tracked files in the repo")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--node-modules", type=int, default=20000)
    parser.add_argument("--clone-runs", type=int, default=3)
    args = parser.parse_args()
    os.environ.update(IDENTITY)
    with tempfile.TemporaryDirectory(prefix="tavernlab-bench-") as tmp:
        base = Path(tmp)
        repo = make_repo(base, args.files)
        raw, tool = bench_provision(repo, args.runs)
        print(f"provision, no heavy phase ({args.files} tracked files, {args.runs} runs)")
        print(f"  git worktree add (raw)   median {raw:8.1f} ms")
        print(f"  worktree.provision       median {tool:8.1f} ms")
        print(f"  ratio                           {tool / raw:8.2f}  (target <= 1.3)")
        cp, clone = bench_clone(base, args.node_modules, args.clone_runs)
        print(f"clone of a {args.node_modules}-file node_modules ({args.clone_runs} runs)")
        print(f"  cp -a (raw)              median {cp:8.1f} ms")
        print(f"  cloneGlobs               median {clone:8.1f} ms")
        print(f"  ratio                           {clone / cp:8.2f}")


if __name__ == "__main__":
    main()
