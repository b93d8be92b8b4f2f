"""Lazy package faces: a face names where each of its public names lives, and the name's
module is imported when the name is first used.

A face that hands on many names from many modules would otherwise import all of them as soon
as any one is asked for (``from tavernlab.workspace.storage import WorkspaceFs`` would load the
whole room). A lazy face keeps a table ``_HOMES`` (name -> module), imports the names under
``TYPE_CHECKING`` for the type checker, and sets ``__getattr__ = lazy_names(__name__, _HOMES)``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(module: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module-level ``__getattr__`` of the face ``module``: a name listed in ``homes`` is
    imported from its module on first use and kept on the face (later lookups are plain
    attribute reads); any other name is an ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[module], name, value)
        return value

    return __getattr__
