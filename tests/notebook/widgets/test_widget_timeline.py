"""Timeline without a frontend: rounds and bars after a scripted run, details of a selected
bar, running and cancelled calls while they happen, filters, paging, closing."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
import traitlets

from tavernlab.host import Run
from tavernlab.notebook.widgets import Timeline, TimelineState
from tavernlab.notebook.widgets._timeline_state import call_status

Opened = Callable[[Any], Any]
WAIT_FOR_GO = "while [ ! -f scratch/go ]; do sleep 0.05; done; echo seen"


def scripted(run: Run) -> None:
    run.call_tool("workspace.write_file", {"path": "output/main.md",
                                           "content": "# Notes\nline 2\n"})
    run.js(["skills/greet/scripts/greet.js", "Ada"])
    run.shell("mkdir -p scratch/data && printf 'a,b\\n1,2\\n' > scratch/data/t.csv")
    run.next_round()
    run.call_tool("workspace.read_file", {"path": "nope/x.md"})
    run.call_tool("workspace.commit", {})
    run.finish()


def summary(timeline: Timeline) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for row in timeline.window["rows"]:
        if row["type"] == "round":
            out.append(("round", row["round"], row["bars"], row["collapsed"]))
        else:
            out.append((row["kind"], row["label"], row["status"], row["round"]))
    return out


SCRIPTED = [
    ("round", 1, 4, False),
    ("tool", "workspace.write_file", "ok", 1),
    ("js", "js skills/greet/scripts/greet.js Ada", "ok", 1),
    ("shell", "workspace.shell", "ok", 1),
    ("commit", "commit output/greeting.md", "ok", 1),
    ("round", 2, 4, False),
    ("tool", "workspace.read_file", "error", 2),
    ("tool", "workspace.commit", "ok", 2),
    ("commit", "commit output/main.md", "ok", 2),
    ("finish", "workspace.finish", "ok", 2),
]


def test_after_a_scripted_run_rounds_group_the_bars(greet_run: Run, opened: Opened) -> None:
    scripted(greet_run)
    timeline = opened(Timeline(greet_run))
    assert summary(timeline) == SCRIPTED
    window = timeline.window
    assert (window["total"], window["offset"], window["tail"]) == (10, 0, True)
    assert window["counts"] == {
        "kinds": {"model": 0, "tool": 3, "shell": 1, "js": 1, "commit": 2, "finish": 1,
                  "mcp": 0},
        "statuses": {"ok": 7, "error": 1, "cancelled": 0, "running": 0}}
    first_round = window["rows"][0]
    assert (first_round["ended"], first_round["auto_committed"]) == (True, "output/greeting.md")
    bar = window["rows"][1]
    assert (bar["id"], bar["elapsed_ms"], bar["end_ms"] - bar["start_ms"]) == ("call_1", 8, 11)
    assert bar["span"] == first_round["span"]
    assert window["rows"][6]["error_code"] == "workspace.path_not_visible"


def test_filters_by_kind_and_status_and_folded_rounds(greet_run: Run, opened: Opened) -> None:
    scripted(greet_run)
    timeline = opened(Timeline(greet_run))
    timeline.kinds = ["shell", "commit"]
    timeline.settle()
    assert summary(timeline) == [
        ("round", 1, 4, False), ("shell", "workspace.shell", "ok", 1),
        ("commit", "commit output/greeting.md", "ok", 1),
        ("round", 2, 4, False), ("commit", "commit output/main.md", "ok", 2)]
    timeline.kinds = ["tool", "shell", "js", "commit", "finish"]
    timeline.statuses = ["error"]
    timeline.settle()
    assert summary(timeline) == [("round", 2, 4, False),
                                 ("tool", "workspace.read_file", "error", 2)]
    timeline.statuses = ["ok", "error", "cancelled", "running"]
    timeline.collapsed = [1]
    timeline.settle()
    assert summary(timeline) == [("round", 1, 4, True), *SCRIPTED[5:]]
    with pytest.raises(traitlets.TraitError, match=r"unknown kinds \['shel'\]; choose from"):
        timeline.kinds = ["shel"]
    with pytest.raises(traitlets.TraitError, match=r"unknown statuses \['done'\]"):
        timeline.statuses = ["done"]


def test_a_selected_call_shows_arguments_result_refs_and_files(greet_run: Run,
                                                               opened: Opened) -> None:
    scripted(greet_run)
    timeline = opened(Timeline(greet_run, selected="call_2"))
    timeline.settle()
    detail = timeline.detail
    assert json.loads(detail["arguments"]) == {
        "command": "mkdir -p scratch/data && printf 'a,b\\n1,2\\n' > scratch/data/t.csv",
        "workdir": "/"}
    assert detail["result"] == "Exit code: 0"
    assert json.loads(detail["structured"]) == {"exitCode": 0, "outputTruncated": False}
    assert detail["resource_refs"] == ["scratch/data", "scratch/data/t.csv"]
    changed = [(f["path"], f["change"]) for f in detail["files"]]
    assert changed[:2] == [("scratch/data", "created"), ("scratch/data/t.csv", "created")]
    assert (detail["kind"], detail["status"], detail["round"]) == ("shell", "ok", 1)
    timeline.selected = "call_3"
    timeline.settle()
    assert (timeline.detail["error_code"], timeline.detail["status"]) == (
        "workspace.path_not_visible", "error")
    assert timeline.detail["result"] == timeline.detail["message"]


def test_a_js_job_and_a_commit_show_what_the_journal_knows(greet_run: Run,
                                                           opened: Opened) -> None:
    scripted(greet_run)
    timeline = opened(Timeline(greet_run))
    job = next(r["id"] for r in timeline.window["rows"] if r.get("kind") == "js")
    timeline.selected = job
    timeline.settle()
    assert json.loads(timeline.detail["arguments"]) == {
        "command": "js", "argv": ["skills/greet/scripts/greet.js", "Ada"], "cwd": "/"}
    assert timeline.detail["result"].splitlines()[:2] == [
        "exit code 0",
        f"stdout: 12 bytes, sha256 {hashlib.sha256(b'greeted Ada' + bytes([10])).hexdigest()}"]
    assert [f["path"] for f in timeline.detail["files"]] == ["output/greeting.md"]
    commit = next(r["id"] for r in timeline.window["rows"] if r.get("kind") == "commit")
    timeline.selected = commit
    timeline.settle()
    assert timeline.detail["result"] == "saved as message #0 (swipe 0)"
    assert json.loads(timeline.detail["arguments"])["path"] == "output/greeting.md"
    with pytest.raises(traitlets.TraitError, match="no bar `call_99` in the timeline"):
        timeline.selected = "call_99"


def _wait_until(timeline: Timeline, check: Callable[[], bool]) -> None:
    """Settle the widget until ``check`` holds (each round waits for the pump; bounded)."""
    for _ in range(400):
        timeline.settle()
        if check():
            return
        threading.Event().wait(0.025)
    raise AssertionError(f"never became true: {timeline.window}")


def _running_shell(timeline: Timeline) -> bool:
    return any(r.get("kind") == "shell" and r["status"] == "running"
               for r in timeline.window["rows"])


def test_a_running_call_shows_as_running_then_ends(run: Run, opened: Opened) -> None:
    timeline = opened(Timeline(run))
    worker = threading.Thread(target=run.shell, args=(WAIT_FOR_GO,))
    worker.start()
    _wait_until(timeline, lambda: _running_shell(timeline))
    bar = next(r for r in timeline.window["rows"] if r.get("kind") == "shell")
    assert (bar["end_ms"], bar["elapsed_ms"], bar["span"][1]) == (None, None, None)
    timeline.selected = bar["id"]
    timeline.settle()
    assert (timeline.detail["status"], timeline.detail["result"]) == (
        "running", "(running: no result yet)")
    (run.workspace_dir / "scratch" / "go").write_text("")
    worker.join()
    _wait_until(timeline, lambda: not _running_shell(timeline))
    assert summary(timeline)[-1] == ("shell", "workspace.shell", "ok", 1)
    assert timeline.detail["result"] == "Exit code: 0\nseen"


def test_a_cancelled_call_is_cancelled(run: Run, opened: Opened) -> None:
    timeline = opened(Timeline(run))
    worker = threading.Thread(target=run.shell, args=(WAIT_FOR_GO,))
    worker.start()
    _wait_until(timeline, lambda: _running_shell(timeline))
    assert run.cancel() == 1
    worker.join()
    _wait_until(timeline, lambda: not _running_shell(timeline))
    bar = timeline.window["rows"][-1]
    assert (bar["status"], bar["error_code"]) == ("cancelled", "workspace.shell_cancelled")


def test_only_a_window_of_rows_is_sent_and_paging_moves_it(run: Run, opened: Opened) -> None:
    for i in range(120):
        run.call_tool("workspace.write_file", {"path": f"scratch/f{i}.md", "content": "x"})
    timeline = opened(Timeline(run))
    window = timeline.window
    assert (window["total"], window["offset"], len(window["rows"])) == (121, 41, 80)
    assert window["rows"][-1]["id"] == "call_120"
    timeline.viewport = {"offset": 10, "count": 20, "tail": False}
    timeline.settle()
    window = timeline.window
    assert (window["offset"], len(window["rows"]), window["tail"]) == (10, 20, False)
    assert [r["id"] for r in window["rows"]][:2] == ["call_10", "call_11"]
    run.call_tool("workspace.write_file", {"path": "scratch/late.md", "content": "x"})
    timeline.settle()
    assert (timeline.window["total"], timeline.window["offset"]) == (122, 10)


def test_closing_unsubscribes_and_nothing_changes_after(run: Run) -> None:
    feed = run._core.feed
    before = feed.subscribers
    timeline = Timeline(run)
    assert feed.subscribers == before + 1
    window = timeline.window
    timeline.close()
    assert timeline.closed and feed.subscribers == before
    run.call_tool("workspace.write_file", {"path": "output/after.md", "content": "x"})
    assert timeline.settle()
    assert timeline.window == window


def test_records_applied_twice_change_nothing(greet_run: Run) -> None:
    scripted(greet_run)
    records = greet_run.events()
    once, twice = TimelineState(), TimelineState()
    once.apply_all(records)
    twice.apply_all(records)
    twice.apply_all(records[len(records) // 2:])
    assert once.window(0, 100) == twice.window(0, 100)


@pytest.mark.parametrize(("code", "is_error", "status"), [
    (None, False, "ok"), ("workspace.path_not_visible", True, "error"),
    ("tool.interrupted", True, "cancelled"), ("workspace.shell_cancelled", True, "cancelled"),
    ("tool.round_cancelled", True, "cancelled"), ("workspace.shell_timeout", True, "error")])
def test_call_status_from_the_error_code(code: str | None, is_error: bool, status: str) -> None:
    assert call_status(code, is_error) == status
