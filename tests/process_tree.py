"""The process tree as ``/proc`` shows it (Linux): which live processes descend from one, and
their command lines. The session-wide leftover check (``tests/conftest.py``) and the demo
notebook test (every process a notebook starts ends with it) both ask it."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

PROC = Path("/proc")


def process_table() -> dict[int, tuple[int, str]]:
    """``{pid: (ppid, state)}`` of every process in ``/proc``."""
    table = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text(errors="replace")
        except OSError:
            continue
        fields = text[text.rfind(")") + 2:].split()
        table[int(entry.name)] = (int(fields[1]), fields[0])
    return table


def live_descendants(root: int) -> list[int]:
    """Live (non-zombie) descendants of ``root``, sorted."""
    table = process_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = [], list(children.get(root, []))
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        if table[pid][1] not in ("Z", "X"):
            found.append(pid)
    return sorted(found)


def command_line(pid: int) -> str:
    """The command line of ``pid`` (``?`` when it is gone or unreadable)."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip() or "?"


def session_owned() -> set[int]:
    """Processes that legitimately outlive a test: the process-wide JavaScript pool's workers
    (an earlier test of this process may have started them) and multiprocessing's resource
    tracker."""
    owned: set[int] = set()
    tracker = sys.modules.get("multiprocessing.resource_tracker")
    tracker_pid = getattr(getattr(tracker, "_resource_tracker", None), "_pid", None)
    if isinstance(tracker_pid, int):
        owned.add(tracker_pid)
    pool = sys.modules.get("tavernlab.js._pool")
    if pool is not None:
        with contextlib.suppress(Exception):
            owned.update(pool.default_pool().worker_pids())
    return owned
