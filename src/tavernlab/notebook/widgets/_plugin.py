"""The widgets' part of the ``tavernlab`` extension (which calls :func:`load_widgets` and
:func:`unload_widgets`).

Loading it upgrades ``%tavern tree`` to the live :class:`FileTree`, adds ``%tavern timeline``
(the live :class:`Timeline`) and makes ``%worktree new`` show a :class:`ProvisionProgress`
widget (phases, hook output, a Cancel button) instead of the text line; unloading puts the
text progress back (``%tavern`` itself goes with the magics).
"""

from __future__ import annotations

import argparse
from typing import Any

from IPython.display import display

from tavernlab.cancel import CancelToken
from tavernlab.notebook._commands import Subcommand, natural
from tavernlab.notebook._progress import set_progress_factory
from tavernlab.notebook._state import NotebookState
from tavernlab.notebook.widgets._fallback import refresh_static_views
from tavernlab.notebook.widgets._file_tree import FileTree
from tavernlab.notebook.widgets._provision import ProvisionProgress, progress_for
from tavernlab.notebook.widgets._timeline import Timeline
from tavernlab.worktree import Outcome, OutputLine, ProgressEvent


class WidgetProgress:
    """``%worktree new``'s progress seam shown by a :class:`ProvisionProgress` widget: its
    Cancel button cancels the provision's own token. The cell's output is updated once more
    when the provision ends, so a saved notebook's text and HTML snapshot show the outcome
    and every phase (not the state at the moment the widget appeared)."""

    def __init__(self, slug: str, token: CancelToken) -> None:
        self.widget: ProvisionProgress = progress_for(slug)
        self.widget.signal = token
        self.widget.context()  # the phases' time starts now
        self._handle = display(self.widget, display_id=True)  # type: ignore[no-untyped-call]

    def update(self, event: ProgressEvent) -> None:
        """A progress event (any thread)."""
        self.widget(event)

    def output(self, line: OutputLine) -> None:
        """A line a hook printed (a reader thread)."""
        self.widget.on_output(line)

    def close(self, outcome: Outcome) -> None:
        """The provision ended; a failure before any progress event still shows as one. The
        snapshot in the cell's output is refreshed to the final state."""
        if outcome == "failed":
            self.widget.failed("the provision failed (see the error below)")
        if self._handle is not None:
            self._handle.update(self.widget)


def _tree(state: NotebookState, args: argparse.Namespace) -> Any:
    if args.static or args.depth is not None:
        return state.run.tree(args.path, depth=args.depth, include_hidden=args.hidden)
    return FileTree(state.run, args.path, show_hidden=args.hidden)


def _tree_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", default="", metavar="PATH",
                        help="the folder to show (default: the whole workspace)")
    parser.add_argument("--depth", type=natural, default=None, metavar="N",
                        help="a static tree, N levels below PATH")
    parser.add_argument("--hidden", action="store_true", help="also the run's own files")
    parser.add_argument("--static", action="store_true",
                        help="the tree as it is now (a TreeNode), not the live widget")


def _timeline(state: NotebookState, args: argparse.Namespace) -> Any:
    return Timeline(state.run)


TREE = Subcommand("tree", "the current run's workspace as the model sees it, live (a "
                  "widget: expand, filter, select a file)", _tree, _tree_arguments)
TIMELINE = Subcommand("timeline", "the current run's rounds and calls, live (a widget: "
                      "select a bar for its arguments, result and files)", _timeline)


def load_widgets(ip: Any) -> None:
    """Upgrade ``%tavern tree``, add ``%tavern timeline``, show provisioning as a widget,
    and bring the static views of the displayed widgets up to date at the end of each cell."""
    from tavernlab.notebook import register_tavern_command

    register_tavern_command(TREE, replace=True, ip=ip)
    register_tavern_command(TIMELINE, replace=True, ip=ip)
    set_progress_factory(WidgetProgress)
    if refresh_static_views not in ip.events.callbacks["post_run_cell"]:
        ip.events.register("post_run_cell", refresh_static_views)


def unload_widgets(ip: Any) -> None:
    """Put the text progress back (the ``%tavern`` commands go with the magics) and stop
    refreshing static views at the end of cells."""
    set_progress_factory(None)
    if refresh_static_views in ip.events.callbacks["post_run_cell"]:
        ip.events.unregister("post_run_cell", refresh_static_views)
