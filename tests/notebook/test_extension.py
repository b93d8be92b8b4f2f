"""Loading and unloading the extension: what it registers, what it puts back, the settings,
rich display of tavernlab's objects and the one-line rendering of every tavernlab error."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.terminal.interactiveshell import TerminalInteractiveShell
from notebook_support import Notebook

import tavernlab
from tavernlab.notebook import TavernMagics, current_state
from tavernlab.workspace.tools import ToolResult

MAGICS = {"line": ["tavern", "js", "ws_shell", "worktree"], "cell": ["js", "ws_shell"]}


def test_load_registers_every_magic_and_unload_puts_ipythons_js_back(
        ipshell: TerminalInteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    notebook = Notebook(ipshell)
    before = notebook.cell("%%js\nconsole.log(1)")
    # IPython's own %%js: browser-side JavaScript (the terminal shell shows its text form)
    assert before.outputs == [{"text/plain": "<IPython.core.display.Javascript object>"}]
    tavernlab.load_ipython_extension(ipshell)
    tavernlab.load_ipython_extension(ipshell)  # a second load changes nothing
    try:
        table = ipshell.magics_manager.magics
        for kind, names in MAGICS.items():
            for name in names:
                assert getattr(table[kind][name], "__self__", None).__class__ is TavernMagics
        assert notebook.cell("%%js\nconsole.log(1)").stdout == "1\n"
        assert sum(isinstance(c, TavernMagics) for c in ipshell.configurables) == 1
    finally:
        tavernlab.unload_ipython_extension(ipshell)
    after = notebook.cell("%%js\nconsole.log(1)")
    assert after.outputs == before.outputs
    for name in ("tavern", "ws_shell", "worktree"):
        assert name not in ipshell.magics_manager.magics["line"]
    assert not any(isinstance(c, TavernMagics) for c in ipshell.configurables)
    assert ipshell.display_formatter.formatters["text/html"].for_type(ToolResult) is None
    with pytest.raises(RuntimeError, match="the tavernlab extension is not loaded"):
        current_state(ipshell)


def test_load_ext_by_name(ipshell: TerminalInteractiveShell, tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    notebook = Notebook(ipshell)
    loaded = notebook.cell("%load_ext tavernlab")
    try:
        assert loaded.error is None and loaded.stdout == ""
        assert notebook.cell("%ws_shell echo ok").stdout == "ok\n"
    finally:
        notebook.cell("%unload_ext tavernlab")
    assert "ws_shell" not in ipshell.magics_manager.magics["line"]


def test_settings_are_traitlets_that_config_lists(nb: Notebook) -> None:
    shown = nb.cell("%config TavernMagics").stdout
    for setting in ("TavernMagics.lab_path=<Unicode>", "TavernMagics.raise_on_error=<Bool>",
                    "TavernMagics.round_per_cell=<Bool>", "TavernMagics.stream=<Bool>"):
        assert setting in shown
    nb.cell("%config TavernMagics.stream = False")
    assert nb.cell("%config TavernMagics.stream").value is False


def test_every_tavernlab_error_renders_as_one_line(nb: Notebook) -> None:
    ran = nb.cell("from tavernlab.errors import NotFound\nraise NotFound('no such file')")
    assert ran.stdout == "workspace.not_found: no such file\n"
    from_api = nb.cell("from tavernlab import Lab\nLab('x').open_run('run_nope')")
    assert from_api.error is not None
    assert from_api.stdout == f"{from_api.error.code}: {from_api.error.message}\n"


def test_rich_display_of_tavernlab_objects(nb: Notebook) -> None:
    nb.cell("%ws_shell echo hi > /output/main.md")
    session = current_state(nb.shell)
    result = session.run.call_tool("workspace.read_file", {"path": "output/main.md"})
    assert _shown(nb, result, "text/plain").startswith(
        "ToolResult ✓ workspace.read_file (call_2)\n  content:\n")
    assert "hi" in _shown(nb, result, "text/html")
    assert _shown(nb, session.run, "text/plain").startswith(
        f"Run {session.run.id} (chat notebook, foreground)")
    assert f"<code>{session.run.id}</code>" in _shown(nb, session.run, "text/html")
    assert _shown(nb, session.lab, "text/plain").startswith(
        f"Lab {session.lab.root} (1 run)\n")


def _shown(nb: Notebook, obj: object, mime: str) -> str:
    """What the shell's ``mime`` formatter makes of ``obj`` (the terminal shell only shows
    text/plain, so the HTML formatter is called directly)."""
    formatter = nb.shell.display_formatter.formatters[mime]
    if mime == "text/plain":
        return str(formatter(obj))
    return str(formatter.lookup(obj)(obj))
