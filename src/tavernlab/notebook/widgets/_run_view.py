"""``RunView``: a run's file tree and timeline side by side, and the ``run.show`` presenter."""

from __future__ import annotations

from typing import Any

import ipywidgets  # type: ignore[import-untyped]
from IPython.display import display

from tavernlab.host import Run
from tavernlab.notebook.widgets._fallback import StaticView, show_with_static_view
from tavernlab.notebook.widgets._file_tree import FileTree
from tavernlab.notebook.widgets._timeline import Timeline


class RunView(ipywidgets.HBox):  # type: ignore[misc]
    """``FileTree(run)`` and ``Timeline(run)`` side by side (``.tree``, ``.timeline``)."""

    def __init__(self, run: Run, *, path: str = "", show_hidden: bool = False) -> None:
        self.tree = FileTree(run, path, show_hidden=show_hidden)
        self.timeline = Timeline(run)
        self.tree.layout = ipywidgets.Layout(flex="1 1 44%", min_width="0")
        self.timeline.layout = ipywidgets.Layout(flex="1 1 56%", min_width="0")
        super().__init__([self.tree, self.timeline],
                         layout=ipywidgets.Layout(width="100%", grid_gap="10px",
                                                  align_items="flex-start"))
        self.add_class("tl-run-view")

    def close(self) -> None:
        """Close both widgets (they stop following the run)."""
        self.tree.close()
        self.timeline.close()
        super().close()

    def snapshot(self) -> tuple[str, str]:
        """Both snapshots: the texts one after the other, the HTML side by side."""
        tree_html, timeline_html = self.tree.snapshot()[1], self.timeline.snapshot()[1]
        html = ('<table style="width:100%;border:none"><tr>'
                f'<td style="vertical-align:top;width:44%;text-align:left">{tree_html}</td>'
                f'<td style="vertical-align:top;text-align:left">{timeline_html}</td></tr>'
                '</table>')
        return str(self), html

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until both widgets show every record received so far."""
        return self.tree.settle(timeout) and self.timeline.settle(timeout)

    def _ipython_display_(self) -> None:
        """Display the view, then the static view of both (kept current)."""
        view = super()._repr_mimebundle_()
        if view is None:
            return
        static = StaticView(self.snapshot, self.settle)
        self.tree.follow_changes(static)
        self.timeline.follow_changes(static)
        show_with_static_view(view, repr(self), static)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        text, html = self.snapshot()
        return {**data, "text/plain": text, "text/html": html}, metadata

    def __str__(self) -> str:
        """Both text snapshots (what ``run.show()`` prints outside IPython)."""
        return f"{self.tree}\n\n{self.timeline}"

    def __repr__(self) -> str:
        return f"<RunView {self.tree.run_id}>"


def show_run(run: Run, **options: Any) -> None:
    """The ``run.show`` presenter: display a :class:`RunView` of ``run`` (``options``:
    ``path``, ``show_hidden``). Returns nothing, so ``run.show()`` as a cell's last line shows
    the view once; keep a handle with ``RunView(run)``."""
    display(RunView(run, **options))  # type: ignore[no-untyped-call]
