"""Benchmark (table rows 4 and 5): ``workspace.shell`` against bare bashkit and bash (not a
test).

1. ``run.shell('echo hi')``, the full tool call (arguments file, events, stored result, the
   adapter's policy view, Python filesystem bridge, builtins and caps), against a bare
   ``bashkit.Bash().execute_sync("echo hi")`` (a fresh interpreter: what a call must look like
   to the command; the shell keeps its interpreters and resets them instead). Target: <= 2x.
   The adapter alone (``execute_shell``), its native floor (a kept interpreter's reset,
   prelude and command, nothing else) and a reused bare interpreter are printed beside it.
2. A 5-command pipeline (``find | sort | head | xargs grep -l | wc -l``) over a workspace of
   1,000 and of 10,000 files, as a full ``run.shell`` call, against ``bash -c`` running the
   same pipeline on the same tree (a real process, real files). Target: <= 3x. Measured on a
   fresh directory of tmpfs and of the real disk.
3. The glue floor of that pipeline: the same kept bashkit interpreter kind, the same ctypes
   callbacks (:mod:`tavernlab.shell._vfs_abi`) serving the same tree, but answered by plain
   ``os`` calls (:class:`PlainFs`: no path parsing, no containment walk, no policy, no
   budget, no tool-call records). Printed against ``bash -c`` (a floor row), and the full
   tool call is measured against it (target <= 1.3x). The note gives the callbacks the
   pipeline makes, by kind, with the share of the floor's time each takes.

Usage: ``.venv/bin/python bench/shell.py [--rounds N] [--files 1000,10000] [--quick] [--json]``
(``--files ''``: the echo row alone).
"""

from __future__ import annotations

import argparse
import collections
import os
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import bashkit
from timing import (
    DISK_NOTE,
    Row,
    bench_run,
    compare,
    emit,
    fresh_dir,
    fresh_dirs,
    ms,
    row,
    table_options,
)

from tavernlab.host import Lab
from tavernlab.shell import execute_shell
from tavernlab.shell._engine import prelude
from tavernlab.shell._interpreters import KeptInterpreter
from tavernlab.shell._vfs import VfsError, VfsErrorKind, VfsStat
from tavernlab.shell._vfs_abi import ExportedFilesystem

PIPELINE = ("find {root}scratch/notes -type f -name '*.md' | sort | head -n 800 "
            "| xargs grep -l lantern | wc -l")


def fill(notes: Path, files: int) -> None:
    """``files`` small markdown notes in folders of 50; every third mentions a lantern."""
    for index in range(files):
        folder = notes / f"part{index // 50:04d}"
        if index % 50 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        word = "lantern" if index % 3 == 0 else "candle"
        (folder / f"note{index:05d}.md").write_text(f"# Note {index}\nThe {word} burns.\n")


def echo_row(base: Path, rounds: int) -> Row:
    """``run.shell('echo hi')`` against a fresh bare interpreter."""
    lab = Lab(base / "lab")
    run = bench_run(lab)
    result = compare(lambda: run.shell("echo hi"), lambda: bashkit.Bash().execute_sync("echo hi"),
                     rounds=rounds, per_round=20)
    reused = bashkit.Bash()
    side = compare(lambda: execute_shell(run.internals.scope, run.internals.context, "echo hi"),
                   lambda: reused.execute_sync("echo hi"), rounds=max(3, rounds // 2),
                   per_round=20)
    kept = KeptInterpreter(False)

    def kept_floor() -> None:
        kept.reset()  # what a call on a kept interpreter does natively, and nothing else
        kept.bash.execute_sync(prelude("/", None))
        kept.bash.execute_sync("echo hi", on_output=lambda out, err: None)

    floor = compare(kept_floor, lambda: reused.execute_sync("echo hi"),
                    rounds=max(3, rounds // 2), per_round=20)
    kept.close()
    lab.close()
    return row("run.shell('echo hi'), full tool call", result, "fresh bashkit", 2.0, "<= 2x",
               f"adapter alone {ms(side.figure)}; its native floor (reset, prelude, command "
               f"on a kept interpreter) {ms(floor.figure)}; reused bare Bash {ms(side.baseline)}")


class PlainFs:
    """The glue floor's filesystem: the callbacks a pipeline makes, each one plain ``os``
    call on the host tree below ``root`` (a shell path ``/a/b`` is ``root + "/a/b"``)."""

    def __init__(self, root: str) -> None:
        self.root = root

    def _host(self, path: str) -> str:
        return self.root if path == "/" else self.root + path

    @staticmethod
    def _stat(st: os.stat_result) -> VfsStat:
        return VfsStat(stat.S_ISDIR(st.st_mode), st.st_size, st.st_mode & 0o7777,
                       st.st_mtime, st.st_mtime)

    def read_file(self, path: str) -> bytes:
        """The file's bytes."""
        with open(self._host(path), "rb") as handle:
            return handle.read()

    def stat(self, path: str) -> VfsStat:
        """The node's ``lstat``."""
        try:
            return self._stat(os.lstat(self._host(path)))
        except FileNotFoundError:
            raise VfsError(VfsErrorKind.NOT_FOUND, f"{path}: not found") from None

    def read_dir(self, path: str) -> list[tuple[str, VfsStat]]:
        """One ``scandir``, each entry's ``lstat``."""
        with os.scandir(self._host(path)) as entries:
            return [(e.name, self._stat(e.stat(follow_symlinks=False))) for e in entries]

    def exists(self, path: str) -> bool:
        """``os.path.lexists``."""
        return os.path.lexists(self._host(path))

    def fault(self, error: BaseException) -> None:
        """A floor that faults measures nothing."""
        raise AssertionError(f"the glue floor faulted: {error!r}")


class Counting:
    """A filesystem's callbacks counted and timed by kind (for the floor row's note)."""

    def __init__(self, filesystem: Any) -> None:
        self.filesystem = filesystem
        self.calls: collections.Counter[str] = collections.Counter()
        self.seconds: collections.Counter[str] = collections.Counter()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.filesystem, name)

        def counted(*args: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args)
            finally:
                self.calls[name] += 1
                self.seconds[name] += time.perf_counter() - start
        return counted


def callback_note(floor: bashkit.Bash, exported: ExportedFilesystem, root: str,
                  command: str) -> str:
    """The callbacks ``command`` makes, by kind, with each kind's share of the call."""
    counting = Counting(PlainFs(root))
    exported.retarget(counting)
    start = time.perf_counter()
    floor.execute_sync(command)
    total = time.perf_counter() - start
    exported.retarget(PlainFs(root))
    kinds = ", ".join(f"{name} {calls:,} ({counting.seconds[name] / total:.0%})"
                      for name, calls in counting.calls.most_common())
    return f"callbacks: {kinds}; the rest is bashkit itself"


def pipeline_rows(kind: str, files: int, rounds: int) -> list[Row]:
    """The pipeline over ``files`` files: the full tool call against ``bash -c``, its glue
    floor against ``bash -c``, and the tool call against its glue floor."""
    with fresh_dir(kind) as base:
        lab = Lab(base / "lab")
        run = bench_run(lab)
        fill(run.workspace_dir / "scratch" / "notes", files)
        ours = PIPELINE.format(root="/")
        theirs = PIPELINE.format(root="./")
        expected = run.shell(ours).stdout
        bash = ["bash", "-c", theirs]
        assert subprocess.run(bash, cwd=run.workspace_dir, capture_output=True, text=True,
                              check=True).stdout == expected, "pipelines disagree"
        exported = ExportedFilesystem(PlainFs(str(run.workspace_dir)))
        floor = bashkit.Bash(cwd="/", env={"HOME": "/"},
                             profile=bashkit.ExecutionProfile.Interactive)
        floor.mount("/", exported.bashkit_fs)
        assert floor.execute_sync(ours).stdout == expected, "the glue floor disagrees"
        per_round = 3 if files > 2000 else 5

        def native() -> None:
            subprocess.run(bash, cwd=run.workspace_dir, check=True, stdout=subprocess.DEVNULL)

        def glue() -> None:
            floor.reset()  # what a kept interpreter does between calls
            floor.execute_sync(ours)

        result = compare(lambda: run.shell(ours), native, rounds=rounds, per_round=per_round,
                         warmup=1)
        glued = compare(glue, native, rounds=rounds, per_round=per_round, warmup=1)
        above = compare(lambda: run.shell(ours), glue, rounds=rounds, per_round=per_round,
                        warmup=1)
        note = callback_note(floor, exported, str(run.workspace_dir), ours)
        exported.close()
        lab.close()
    disk = f"; {DISK_NOTE}" if kind == "disk" else ""
    name = f"5-command pipeline, {files:,} files ({kind})"
    return [row(name, result, "bash -c", 3.0, "<= 3x", f"{expected.strip()} files match{disk}"),
            row(f"{name}: glue floor", glued, "bash -c", 3.0, "<= 3x",
                f"the same callbacks, no containment; {note}", floor=True),
            row(f"{name} against its glue floor", above, "glue floor", 1.3, "<= 1.3x",
                disk.lstrip("; "))]


def rows(rounds: int, sizes: tuple[int, ...]) -> list[Row]:
    """Every row of this script."""
    with fresh_dir("tmpfs") as base:
        out = [echo_row(base, rounds)]
    return out + [r for kind in fresh_dirs() for files in sizes
                  for r in pipeline_rows(kind, files, rounds)]


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--files", default="1000,10000")
    table_options(parser)
    options = parser.parse_args()
    sizes = tuple(int(n) for n in options.files.split(",") if n)  # "": the echo row alone
    emit(rows(4 if options.quick else options.rounds, sizes), options.json)


if __name__ == "__main__":
    main()
