"""Frozen macros: ``{{name}}`` templates expanded with the host facts captured when a run
starts, and the frozen context scripts see."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tavernlab.workspace.macros._context import FrozenContext
    from tavernlab.workspace.macros._macros import FrozenMacros

__all__ = ["FrozenContext", "FrozenMacros"]

_HOMES = {
    "FrozenContext": "tavernlab.workspace.macros._context",
    "FrozenMacros": "tavernlab.workspace.macros._macros",
}


def __getattr__(name: str) -> Any:
    """Import a public name on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
