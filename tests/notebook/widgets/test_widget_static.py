"""The static fallbacks (text/plain and text/html beside the widget view) and the entry
points: ``run.show()`` through the presenter, ``RunView``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets  # type: ignore[import-untyped]
import pytest

from tavernlab.host import Run
from tavernlab.host._presentation import _PRESENTERS
from tavernlab.notebook import widgets
from tavernlab.notebook.widgets import FileTree, RunView, Timeline, show_run
from tavernlab.notebook.widgets._snapshots import SNAPSHOT_LIMIT, format_duration
from tavernlab.views._markup import format_size

Opened = Callable[[Any], Any]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
RUN_ID = "run_08c07051187ca5d40000000000000001"

TREE_TEXT = f"""Workspace of {RUN_ID}
├── output/  writable root
│   ├── greeting.md  12 B  writable
│   └── main.md  15 B  writable
├── persist/  writable root
├── plan/  writable root
├── scratch/  writable root
│   └── data/  writable
│       └── t.csv  8 B  writable
├── skills/  read-only
│   └── greet/  read-only
│       ├── scripts/  read-only
│       │   └── greet.js  191 B  read-only
│       └── SKILL.md  79 B  read-only
├── summaries/  writable root
└── tool-results/  read-only
    └── inv_08c07051187ca5d40000000000000001/  read-only
        ├── round-001-call_1b68f83fa344ae72.json  266 B  read-only
        ├── round-001-call_74196fe72e4cdc13.json  397 B  read-only
        └── round-002-call_259d356229cfbf19.json  392 B  read-only"""

TIMELINE_TEXT = f"""Timeline of {RUN_ID}: 5 bars in 2 rounds
Round 1  (4 bars, 37 ms)
  tool   workspace.write_file                     ok              8 ms  |██████               |
  js     js skills/greet/scripts/greet.js Ada     ok              2 ms  |        ███          |
  shell  workspace.shell                          ok              8 ms  |           ██████    |
  commit commit output/greeting.md                ok              3 ms  |                  ██ |
Round 2  (1 bar, 8 ms)
  tool   workspace.read_file                      error           4 ms  |████████████████████ |"""


def scripted(run: Run) -> None:
    run.call_tool("workspace.write_file", {"path": "output/main.md",
                                           "content": "# Notes\nline 2\n"})
    run.js(["skills/greet/scripts/greet.js", "Ada"])
    run.shell("mkdir -p scratch/data && printf 'a,b\\n1,2\\n' > scratch/data/t.csv")
    run.next_round()
    run.call_tool("workspace.read_file", {"path": "nope/x.md"})


def bundle_of(widget: Any) -> dict[str, Any]:
    data, _ = widget._repr_mimebundle_()
    return dict(data)


def test_the_tree_carries_a_nested_list_snapshot(greet_run: Run, opened: Opened) -> None:
    scripted(greet_run)
    data = bundle_of(opened(FileTree(greet_run)))
    assert set(data) == {WIDGET_VIEW, "text/plain", "text/html"}
    assert data["text/plain"] == TREE_TEXT
    html = data["text/html"]
    # the tree as the views draw every tree: the title, then each directory with children
    # opens a nested list (the root's, output, scratch, data, skills, greet, scripts,
    # tool-results and its invocation's), inside one outer list
    assert html.count("<ul") == html.count("</ul>") == 10
    assert "greeting.md" in html and ">writable</span>" in html and "<style" not in html
    assert ">writable root</span>" in html and "new entries allowed" not in html


def test_the_timeline_carries_a_swimlane_snapshot(greet_run: Run, opened: Opened) -> None:
    scripted(greet_run)
    data = bundle_of(opened(Timeline(greet_run)))
    assert set(data) == {WIDGET_VIEW, "text/plain", "text/html"}
    assert data["text/plain"] == TIMELINE_TEXT
    html = data["text/html"]
    assert html.count("<tr>") == 7
    assert "Round 2  (1 bar, 8 ms)" in html and "background:#c62828" in html


def test_a_run_view_puts_both_side_by_side(greet_run: Run, opened: Opened) -> None:
    scripted(greet_run)
    view = opened(RunView(greet_run))
    data = bundle_of(view)
    assert data["text/plain"] == f"{TREE_TEXT}\n\n{TIMELINE_TEXT}"
    assert data["text/html"].count("<td style=\"vertical-align:top") == 2
    assert view.children == (view.tree, view.timeline)
    view.close()
    assert view.tree.closed and view.timeline.closed


def test_a_huge_snapshot_says_what_it_left_out(run: Run, opened: Opened) -> None:
    run.shell("for i in $(seq 1 520); do echo x > scratch/f$i.txt; done")
    text = bundle_of(opened(FileTree(run)))["text/plain"]
    assert text.splitlines()[-1] == (
        f"… {len(run.tree().find('scratch').children or []) + 9 - SNAPSHOT_LIMIT} more "
        "nodes not in this snapshot (the live widget shows all)")


def test_importing_the_widgets_registers_run_show(run: Run,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert _PRESENTERS["run.show"] is widgets.show_run is show_run
    assert run.show() is None
    shown = capsys.readouterr().out  # outside a kernel: the static text snapshot
    assert shown.startswith(f"Workspace of {run.id}")
    assert run._core.feed.subscribers == 2  # the view was displayed and keeps following
    ipywidgets.Widget.close_all()
    assert run._core.feed.subscribers == 0


@pytest.mark.parametrize(("size", "text"), [(None, ""), (0, "0 B"), (1023, "1023 B"),
                                            (1536, "1.5 KiB"), (5 * 1024 ** 3, "5.0 GiB")])
def test_sizes(size: int | None, text: str) -> None:
    assert format_size(size) == text


@pytest.mark.parametrize(("ms", "text"), [(None, "running"), (12, "12 ms"), (1250, "1.25 s"),
                                          (125_000, "2 min 5 s")])
def test_durations(ms: int | None, text: str) -> None:
    assert format_duration(ms) == text
