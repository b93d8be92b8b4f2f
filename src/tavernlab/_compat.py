"""Old import paths, kept working for now with a ``DeprecationWarning``.

Revision 2 of the layout moved ``Lab`` and ``Run`` to the host floor. Users may have imported
``tavernlab.lab.Lab`` or ``tavernlab.workspace.runs.Run``; those modules no longer exist as
files (the storage floor must not import the host), so an import hook installed by
``tavernlab/__init__.py`` builds them on demand: each old name warns and hands back the new
object.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

#: Old module -> (new module, the names it offered).
MOVED: dict[str, tuple[str, tuple[str, ...]]] = {
    "tavernlab.lab": ("tavernlab.host.lab", ("Lab",)),
    "tavernlab.workspace.runs": ("tavernlab.host.run", ("Run",)),
}


class _MovedModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        target, names = MOVED[self.__name__]
        if name not in names:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        warnings.warn(f"{self.__name__}.{name} moved to {target}.{name} (or `from tavernlab "
                      f"import {name}`)", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(target), name)


class _MovedLoader:
    """The loader of :data:`MOVED` modules (a plain class: ``importlib.abc`` costs more to
    import than the whole hook)."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _MovedModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__all__ = list(MOVED[module.__name__][1])  # type: ignore[attr-defined]


class MovedModuleFinder:
    """Finds the old module names of :data:`MOVED`."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname in MOVED:
            return importlib.machinery.ModuleSpec(fullname, cast("Loader", _MovedLoader()))
        return None


def install() -> None:
    """Install the finder once."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
