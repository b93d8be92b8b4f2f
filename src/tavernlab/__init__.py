"""tavernlab: agent workspaces, sandboxed JavaScript skill scripts and git worktrees in Jupyter.

The public API is small: :class:`Lab` (runs, chats, sessions, skills, retention),
:class:`Run` (tool calls, shell, ``js``), :class:`ToolResult`, the error root
:class:`TavernlabError`, and the :mod:`tavernlab.worktree` package. Names are imported lazily
so that ``import tavernlab`` stays cheap (the sandbox's worker processes import this package).

``tavernlab`` is also an IPython extension: ``%load_ext tavernlab`` (the tavernlab kernel
loads it) registers the magics of :mod:`tavernlab.notebook`, imported only then.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tavernlab import _compat

if TYPE_CHECKING:
    from tavernlab import worktree
    from tavernlab.errors import TavernlabError
    from tavernlab.host import Lab, Run
    from tavernlab.paths import WorkspacePath
    from tavernlab.workspace.tooling import ToolResult

__all__ = ["Lab", "Run", "TavernlabError", "ToolResult", "WorkspacePath", "worktree"]
__version__ = "0.1.0"

_HOMES = {
    "Lab": "tavernlab.host.lab",
    "Run": "tavernlab.host.run",
    "TavernlabError": "tavernlab.errors",
    "ToolResult": "tavernlab.workspace.tooling",
    "WorkspacePath": "tavernlab.paths",
}
_SUBPACKAGES = frozenset({"worktree"})

_compat.install()


def __getattr__(name: str) -> Any:
    """Import a public name on first use."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"tavernlab.{name}")
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tavernlab' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def load_ipython_extension(ip: Any) -> None:
    """``%load_ext tavernlab``: the magics, settings and rich display
    (:func:`tavernlab.notebook.load_ipython_extension`)."""
    from tavernlab import notebook

    notebook.load_ipython_extension(ip)


def unload_ipython_extension(ip: Any) -> None:
    """``%unload_ext tavernlab``: undo the load, putting back IPython's own ``%%js``."""
    from tavernlab import notebook

    notebook.unload_ipython_extension(ip)
