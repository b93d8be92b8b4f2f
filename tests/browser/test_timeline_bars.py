"""The timeline never hides a call: every bar of a finished run is drawn after the view was
updated while hidden (another tab in front), after idling, after a theme change and after a
page reload."""

from __future__ import annotations

from pathlib import Path

from lab_server import NotebookPage, write_notebook

#: Three rounds of calls: 5 tool calls, 3 shell calls and the 3 auto-commits of the files the
#: shell wrote (11 bars and 3 round headers: more rows than the view's height).
CALLS = """import time
time.sleep(2)  # the test puts another tab in front meanwhile
for n in range(3):
    run.call_tool('workspace.write_file', {'path': f'output/r{n}.md', 'content': f'round {n}\\n'})
    run.shell(f'echo {n} > output/s{n}.txt')
    if n < 2:
        run.call_tool('workspace.read_file', {'path': f'output/r{n}.md'})
    run.next_round()
print('done')"""

BARS = 11
JS_BARS = "() => document.querySelectorAll('.tl-timeline .tl-bar-row').length"


def timeline_cells(lab_dir: Path) -> list[str]:
    return [f"from tavernlab.host import Lab\nlab = Lab({str(lab_dir)!r})\n"
            "run = lab.start_run(chat_id='alice')",
            "from tavernlab.notebook.widgets import Timeline\nTimeline(run)",
            CALLS]


def test_every_bar_stays_drawn(notebook: NotebookPage, lab_root: Path, tmp_path: Path) -> None:
    page = notebook.page
    write_notebook(lab_root / "bars.ipynb", timeline_cells(tmp_path / "lab"))
    notebook.open("bars.ipynb")
    notebook.run_cell(0)
    notebook.run_cell(1)
    page.locator(".tl-timeline .tl-empty").first.wait_for()
    panel_id = page.evaluate("() => window.jupyterapp.shell.currentWidget.id")

    # the calls arrive while another tab hides the notebook
    notebook.start_cell(2)
    page.evaluate("() => window.jupyterapp.commands.execute('launcher:create')")
    page.wait_for_function("() => window.__ran[2] === true", timeout=90_000)
    page.wait_for_timeout(1500)  # idle: let every update reach the hidden view
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', "
                  "{theme: 'JupyterLab Dark'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    page.evaluate("(id) => window.jupyterapp.shell.activateById(id)", panel_id)
    page.locator(".tl-timeline .tl-bar-row").first.wait_for()
    page.wait_for_function(f"() => ({JS_BARS})() === {BARS}")
    assert page.locator(".tl-timeline .tl-round").count() == 3
    notebook.shot("20-timeline-after-hidden-tab", ".tl-timeline")

    # saved and reloaded, the view draws them all again (the kernel still holds the widget)
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    page.reload()
    page.wait_for_function("() => window.jupyterapp?.shell?.currentWidget?.sessionContext",
                           timeout=90_000)
    page.locator(".tl-timeline .tl-bar-row").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1000)
    assert page.evaluate(JS_BARS) == BARS
    assert page.locator(".tl-timeline .tl-round").count() == 3
    notebook.shot("21-timeline-after-reload", ".tl-timeline")
