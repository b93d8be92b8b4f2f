"""A tool call's file changes are described under the hold of the workspace lock that writes
its stored result, and journaled when the call's activity ends: the records are the same,
byte for byte, as when the activity's end took the lock again to describe them."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import tavernlab.locks as locks
from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.events import FileChanged
from tavernlab.host import Lab
from tavernlab.host._activity import Activity

RECORDS = ("events.jsonl", "journal.jsonl", "run.json")


def play(root: Path) -> dict[str, bytes]:
    """Calls that change files in several ways (create, replace, patch, the shell, js, a
    refused write, a call that changes nothing), then the run's records."""
    lab = Lab(root, clock=FixedClock(), ids=SequentialIds("changes"))
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "one"})
    run.call_tool("workspace.read_file", {"path": "output/a.md"})
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "two"})
    run.call_tool("workspace.apply_patch", {"path": "output/a.md", "old_string": "two",
                                            "new_string": "three"})
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "refused"})
    run.call_tool("workspace.list_files", {"depth": 2})
    run.call_tool("workspace.write_file", {"path": "scratch/deep/b.md", "content": "é"})
    shell = run.shell("mkdir -p /scratch/d && echo x > /scratch/d/f.md && rm /scratch/deep/b.md")
    assert shell.exit_code == 0, shell.stderr
    run.js(["-e", "import {workspace} from '@tauritavern/runtime';"
                  "workspace.writeText('scratch/j.md', 'j')"])
    run.call_tool("workspace.write_file", {"path": "output/c.md", "content": "c" * 70_000})
    run.next_round()
    run.call_tool("workspace.write_file", {"path": "output/c.md", "content": "d"})
    return {name: (run.dir / name).read_bytes() for name in RECORDS}


def test_the_records_are_those_of_a_flush_at_the_activity_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    taken = play(tmp_path / "taken")
    with monkeypatch.context() as patch:
        patch.setattr(Activity, "take_changes", lambda self: None)
        flushed = play(tmp_path / "flushed")
    assert b'"file_changed"' in taken["journal.jsonl"]
    for name in RECORDS:
        assert taken[name] == flushed[name], name


def test_a_call_takes_the_workspace_lock_once_less(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lab = Lab(tmp_path / "lab")
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "one"})
    holds: list[bool] = []
    real = locks._lock_fd

    def counted(path: Path, *, shared: bool) -> int:
        if path.name == ".workspace.lock":
            holds.append(shared)
        return real(path, shared=shared)

    monkeypatch.setattr(locks, "_lock_fd", counted)
    run.call_tool("workspace.write_file", {"path": "output/b.md", "content": "two"})
    taken = list(holds)
    holds.clear()
    monkeypatch.setattr(Activity, "take_changes", lambda self: None)
    run.call_tool("workspace.write_file", {"path": "output/c.md", "content": "three"})
    assert holds == [*taken, True]  # the end's own shared hold to describe the changes
    shared = [hold for hold in taken if hold]
    assert taken and shared == []  # every hold the call takes now is an exclusive one


def test_a_flush_under_way_leaves_the_changes_to_the_activity_end(tmp_path: Path) -> None:
    """While another thread flushes, the stored result's hold does not wait for it (that
    thread may be waiting for the workspace lock): the end flushes as before."""
    lab = Lab(tmp_path / "lab", clock=FixedClock(), ids=SequentialIds("busy"))
    run = lab.start_run(chat_id="alice")
    activities = run._core.activities  # type: ignore[attr-defined]
    busy, release = threading.Event(), threading.Event()

    def hold() -> None:
        with activities._flushing:
            busy.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    busy.wait(10)
    try:
        result: list[object] = []
        caller = threading.Thread(target=lambda: result.append(run.call_tool(
            "workspace.write_file", {"path": "output/a.md", "content": "x"})))
        caller.start()
        caller.join(0.5)
        assert caller.is_alive()  # the end's flush waits for the other one, as before
    finally:
        release.set()
        thread.join(10)
    caller.join(10)
    assert result and not result[0].is_error  # type: ignore[attr-defined]
    paths = [r.payload.path for r in run.events(types="file_changed")
             if isinstance(r, FileChanged)]
    assert "output/a.md" in paths and paths[-1].startswith("tool-results/")
