"""Benchmark (table rows 1, 2 and 4): the floor under a tool call's records (not a test).

What is the least a ``workspace.write_file``, ``workspace.read_file`` or ``workspace.shell``
call can cost while it keeps every record a call leaves, in upstream's formats?
This script runs one real call, notes every file it wrote from Python's audit events (each
file created, replaced by a rename or appended to, in order: the arguments file, the stored
result, the lines appended to ``events.jsonl`` and ``journal.jsonl``, ``run.json``; each
floor row's note lists them), then times **those same operations in plain Python**: the same
objects encoded again (``json`` for log lines, pydantic-core for the indented files), each
file created, replaced or appended the way the host does it (exclusive create, temporary
file and rename, one locked append per log), and the call's own file work (read, or read and
replace; for the shell, a kept bare bashkit, reset, running the command, as the shell keeps
its interpreters; the shell row's baseline is a fresh one). No tavernlab code runs in the
timed loop: no validation, no containment, no metrics, no ids. A test
(``tests/test_bench_floor.py``) pins each floor to its call: one run of the floor writes the
same files, in the same order, with the same number of lines.

The floor is measured against the same raw baselines as ``bench/write_file.py``,
``bench/read_file.py`` and ``bench/shell.py``, interleaved in the same run. A floor above a
target's ratio shows the target cannot be met by any implementation that keeps the records;
a floor below it puts a number on what the implementation itself may cost.

Usage: ``.venv/bin/python bench/floor.py [--rounds N] [--quick] [--json]``.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bashkit
from pydantic_core import to_json
from timing import (
    DISK_NOTE,
    Row,
    append_locked,
    bench_run,
    compare,
    fresh_dir,
    fresh_dirs,
    rounds_main,
    row,
)

from tavernlab.host import Lab, Run

SIZE = 1024


#: The audit events a :class:`WriteTrace` reads.
_TRACED = ("open", "os.rename", "os.link")
_ACTIVE: list[WriteTrace] = []
_HOOKED = False


def atomic_write(target: Path, data: bytes) -> None:
    """The baseline: temporary sibling, write, rename over ``target``."""
    temp = target.with_name(f".raw-{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(temp, target)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _ACTIVE and event in _TRACED:
        _ACTIVE[-1].note(event, args)


class WriteTrace:
    """The writes of some code below ``root``, from Python's audit events: each file created
    exclusively, each file replaced by a rename (its temporary sibling is not a record) and
    each file opened for appending, in order, by path relative to ``root``. Paths for which
    ``is_work`` is true (the call's own file work) are left out."""

    def __init__(self, root: Path, is_work: Callable[[str], bool] = lambda rel: False) -> None:
        self.root = root.resolve()
        self.is_work = is_work
        self.opened: list[tuple[str, str]] = []
        self.renamed: list[tuple[str, str]] = []
        self.order: list[tuple[str, str]] = []

    def _rel(self, path: Any) -> str | None:
        if not isinstance(path, str | bytes | os.PathLike):
            return None
        text = os.fsdecode(path)
        if not os.path.isabs(text):
            return None
        try:
            return Path(text).resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None

    def note(self, event: str, args: tuple[Any, ...]) -> None:
        """One audit event."""
        if event == "open":
            rel, flags = self._rel(args[0]), args[2] if len(args) > 2 else 0
            if rel is None or not isinstance(flags, int) or self.is_work(rel):
                return
            if flags & os.O_APPEND:
                self.order.append(("append", rel))
            elif flags & os.O_EXCL:
                self.order.append(("create", rel))
        else:
            # A rename publishes a staged file over its target; a link publishes it under a
            # name that must not exist yet (a record written must-not-exist): a create.
            # A staged file of the call's own work (published into the workspace) is work too.
            source, target = self._rel(args[0]), self._rel(args[1])
            if target is None:
                return
            self.order = [item for item in self.order if item != ("create", source)]
            if not self.is_work(target):
                self.order.append(("create" if event == "os.link" else "replace", target))

    def __enter__(self) -> WriteTrace:
        global _HOOKED
        if not _HOOKED:
            sys.addaudithook(_audit)
            _HOOKED = True
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.remove(self)


def _lines(path: Path, offset: int = 0) -> list[str]:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.read().decode("utf-8").splitlines()


class Captured:
    """What one tool call wrote, as plain JSON objects (the floor encodes them again): the
    files it created or replaced (their content) and the lines it appended, in the order it
    wrote them, found by a :class:`WriteTrace` of the call (the call's own file work, under
    ``work_prefix``, left out)."""

    def __init__(self, run: Run, call: Callable[[], object], work_prefix: str = "scratch/"
                 ) -> None:
        self.root = Path(run.dir)
        sizes = {p: p.stat().st_size for p in self.root.rglob("*.jsonl")}
        trace = WriteTrace(self.root, lambda rel: rel.startswith(work_prefix))
        with trace:
            call()
        #: ``(operation, relative path)`` in order: ``create``, ``replace`` or ``append``.
        self.order = trace.order
        self.content: dict[str, Any] = {}
        self.appended: dict[str, list[Any]] = {}
        for operation, rel in self.order:
            path = self.root / rel
            if operation == "append":
                self.appended[rel] = [json.loads(line)
                                      for line in _lines(path, sizes.get(path, 0))]
            else:
                self.content[rel] = json.loads(path.read_text(encoding="utf-8"))

    def summary(self) -> list[tuple[str, str, int]]:
        """``(operation, path, lines)`` of every write: what a floor must write too."""
        return summary(self.root, self.order, {rel: len(v) for rel, v in self.appended.items()})

    def describe(self) -> str:
        """The note of a floor row: exactly what the call writes (and so the floor)."""
        parts = []
        for operation, rel, lines in self.summary():
            shown = _generic(rel)
            if operation == "append":
                parts.append(f"append {lines} line{'s' * (lines != 1)} to {shown}")
            else:
                how = "exclusive create" if operation == "create" else "temp + rename"
                parts.append(f"{operation} {shown} ({how}, {lines} lines)")
        return "writes: " + ", ".join(parts) + " (each log one locked append)"


def summary(root: Path, order: list[tuple[str, str]], appended: dict[str, int]
            ) -> list[tuple[str, str, int]]:
    """``(operation, path, lines)`` for ``order``: a created or replaced file's line count,
    the lines an append added (``appended``)."""
    out = []
    for operation, rel in order:
        if operation == "append":
            out.append((operation, rel, appended[rel]))
        else:
            out.append((operation, rel, len(_lines(root / rel))))
    return out


def _generic(rel: str) -> str:
    """``rel`` with its ids shown as ``<inv>``, ``<call>``."""
    rel = re.sub(r"inv_[0-9a-f]+", "<inv>", rel)
    return re.sub(r"call_[0-9a-f]+", "<call>", rel)


def pretty(data: Any) -> str:
    """``json.dumps(data, indent=2)`` plus a newline, by pydantic-core's encoder (the same
    bytes for these plain objects, several times faster than ``json``'s indenting one)."""
    return to_json(data, indent=2).decode() + "\n"


def create(path: Path, text: str) -> None:
    """Exclusive create, as the host writes an arguments file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def append_lines(path: Path, lines: list[dict[str, Any]]) -> None:
    """One ``flock``ed append of every line, as the host appends a call's records."""
    append_locked(path, "".join(json.dumps(line, ensure_ascii=False) + "\n"
                                for line in lines).encode())


def renewed(data: Any) -> Any:
    """``data`` with every string that is not ASCII replaced by a new, equal string object.

    CPython keeps a string's UTF-8 form once something encoded it, and pydantic-core's
    encoder uses it: encoding the same 64 KiB of mixed text again costs about half as much
    as encoding it the first time. A call that reads a file for the first time encodes text
    it has just built, so its floor must encode new strings too (building them is a copy,
    a few microseconds at 64 KiB, which this floor pays on top)."""
    if isinstance(data, str):
        return data if data.isascii() or len(data) < 2 else data[:1] + data[1:]
    if isinstance(data, dict):
        return {key: renewed(value) for key, value in data.items()}
    if isinstance(data, list):
        return [renewed(value) for value in data]
    return data


def floor_of(captured: Captured, root: Path, work: Callable[[], None], *,
             fresh: bool = False) -> Callable[[], None]:
    """The captured call's writes in plain Python, in the call's order, below ``root`` (the
    same relative paths; a created file gets a ``.N`` suffix from the second sample on),
    after the creates ``work`` (the call's own file work, done under a shared lock of the
    workspace). With ``fresh``, each sample encodes new string objects (:func:`renewed`):
    the floor of a call whose records hold text it has just built."""
    root.mkdir(parents=True, exist_ok=True)
    for _, rel in captured.order:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
    lock = root / ".workspace.lock"
    lock.touch()
    numbers = itertools.count()
    creates = [(rel, captured.content[rel]) for op, rel in captured.order if op == "create"]
    rest = [(op, rel, captured.content.get(rel), captured.appended.get(rel))
            for op, rel in captured.order if op != "create"]

    def floor() -> None:
        n = next(numbers)
        for rel, data in creates:
            create(root / (rel if n == 0 else f"{rel}.{n}"), pretty(renewed(data) if fresh
                                                                  else data))
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            work()
        finally:
            os.close(fd)
        for operation, rel, data, lines in rest:
            if fresh:
                data, lines = renewed(data), renewed(lines)
            if operation == "append":
                append_lines(root / rel, lines or [])
            else:
                atomic_write(root / rel, pretty(data).encode())

    return floor


def traced_floor(captured: Captured, root: Path, work: Callable[[], None]
                 ) -> list[tuple[str, str, int]]:
    """What one run of the floor writes below ``root``, as :meth:`Captured.summary` says it
    (the pin between a floor and the call it stands for)."""
    floor = floor_of(captured, root, work)
    sizes = {rel: 0 for _, rel in captured.order}
    trace = WriteTrace(root)
    with trace:
        floor()
    lines = {rel: len(_lines(root / rel, sizes[rel])) for op, rel in trace.order
             if op == "append"}
    return summary(root, trace.order, lines)


class Setup:
    """One floor's call, captured: the run, what it wrote, its own file work and the raw
    baseline of its row."""

    def __init__(self, lab: Lab, run: Run, captured: Captured, work: Callable[[], None],
                 baseline: Callable[[], None]) -> None:
        self.lab, self.run, self.captured = lab, run, captured
        self.work, self.baseline = work, baseline


def write_setup(base: Path) -> Setup:
    """``workspace.write_file`` of 1 KiB over a file the call may rewrite."""
    lab = Lab(base / "lab")
    run = lab.start_run(chat_id="bench")
    args = {"path": "scratch/file.md", "content": "a" * SIZE}
    run.call_tool("workspace.write_file", args)
    args["content"] = "b" * SIZE
    captured = Captured(run, lambda: run.call_tool("workspace.write_file", args))
    target = base / "target.md"
    target.write_bytes(b"a" * SIZE)
    contents = itertools.cycle([b"a" * SIZE, b"b" * SIZE])

    def work() -> None:
        with open(target, "rb") as handle:  # the write guard's look at the current bytes
            handle.read()
        atomic_write(target, next(contents))

    raw = base / "raw.md"
    return Setup(lab, run, captured, work, lambda: atomic_write(raw, next(contents)))


def read_setup(base: Path) -> Setup:
    """``workspace.read_file`` of 1 KiB."""
    lab = Lab(base / "lab")
    run = lab.start_run(chat_id="bench")
    run.call_tool("workspace.write_file", {"path": "scratch/r.md", "content": "a" * SIZE})
    args = {"path": "scratch/r.md"}
    run.call_tool("workspace.read_file", args)
    captured = Captured(run, lambda: run.call_tool("workspace.read_file", args))
    host = Path(run.workspace_dir) / "scratch" / "r.md"

    def work() -> None:
        with open(host, "rb") as handle:
            handle.read()

    return Setup(lab, run, captured, work, work)


def shell_setup(base: Path) -> Setup:
    """``run.shell('echo hi')``; its work is a kept bare interpreter, reset, running the
    command (what the shell does: a reset interpreter is indistinguishable from a new one);
    the row's baseline is a fresh bare interpreter running it."""
    lab = Lab(base / "lab")
    run = bench_run(lab)
    run.shell("echo hi")
    captured = Captured(run, lambda: run.shell("echo hi"))
    kept = bashkit.Bash()

    def work() -> None:
        kept.reset()
        kept.execute_sync("echo hi")

    return Setup(lab, run, captured, work, lambda: bashkit.Bash().execute_sync("echo hi"))


#: The floors, by the tool call they stand for.
SETUPS: dict[str, Callable[[Path], Setup]] = {
    "write_file": write_setup, "read_file": read_setup, "shell": shell_setup}


def write_rows(kind: str, rounds: int) -> Row:
    """The write_file floor on one kind of directory."""
    with fresh_dir(kind) as base:
        setup = write_setup(base)
        result = compare(floor_of(setup.captured, base / "floor", setup.work), setup.baseline,
                         rounds=rounds, per_round=15)
        note = setup.captured.describe()
        setup.lab.close()
    return row(f"write_file 1 KiB: its records in plain Python, the floor ({kind})", result,
               "atomic write", 3.0, "<= 3x", note + ("; " + DISK_NOTE if kind == "disk" else ""),
               floor=True)


def read_rows(rounds: int) -> Row:
    """The read_file floor (tmpfs, like bench/read_file.py)."""
    with fresh_dir("tmpfs") as base:
        setup = read_setup(base)
        result = compare(floor_of(setup.captured, base / "floor", setup.work), setup.baseline,
                         rounds=rounds, per_round=15)
        note = setup.captured.describe()
        setup.lab.close()
    return row("read_file 1 KiB: its records in plain Python, the floor", result, "raw read",
               10.0, "<= 10x", "tmpfs; " + note, floor=True)


def shell_rows(rounds: int) -> Row:
    """The ``run.shell('echo hi')`` floor: its records in plain Python around a kept bare
    interpreter, reset, running the command, against a fresh bare interpreter."""
    with fresh_dir("tmpfs") as base:
        setup = shell_setup(base)
        result = compare(floor_of(setup.captured, base / "floor", setup.work), setup.baseline,
                         rounds=rounds, per_round=20)
        note = setup.captured.describe()
        setup.lab.close()
    return row("run.shell('echo hi'): its records in plain Python, the floor", result,
               "fresh bashkit", 2.0, "<= 2x", "tmpfs; " + note, floor=True)


def rows(rounds: int = 7) -> list[Row]:
    """Every row of this script."""
    return [*(write_rows(kind, rounds) for kind in fresh_dirs()), read_rows(rounds),
            shell_rows(rounds)]


def main() -> None:
    """Measure and print."""
    rounds_main(__doc__, rows)


if __name__ == "__main__":
    main()
