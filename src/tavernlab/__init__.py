"""tavernlab: agent workspaces, sandboxed JavaScript skill scripts and git worktrees in Jupyter.

The public API is small: :class:`Lab` (runs, chats, sessions, skills, retention),
:class:`Run` (tool calls, shell, ``js``), :class:`ToolResult`, the error root
:class:`TavernlabError`, and the :mod:`tavernlab.worktree` package. Names are imported lazily
so that ``import tavernlab`` stays cheap (the sandbox's worker processes import this package).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tavernlab.errors import TavernlabError
    from tavernlab.lab import Lab
    from tavernlab.paths import WorkspacePath
    from tavernlab.workspace.runs import Run
    from tavernlab.workspace.tooling import ToolResult

__all__ = ["Lab", "Run", "TavernlabError", "ToolResult", "WorkspacePath"]
__version__ = "0.1.0"

_HOMES = {
    "Lab": "tavernlab.lab",
    "Run": "tavernlab.workspace.runs",
    "TavernlabError": "tavernlab.errors",
    "ToolResult": "tavernlab.workspace.tooling",
    "WorkspacePath": "tavernlab.paths",
}


def __getattr__(name: str) -> Any:
    """Import a public name on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tavernlab' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
