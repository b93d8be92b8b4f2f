"""Built-in modules: the one place where a bare module name becomes a module.

A script imports a built-in module by its exact name (docs/js-and-skills.md: names are
case-sensitive and never extended, so ``@tauritavern/Kit/marked`` and
``@tauritavern/kit/marked/lib.js`` are just other bare names). Every mode has one
:class:`BuiltinModules` set, held by its module loader (:mod:`tavernlab.js._loaders`), and
:func:`~tavernlab.js._modules.build_module_graph` asks that set about each specifier **before**
the loader's own path rules:

* a :class:`BuiltinModule` without ``source`` is the runtime API module: the worker registers
  its own source under that name (:data:`tavernlab.js._bootstrap.RUNTIME_SOURCE`);
* a :class:`BuiltinModule` with a ``source`` callable is a self-contained ES module shipped by
  the host (the script kit): its text is fetched once per job that imports it,
  registered under its exact name, never scanned or rewritten, and offered to the loader's
  ``admit_builtin`` (the V5 command charges its bytes to the shell call's input budget; legacy
  scripts do not count it toward the skill's snapshot). A ``source`` that cannot produce the
  module raises :class:`~tavernlab.js._errors.ModuleLoadError`, which fails the job as a load
  failure located at the import.

Where the kit plugs in: ``tavernlab.js.kit`` (kept free of imports from this module) exposes
the kit's module names and a function that returns a module's source; the two sets below
hold one ``BuiltinModule(name, source=..., group="kit")`` per kit module
(:func:`kit_builtin`). ``js --help`` lists whatever the command's set holds
(:meth:`BuiltinModules.summary`), so the help and the resolver can never disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass

from tavernlab.js._errors import KitError, ModuleLoadError
from tavernlab.js.kit import KIT_MODULES, kit_module_source

#: The ``time.monotonic()`` instant by which a built-in module's source must be ready: the
#: job's deadline while the ``js`` command builds its module graph (``None``: unbounded). A
#: kit module not ready by then raises :class:`~tavernlab.js.kit.KitDeadlinePassed`,
#: and the job ends as timed out.
LOAD_DEADLINE: ContextVar[float | None] = ContextVar("tavernlab_js_load_deadline",
                                                     default=None)

#: The V5 runtime API module.
RUNTIME_MODULE = "@tauritavern/runtime"
#: The legacy (V2) runtime API module; legacy mode registers the API under both names.
LEGACY_RUNTIME_MODULE = "@tauritavern/runtime/v1"


@dataclass(frozen=True, slots=True)
class BuiltinModule:
    """One module a script imports by its exact bare ``name``.

    ``source`` is ``None`` for the runtime API module, else a callable that returns the
    module's ES source; ``group`` gathers modules in the help listing (``"kit"``: ``the kit:
    @tauritavern/kit/dayjs, es-toolkit, ...``).
    """

    name: str
    source: Callable[[], str] | None = None
    group: str | None = None


class BuiltinModules:
    """The built-in modules of one mode, looked up by exact name."""

    def __init__(self, modules: Iterable[BuiltinModule]) -> None:
        self._modules = {module.name: module for module in modules}

    def get(self, specifier: str) -> BuiltinModule | None:
        """The built-in module named exactly ``specifier``, if there is one."""
        return self._modules.get(specifier)

    def __contains__(self, specifier: object) -> bool:
        return specifier in self._modules

    @property
    def runtime_names(self) -> tuple[str, ...]:
        """The names under which the worker registers the runtime API module."""
        return tuple(name for name, module in self._modules.items() if module.source is None)

    def summary(self) -> str:
        """The modules for ``js --help``: ungrouped ones by full name, then each group as
        ``the <group>: <first full name>, <the others' last segments>``."""
        parts = [name for name, module in self._modules.items() if module.group is None]
        groups: dict[str, list[str]] = {}
        for name, module in self._modules.items():
            if module.group is not None:
                groups.setdefault(module.group, []).append(name)
        for group, names in groups.items():
            short = [name.rsplit("/", 1)[-1] for name in names[1:]]
            parts.append(f"the {group}: " + ", ".join([names[0], *short]))
        return " and ".join(parts)


def kit_builtin(name: str) -> BuiltinModule:
    """The kit module ``name`` as a built-in: its source comes from the per-user kit cache,
    fetched on demand (:func:`tavernlab.js.kit.kit_module_source`); a kit failure (offline
    without a cache, a tarball that fails its integrity check) becomes the import's
    :class:`ModuleLoadError` with the kit's message."""

    def source() -> str:
        try:
            return kit_module_source(name, deadline=LOAD_DEADLINE.get())
        except KitError as exc:
            raise ModuleLoadError(exc.message) from None

    return BuiltinModule(name, source=source, group="kit")


#: The six kit modules, shared by both modes.
KIT_BUILTINS = tuple(kit_builtin(name) for name in KIT_MODULES)
#: The V5 command's built-in modules.
COMMAND_BUILTINS = BuiltinModules([BuiltinModule(RUNTIME_MODULE), *KIT_BUILTINS])
#: The legacy engine's built-in modules: the V2 name, the V3 name and the kit.
LEGACY_BUILTINS = BuiltinModules([BuiltinModule(LEGACY_RUNTIME_MODULE),
                                  BuiltinModule(RUNTIME_MODULE), *KIT_BUILTINS])
