"""What an executed notebook saves of its widgets: nbclient stores the widget state the live
widgets ended in (their updates are sent before each cell ends), and each widget's static
view, the output after the widget view, shows the final tree and timeline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _execute(cells: list[str], workdir: Path) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.metadata["kernelspec"] = {"name": "tavernlab", "display_name": "tavernlab",
                                       "language": "python"}
    NotebookClient(notebook, timeout=120, allow_errors=False, record_timing=False,
                   resources={"metadata": {"path": str(workdir)}}).execute()
    nbformat.validate(notebook)
    return notebook


def _models(notebook: nbformat.NotebookNode) -> dict[str, Any]:
    return dict(notebook.metadata["widgets"][WIDGET_STATE]["state"])


CELLS = [
    "run = %tavern run new",
    "run.show()",
    "for n in range(3):\n"
    "    run.call_tool('workspace.write_file', {'path': f'output/f{n}.md', 'content': 'x'})",
    "run.shell('echo late > output/late.txt').exit_code",
]


def test_an_executed_notebook_keeps_the_final_tree_and_timeline(jupyter_path: Path,
                                                               tmp_path: Path) -> None:
    notebook = _execute(CELLS, tmp_path)
    view, static = notebook.cells[1].outputs
    assert view.output_type == static.output_type == "display_data"
    assert set(view.data) == {WIDGET_VIEW, "text/plain"}
    assert view.data["text/plain"].startswith("<RunView run_")
    # the static view was replaced by the final state, long after it was displayed
    html = static.data["text/html"]
    assert html.startswith('<div class="tl-static tl-static-tl')
    for name in ("f0.md", "f1.md", "f2.md", "late.txt"):
        assert name in html and name in static.data["text/plain"]
    # one round per cell: the writes, the round's auto-commit, then the shell call
    assert ": 5 bars in 2 rounds" in static.data["text/plain"]

    # the saved widget state: the timeline's window holds every bar, the tree every file
    models = _models(notebook)
    states = [m["state"] for m in models.values()]
    timeline = next(s for s in states if s.get("_view") == "timeline")
    tree = next(s for s in states if s.get("_view") == "tree")
    bars = [row for row in timeline["window"]["rows"] if row["type"] == "bar"]
    assert [bar["label"] for bar in bars] == ["workspace.write_file"] * 3 + [
        "commit output/f2.md", "workspace.shell"]
    assert {"output/f0.md", "output/late.txt"} <= {n["path"] for n in tree["nodes"]}
    # the widget code is in the saved state, so a renderer needs no kernel to draw it
    assert "class TimelineView" in timeline["_esm"]
    # each view hides the static view that stands for it
    static_id = html.split("tl-static-")[1].split('"')[0]
    assert timeline["_hides"] == tree["_hides"] == [static_id]


def test_a_widget_shown_alone_has_its_own_static_view(jupyter_path: Path,
                                                      tmp_path: Path) -> None:
    notebook = _execute(["run = %tavern run new", "%tavern timeline",
                         "run.call_tool('workspace.list_files', {'path': 'output'}).is_error"],
                        tmp_path)
    view, static = notebook.cells[1].outputs
    assert view.data["text/plain"].startswith("<Timeline run_")
    assert static.data["text/plain"].splitlines()[0].endswith(": 1 bar in 1 round")
    assert "workspace.list_files" in static.data["text/html"]


def test_a_restarted_kernel_names_the_run_it_left_behind(jupyter_path: Path,
                                                         tmp_path: Path) -> None:
    from notebook_support import start_kernel, stop_kernel, texts

    kernel = start_kernel(tmp_path, home=tmp_path / "home")
    try:
        _, messages = kernel.execute("%ws_shell echo one")
        assert texts(messages) == "one\n"
        _, messages = kernel.execute("from tavernlab.notebook import current_state\n"
                                     "print(current_state().run.id)")
        old = texts(messages).strip()
        kernel.manager.restart_kernel(now=True)  # the kernel dies without a word
        kernel.client.wait_for_ready(timeout=120)
        _, messages = kernel.execute("%ws_shell echo two")
        first, rest = texts(messages).split("\n", 1)
        assert first.startswith(
            f"tavernlab: run {old} was left unfinished by an earlier kernel (interrupted "
            f"while calling_model); `%tavern run open {old}` continues it. This notebook now "
            "uses the new run run_")
        assert rest == "two\n"
        _, messages = kernel.execute(f"%tavern run open {old}\n%ws_shell echo three")
        assert texts(messages).endswith("three\n")
    finally:
        stop_kernel(kernel)
