"""Live notebook widgets for a run and for worktree provisioning.

``FileTree(run)`` shows the workspace as the model sees it, ``Timeline(run)`` its rounds and
calls, ``RunView(run)`` both side by side; ``ProvisionProgress`` (made by
:func:`progress_for`) shows a worktree provision with a Cancel button. Importing this
package registers the ``run.show`` presenter, so ``run.show()`` displays a ``RunView``.

What the magics call (``%tavern tree``, ``%tavern timeline``, ``%worktree new``)::

    FileTree(run, path="", show_hidden=False)   # %tavern tree [PATH]: return it (displayed)
    Timeline(run)                               # %tavern timeline: return it
    progress = progress_for(slug)               # %worktree new SLUG …
    display(progress)
    result = progress.provision(tool_input, runtime=lab.services.worktree)  # {cwd, branch}

``progress`` is also the seam the command line's text progress uses: it is callable as the
``on_progress`` observer (``progress(event)``) and ``progress.context(caller_key)`` returns a
whole :class:`~tavernlab.worktree.ProvisionContext` (its signal is what Cancel
cancels, its ``on_output`` takes the hook lines), for a caller that runs the provision
itself with :func:`~tavernlab.worktree.run_with_provision_context`. A cancelled provision
raises ``ProvisionCancelledError`` (``interrupted`` tells a kernel interrupt from the
button), exactly as without the widget.
"""

from __future__ import annotations

from tavernlab.host import register_presenter
from tavernlab.notebook.widgets._file_tree import FileTree
from tavernlab.notebook.widgets._plugin import load_widgets, unload_widgets
from tavernlab.notebook.widgets._preview import node_preview
from tavernlab.notebook.widgets._provision import ProvisionProgress, progress_for
from tavernlab.notebook.widgets._run_view import RunView, show_run
from tavernlab.notebook.widgets._snapshots import plural
from tavernlab.notebook.widgets._timeline import Timeline
from tavernlab.notebook.widgets._timeline_detail import describe
from tavernlab.notebook.widgets._timeline_state import TIMELINE_TYPES, Bar, TimelineState
from tavernlab.notebook.widgets._tree_state import TreeState

__all__ = [
    "TIMELINE_TYPES",
    "Bar",
    "FileTree",
    "ProvisionProgress",
    "RunView",
    "Timeline",
    "TimelineState",
    "TreeState",
    "describe",
    "load_widgets",
    "node_preview",
    "plural",
    "progress_for",
    "show_run",
    "unload_widgets",
]

register_presenter("run.show", show_run)
