"""The static view of a displayed widget, kept current: what a saved notebook shows where the
live widget cannot run.

Displaying a run widget (``display(tree)``, ``run.show()``, ``%tavern timeline``) writes two
outputs: the widget view itself (with a one-line ``text/plain``) and, right after it, its
*static view* (``text/plain`` and ``text/html`` snapshots) under a display id of its own. The
static view is replaced (``update_display``) whenever the widget's state changed, at most
every :data:`REFRESH_S`, and at the end of every cell, once the widget's pending updates were
sent; so a notebook saved at any moment carries the final tree and timeline for GitHub,
nbviewer, ``nbconvert --to html`` without a network, or any renderer that ignores widgets.
It is a separate output, not the widget output's own ``text/html``, for two reasons: a
renderer that knows widgets (JupyterLab, nbconvert with saved widget state) shows only the
widget view of an output, never its fallback; and replacing the widget output's data makes
JupyterLab build a new view, which loses what the user expanded, filtered and scrolled.

While a live view shows (in JupyterLab, in a notebook reopened with saved widget state, in an
embedding page), the view hides its static twin: each widget lists the static views it stands
for in its ``_hides`` trait and the browser adds a style rule that hides the output holding
``.tl-static-<id>`` (tavernlab choice).

At the end of each cell, pending updates are also sent before the cell ends, so a notebook
executed by nbclient (which stores widget state from the messages of each cell) saves the
state the widgets ended in, not the one they had when the next update was due.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Callable
from typing import Any

from IPython import get_ipython
from IPython.display import display, update_display

from tavernlab.notebook.widgets._sync import PUMP, Pump

#: The longest a changed widget's static view waits before it is replaced.
REFRESH_S = 1.0
#: How long the end of a cell waits for a widget's pending updates.
SETTLE_S = 5.0

_shown: weakref.WeakSet[StaticView] = weakref.WeakSet()


class StaticView:
    """The static output of one displayed widget (see the module docstring).

    ``snapshot()`` returns the widget's ``(text, html)``; ``settle(timeout)`` waits for its
    pending updates. Thread-safe: :meth:`touch` may be called from any thread.
    """

    def __init__(self, snapshot: Callable[[], tuple[str, str]],
                 settle: Callable[[float], bool], *, pump: Pump = PUMP) -> None:
        self.id = f"tl{uuid.uuid4().hex}"
        self._snapshot = snapshot
        self._settle = settle
        self._pump = pump
        self._lock = threading.Lock()
        self._sent: dict[str, str] | None = None
        self._scheduled = False
        self._closed = False

    def data(self) -> dict[str, str]:
        """The output's data now: the text snapshot and the HTML one in a marked ``div``."""
        text, html = self._snapshot()
        return {"text/plain": text,
                "text/html": f'<div class="tl-static tl-static-{self.id}">{html}</div>'}

    def show(self) -> None:
        """Display the static output (under its display id) and keep it current."""
        data = self.data()
        with self._lock:
            self._sent = data
        display(data, raw=True, display_id=self.id)  # type: ignore[no-untyped-call]
        _shown.add(self)

    def refresh(self) -> bool:
        """Replace the output if the snapshot changed; ``True`` if it was replaced."""
        if self._closed or self._sent is None:
            return False
        data = self.data()
        with self._lock:
            if self._closed or data == self._sent:
                return False
            self._sent = data
        update_display(data, raw=True, display_id=self.id)  # type: ignore[no-untyped-call]
        return True

    def touch(self) -> None:
        """The widget changed: refresh within :data:`REFRESH_S` (coalesced)."""
        with self._lock:
            if self._closed or self._sent is None or self._scheduled:
                return
            self._scheduled = True
        self._pump.schedule(self, REFRESH_S)

    def flush(self) -> None:
        """The pump's call: refresh now."""
        with self._lock:
            self._scheduled = False
        self.refresh()

    def settle_and_refresh(self, timeout: float = SETTLE_S) -> bool:
        """Wait for the widget's pending updates, then refresh."""
        self._settle(timeout)
        return self.refresh()

    def close(self) -> None:
        """Stop refreshing (the last output stays as it is)."""
        with self._lock:
            self._closed = True
        _shown.discard(self)


def show_with_static_view(view: Any, text: str, static: StaticView) -> None:
    """Display a widget's ``view`` bundle (its data, or data and metadata; its
    ``text/plain`` replaced by ``text``), then ``static``. Outside a kernel (plain Python,
    terminal IPython) only the static text is printed: there is no frontend to draw the
    view."""
    if getattr(get_ipython(), "kernel", None) is None:
        print(static.data()["text/plain"])
        return
    data, metadata = view if isinstance(view, tuple) else (view, {})
    shown = {key: value for key, value in data.items() if key != "text/html"}
    display({**shown, "text/plain": text}, raw=True,  # type: ignore[no-untyped-call]
            metadata=metadata)
    static.show()


def refresh_static_views(*_: Any) -> None:
    """Send every shown widget's pending updates, then refresh its static output (the
    ``post_run_cell`` hook of the widgets plugin)."""
    for static in list(_shown):
        static.settle_and_refresh()
