"""Module graphs: load every module a job may import and rewrite its specifiers.

jsbox only finds modules registered under a literal name; it resolves neither ``./`` nor
``../``. So before a job starts the parent walks the module graph:

1. :func:`~tavernlab.js.scan_module` finds every literal specifier of a module;
2. each specifier is looked up in the mode's built-in modules first
   (:mod:`tavernlab.js._builtins`), then resolved and loaded by the mode's
   :class:`~tavernlab.js._loaders.ModuleLoader`;
3. :func:`build_module_graph` replaces each literal, at its exact byte offsets, with the
   canonical name of its target (a JSON string; lines never move, so stack line numbers stay
   right) and returns every module of the graph, ready to be registered in the worker.

Failures:

* Static imports fail the whole job before anything runs (:class:`ModuleLoadError`, which
  names the importing file, line and column).
* A literal ``import()`` whose target cannot be loaded does not fail the job: it is pointed at
  a stub module that throws the same message when (and only if) the import is executed, so
  ``try { await import('./optional.js') } catch {}`` works as on demand loading would. Its
  target is read up front, though, and counts toward the input budget.
* Import attributes (``with {...}`` / ``assert {...}`` on a static import or export, or a
  second argument to ``import()``) fail with :data:`~tavernlab.js._limits.IMPORT_ATTRIBUTES`,
  static or dynamic, before any resolution (so built-in names get it too).
* A computed ``import(expr)`` cannot be resolved ahead of time; the engine rejects it with its
  own ``module not found: <specifier>`` unless the specifier happens to be a registered name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tavernlab.js._errors import ModuleLoadError
from tavernlab.js._limits import IMPORT_ATTRIBUTES
from tavernlab.js._loaders import ModuleLoader, decode_source, dirname
from tavernlab.js._scan import SpecifierSite, scan_module

#: Prefix of names the sandbox registers for itself (never reachable by a static import).
INTERNAL_PREFIX = "<tavernlab:"


@dataclass(slots=True)
class ModuleGraph:
    """Every module a job may import, keyed by canonical name, with specifiers rewritten."""

    entry: str
    modules: dict[str, str] = field(default_factory=dict)

    def register_stub(self, message: str) -> str:
        """A module that throws ``message`` when evaluated; returns its (internal) name."""
        name = f"{INTERNAL_PREFIX}unavailable:{len(self.modules)}>"
        self.modules[name] = f"throw new Error({json.dumps(message)});\n"
        return name


def build_module_graph(entry: str, source: bytes, loader: ModuleLoader, *,
                       directory: str | None = None) -> ModuleGraph:
    """Load the entry's whole static graph (plus literal dynamic imports) through ``loader``.

    ``source`` is the entry's bytes, already charged to any budget. The entry's relative
    specifiers resolve against ``directory`` (default: the directory of its name; a named
    eval module such as ``<cell 4>`` passes the shell's cwd), every other module's against its
    own directory. Raises :class:`ModuleLoadError` (located at the failing import) for a
    static failure.
    """
    graph = ModuleGraph(entry)
    pending: list[tuple[str, bytes]] = [(entry, source)]
    seen = {entry}
    while pending:
        name, data = pending.pop()
        text = decode_source(data)
        base = directory if name == entry and directory is not None else dirname(name)
        edits: list[tuple[SpecifierSite, str]] = []
        for site in scan_module(data).sites:
            try:
                target = _target(site, name, base, loader, graph, seen, pending)
            except ModuleLoadError as exc:
                if not site.dynamic or site.attributes:
                    raise exc.located(name, site.line, site.column) from None
                target = graph.register_stub(exc.message)
            if target != site.value or site.newlines:
                edits.append((site, target))
        graph.modules[name] = _rewrite(data, edits) if edits else text
    return graph


def _target(site: SpecifierSite, importer: str, base: str, loader: ModuleLoader,
            graph: ModuleGraph, seen: set[str], pending: list[tuple[str, bytes]]) -> str:
    """The canonical name ``site`` points at, loading (or queueing) what it needs."""
    if site.attributes:
        raise ModuleLoadError(IMPORT_ATTRIBUTES)
    builtin = loader.builtins.get(site.value)
    if builtin is not None:
        if builtin.source is not None and builtin.name not in seen:
            module_source = builtin.source()
            loader.admit_builtin(builtin.name, module_source)
            seen.add(builtin.name)
            graph.modules[builtin.name] = module_source
        return builtin.name
    target = loader.resolve(site.value, importer, base)
    if target not in seen:
        target_source = loader.load(target, importer)
        decode_source(target_source)
        seen.add(target)
        pending.append((target, target_source))
    return target


def _rewrite(data: bytes, edits: list[tuple[SpecifierSite, str]]) -> str:
    """Replace each literal with the JSON string of its target, keeping line breaks."""
    out: list[bytes] = []
    cursor = 0
    for site, target in sorted(edits, key=lambda e: e[0].start):
        out.append(data[cursor:site.start])
        out.append(json.dumps(target, ensure_ascii=False).encode("utf-8"))
        out.append(b"\n" * site.newlines)
        cursor = site.end
    out.append(data[cursor:])
    return b"".join(out).decode("utf-8")
