"""The host floor: labs, runs, the tool registry, dispatch, rounds, retention and sessions.

:class:`Lab` and :class:`Run` are the user's handles; the rest is the bookkeeping behind
them, one concern per module. Nothing below this floor imports it.

The names are imported on first use, so that importing one small host module (the
public package imports :mod:`tavernlab.host.presentation` to register its providers) does not
load the whole floor.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tavernlab.host.lab import Lab
    from tavernlab.host.registry import (
        DEFAULT_TOOLS,
        ToolProvider,
        ToolRegistry,
        worktree_tools,
    )
    from tavernlab.host.run import Run
    from tavernlab.host.services import LabServices

__all__ = ["DEFAULT_TOOLS", "Lab", "LabServices", "Run", "ToolProvider", "ToolRegistry",
           "worktree_tools"]

_HOMES = {
    "DEFAULT_TOOLS": "tavernlab.host.registry",
    "Lab": "tavernlab.host.lab",
    "LabServices": "tavernlab.host.services",
    "Run": "tavernlab.host.run",
    "ToolProvider": "tavernlab.host.registry",
    "ToolRegistry": "tavernlab.host.registry",
    "worktree_tools": "tavernlab.host.registry",
}


def __getattr__(name: str) -> Any:
    """Import a host name on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tavernlab.host' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
