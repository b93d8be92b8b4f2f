"""Who decides that the next piece of work on a run begins a new round.

Before each tool call and each ``run.js`` job, :func:`begin_work` asks the *round watchers*
(:func:`watch_rounds`) whether that work begins a new round of its run; if one says so, the
open round ends first (its auto-commit, ``round_ended``) and the work runs in the next one.
The notebook registers one watcher: every cell that touches a run is one round of it, whether
it uses a magic or calls ``run.call_tool``/``run.shell``/``run.js`` from Python, so a cell
after an interrupted one never meets ``tool.round_cancelled``. Without watchers (the command
line, scripts) rounds end only by ``run.next_round()``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from tavernlab.host import _commits as commits
from tavernlab.host._core import RunCore

#: ``watcher(run_id, round) -> bool``: whether work about to start in ``round`` of the run
#: ``run_id`` begins a new round. A watcher may keep its own notes; it must not touch the run.
RoundWatcher = Callable[[str, int], bool]

_watchers: list[RoundWatcher] = []
_lock = threading.Lock()


def watch_rounds(watcher: RoundWatcher) -> Callable[[], None]:
    """Ask ``watcher`` before each piece of work of every run in this process; returns the
    function that stops asking it."""
    with _lock:
        _watchers.append(watcher)

    def unwatch() -> None:
        with _lock:
            if watcher in _watchers:
                _watchers.remove(watcher)
    return unwatch


def begin_work(core: RunCore) -> None:
    """Before a tool call or a js job of an active run: end the open round when a watcher
    says the work begins a new one, then prepare the round (development skills)."""
    with _lock:
        watchers = list(_watchers)
    if watchers:
        answers = [watcher(core.id, core.counters.round) for watcher in watchers]
        if any(answers):
            commits.end_round(core)
    core.prepare_round()
