"""``FileTree(run)``: the run's workspace as the model sees it, live.

Every node shows its name, size and access badge (hidden, read-only, writable; a refused node
says why), ``skills/`` shows the projected view, and ``show_hidden`` adds the run's own files.
Folders expand and collapse and a filter box narrows by name (both in the browser); selecting
a file shows its first 200 lines (with "more") or, for a binary file, its size and SHA-256 in
the side pane. Files created, changed, moved or removed by any writer appear within a second,
flashed, driven by the run's ``file_changed`` records (no polling). ``selected`` is the
selected path, readable and settable from Python.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import traitlets

from tavernlab.events import FileChanged
from tavernlab.host import Run
from tavernlab.notebook.widgets._live import LiveWidget
from tavernlab.notebook.widgets._preview import PREVIEW_LINES, node_preview
from tavernlab.notebook.widgets._snapshots import tree_html, tree_text
from tavernlab.notebook.widgets._tree_state import TreeState
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.roots import Access

STATIC = Path(__file__).with_name("static")


class FileTree(LiveWidget):
    """A live tree of ``run``'s workspace below ``path`` (``""``: all of it)."""

    _esm = STATIC / "widgets.js"
    _css = STATIC / "widgets.css"
    _view = traitlets.Unicode("tree", read_only=True).tag(sync=True)

    run_id = traitlets.Unicode(read_only=True).tag(sync=True)
    root = traitlets.Unicode(read_only=True).tag(sync=True)
    nodes = traitlets.List(traitlets.Dict()).tag(sync=True)
    flash = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    filter = traitlets.Unicode("").tag(sync=True)
    show_hidden = traitlets.Bool(False).tag(sync=True)
    preview = traitlets.Dict().tag(sync=True)
    preview_lines = traitlets.Int(PREVIEW_LINES).tag(sync=True)

    def __init__(self, run: Run, path: str = "", *, show_hidden: bool = False,
                 selected: str = "") -> None:
        self._run = run
        self._lock = threading.RLock()
        self._flash_serial = 0
        self._rebuild = False
        self._listen(run, frozenset({"file_changed"}), "nodes")
        self._state = self._build(path, show_hidden)
        with self._lock:
            nodes = self._state.rows()
        super().__init__(nodes=nodes, show_hidden=show_hidden)
        self.set_trait("run_id", run.id)
        self.set_trait("root", self._state.root)
        self._rebuild = False
        self._start(self._compute, self._snapshots)
        if selected:
            self.selected = selected

    def _access_of(self, path: str, directory: bool) -> Access:
        return self._run.internals.scope.policy.access(WorkspacePath.parse(path),
                                                       directory=directory)

    def _build(self, path: str, show_hidden: bool) -> TreeState:
        return TreeState(self._run.tree(path, include_hidden=show_hidden), self._access_of,
                         include_hidden=show_hidden)

    # -- Python <-> browser -------------------------------------------------------------------

    @traitlets.validate("selected")
    def _check_selected(self, proposal: dict[str, Any]) -> str:
        path = str(proposal["value"])
        with self._lock:
            if path and self._state.get(path) is None:
                raise traitlets.TraitError(f"no node `{path}` in the tree of run {self._run.id}")
        return path

    @traitlets.observe("selected", "preview_lines")
    def _selection_changed(self, change: dict[str, Any]) -> None:
        self._sync_touch("preview")

    @traitlets.observe("show_hidden")
    def _hidden_changed(self, change: dict[str, Any]) -> None:
        self._rebuild = True
        self._sync_touch("nodes", "preview")

    # -- the pump thread ----------------------------------------------------------------------

    def _compute(self, names: frozenset[str]) -> dict[str, Any]:
        with self._lock:
            if self._rebuild:
                self._rebuild = False
                self._state = self._build(self._state.root, self.show_hidden)
            flashed: list[str] = []
            touched: set[str] = set()
            for record in self._inbox.drain():
                if isinstance(record, FileChanged):
                    flashed.extend(self._state.apply(record.payload))
                    touched.update(p for p in (record.payload.path, record.payload.from_path)
                                   if p)
            out: dict[str, Any] = {}
            if "nodes" in names:
                out["nodes"] = self._state.rows()
            if flashed:
                self._flash_serial += 1
                out["flash"] = {"serial": self._flash_serial, "paths": sorted(set(flashed))}
            selected = self.selected
            if "preview" in names or (selected and any(
                    selected == p or selected.startswith(p + "/") for p in touched)):
                out["preview"] = node_preview(self._run.internals.scope, self._run.internals.fs,
                                              self._state.get(selected), selected,
                                              self.preview_lines,
                                              self._state.count_below(selected))
            return out

    def _snapshots(self) -> tuple[str, str]:
        with self._lock:
            rows = self._state.rows()
        title = f"Workspace of {self._run.id}" + (f" below {self.root}/" if self.root else "")
        return tree_text(title, rows), tree_html(title, rows)
