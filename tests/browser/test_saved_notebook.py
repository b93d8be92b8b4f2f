"""A saved notebook shows what the user saw: with "Save Widget State Automatically" on, a
notebook saved after its run wrote more files is reopened on a fresh kernel (the one that
made the widgets is shut down, so it cannot serve their models) and its tree and timeline
show every file and bar from the saved widget state; its ``nbconvert --to html`` page, opened
in Chromium without a network (the widget code cannot be fetched there), shows them through
the static view kept current beside each widget."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lab_server import NotebookPage, write_notebook

FILES = ["output/a.md", "output/b.md", "scratch/c.txt", "scratch/d.txt"]
SAVE_STATE = "@jupyter-widgets/jupyterlab-manager:saveWidgetState"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def saved_cells(lab_dir: Path) -> list[str]:
    return [
        f"from tavernlab.host import Lab\nlab = Lab({str(lab_dir)!r})\n"
        "run = lab.start_run(chat_id='alice')",
        "run.show()",
        "run.call_tool('workspace.write_file', {'path': 'output/a.md', 'content': 'a'})\n"
        "run.call_tool('workspace.write_file', {'path': 'output/b.md', 'content': 'b'})\n"
        "run.shell('echo c > scratch/c.txt; echo d > scratch/d.txt').exit_code",
        "run.call_tool('workspace.read_file', {'path': 'output/a.md'}).is_error",
    ]


def _set_save_state(page: object, on: bool) -> None:
    toggled = f"() => window.jupyterapp.commands.isToggled('{SAVE_STATE}')"
    if page.evaluate(toggled) != on:  # type: ignore[attr-defined]
        page.evaluate(f"() => window.jupyterapp.commands.execute('{SAVE_STATE}')")  # type: ignore[attr-defined]
        page.wait_for_function(f"() => ({toggled})() === {str(on).lower()}")  # type: ignore[attr-defined]


def _check_live_view(notebook: NotebookPage, bars: int) -> None:
    page = notebook.page
    for path in FILES:
        page.locator(f'.tl-node[data-path="{path}"]').wait_for(timeout=60_000)
    page.wait_for_function(
        f"() => document.querySelectorAll('.tl-timeline .tl-bar-row').length === {bars}")
    # the static view of the run view is hidden while the live view shows
    assert page.locator(".tl-static").count() == 1
    assert not page.locator(".tl-static").is_visible()


def test_saved_notebook_reopens_and_converts_with_every_file_and_bar(
        notebook: NotebookPage, lab_root: Path, tmp_path: Path) -> None:
    page = notebook.page
    path = lab_root / "saved.ipynb"
    write_notebook(path, saved_cells(tmp_path / "lab"))
    notebook.open("saved.ipynb")
    _set_save_state(page, True)
    try:
        for index in range(4):
            notebook.run_cell(index)
        page.wait_for_timeout(1500)  # the static view is refreshed within a second
        bars = 5  # two writes, the shell call, its round's auto-commit, a read
        _check_live_view(notebook, bars)
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function(
            "() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
        document = json.loads(path.read_text())
        assert WIDGET_STATE in document["metadata"]["widgets"]

        # reopened on a fresh kernel: the models come from the saved state
        notebook.shutdown_kernel()
        page.wait_for_function(
            "() => !window.jupyterapp.shell.currentWidget.sessionContext.session")
        notebook.open("saved.ipynb")
        _check_live_view(notebook, bars)
        assert "model not found" not in page.locator(".jp-OutputArea").first.inner_text()
        page.locator('.tl-bar-row[data-kind="shell"]').click()  # no kernel behind: no error
        notebook.shot("10-saved-notebook-reopened")
    finally:
        _set_save_state(page, False)

    # nbconvert's page, offline: the static view carries the final tree and timeline
    subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", str(path)],
                   check=True, capture_output=True)
    page.goto((lab_root / "saved.html").as_uri())
    static = page.locator(".tl-static")
    assert static.count() == 1 and static.is_visible()
    text = static.inner_text()
    for name in ("a.md", "b.md", "c.txt", "d.txt"):
        assert name in text
    assert f"{bars} bars in" in text
    assert static.locator("tr:has(> td:nth-child(5))").count() == bars
    notebook.shot("11-saved-notebook-nbconvert")
