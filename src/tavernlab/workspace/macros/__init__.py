"""Frozen macros: ``{{name}}`` templates expanded with the host facts captured when a run
starts, and the frozen context scripts see."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tavernlab.lazy import lazy_names

if TYPE_CHECKING:
    from tavernlab.workspace.macros._context import FrozenContext
    from tavernlab.workspace.macros._macros import FrozenMacros

__all__ = ["FrozenContext", "FrozenMacros"]

_HOMES = {
    "FrozenContext": "tavernlab.workspace.macros._context",
    "FrozenMacros": "tavernlab.workspace.macros._macros",
}


__getattr__ = lazy_names(__name__, _HOMES)
