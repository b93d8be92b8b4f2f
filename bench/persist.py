"""Benchmark (table rows 7 and 8): persist states stored by changes (not a test).

1. ``run.finish()`` of a run that changed one file of a 10,000- and a 50,000-file persist
   tree (publication: unchanged files linked, the changed one copied, the manifest and the
   finishing records written), against a hard-link copy of the same tree (``mkdir`` of every
   directory, ``os.link`` of every file). Target: <= 1.2x the hard-link copy, and the new
   state's storage grows with the changed bytes only (the note gives the bytes of the files
   the new state does not share with its base).
2. Starting the next run from the state (``lab.start_run(persist_base=...)``: ``persist/``
   filled by links, the persist snapshot and the journal's ``file_changed`` records written),
   against the same hard-link copy. Target: <= 1.2x.

Every figure is measured on a fresh directory of tmpfs (``/dev/shm``) and of the real disk.

Usage: ``.venv/bin/python bench/persist.py [--files 10000,50000] [--rounds N] [--json]``
(``--quick`` changes nothing: three rounds is already the least that gives a median).
"""

from __future__ import annotations

import argparse
import itertools
import os
from pathlib import Path

from timing import (
    DISK_NOTE,
    Row,
    compare_once,
    compare_prepared,
    emit,
    fresh_dir,
    fresh_dirs,
    row,
    table_options,
)

from tavernlab.host import Lab, Run
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage._fs import WriteGuard

FILES_PER_DIR = 100


def hardlink_copy(source: Path, target: Path) -> None:
    """The baseline: the tree's directories made and every file hard-linked."""
    target.mkdir()
    for dirpath, dirnames, filenames in os.walk(source):
        here = target / os.path.relpath(dirpath, source)
        for name in dirnames:
            os.mkdir(here / name)
        for name in filenames:
            os.link(os.path.join(dirpath, name), here / name)


def committed(run: Run) -> Run:
    """``run`` with its output committed (a foreground run must commit before finishing)."""
    run.internals.scope.write_text(WorkspacePath("output/main.md"), "body", WriteGuard.unchecked())
    assert not run.call_tool("workspace.commit", {}).is_error
    return run


def finished(run: Run) -> str:
    """Finish ``run``; the state it published."""
    result = run.finish()
    assert not result.is_error, result.content
    assert run.persist_state_id is not None
    return run.persist_state_id


def base_state(lab: Lab, files: int) -> str:
    """A published state of ``files`` 1 KiB files in folders of 100."""
    run = lab.start_run(chat_id="bench")
    persist = run.workspace_dir / "persist"
    for index in range(files):
        folder = persist / f"d{index // FILES_PER_DIR:04d}"
        if index % FILES_PER_DIR == 0:
            folder.mkdir()
        (folder / f"f{index:06d}.md").write_bytes(os.urandom(512).hex().encode())
    return finished(committed(run))


def unshared_bytes(root: Path) -> int:
    """Bytes of the files below ``root`` that no other name shares (what a state adds)."""
    return sum(st.st_size for p in root.rglob("*")
               if p.is_file() and (st := p.lstat()).st_nlink == 1)


def measure(kind: str, files: int, rounds: int) -> list[Row]:
    """Both rows for one tree size on one kind of directory."""
    with fresh_dir(kind) as base:
        lab = Lab(base / "lab")
        state = base_state(lab, files)
        repo = lab.chat("bench").persist
        source = repo.state_dir(state) / "persist"
        numbers = itertools.count()

        def copy() -> None:
            hardlink_copy(source, base / f"copy-{next(numbers)}")

        def changed_run() -> Run:
            run = lab.start_run(chat_id="bench", persist_base=state)
            run.call_tool("workspace.write_file", {"path": "persist/d0000/new.md",
                                                   "content": "one change"})
            return committed(run)

        published: list[str] = []
        finish = compare_prepared(changed_run, lambda run: published.append(finished(run)),
                                  copy, rounds=rounds)
        added = unshared_bytes(repo.state_dir(published[-1]) / "persist")
        start = compare_once(lambda: lab.start_run(chat_id="bench", persist_base=state), copy,
                             rounds=rounds)
        lab.close()
    disk = f"; {DISK_NOTE}" if kind == "disk" else ""
    return [row(f"finish, 1 of {files:,} files changed ({kind})", finish, "hardlink copy",
                1.2, "<= 1.2x", f"the new state adds {added} bytes of files{disk}"),
            row(f"next run from a {files:,}-file state ({kind})", start, "hardlink copy",
                1.2, "<= 1.2x", disk.lstrip("; "))]


def rows(rounds: int = 3, sizes: tuple[int, ...] = (10_000, 50_000)) -> list[Row]:
    """Every row of this script."""
    return [r for kind in fresh_dirs() for files in sizes for r in measure(kind, files, rounds)]


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", default="10000,50000")
    table_options(parser)
    options = parser.parse_args()
    emit(rows(options.rounds, tuple(int(n) for n in options.files.split(","))), options.json)


if __name__ == "__main__":
    main()
