"""A small ES module bundler for the kit: one package's relative ESM graph -> one module.

es-toolkit publishes its ESM entry as 200-odd files; the kit serves each library as a single
module, so :func:`bundle_esm` joins them. :mod:`tavernlab.js.kit._esm_graph` parses every module
with tree-sitter-javascript and removes its ``import``/``export`` statements at exact byte
offsets; this module links the records and emits:

* one ``const __kit_m<N> = (() => { ... return {<exports>}; })();`` per dependency, in ESM
  evaluation order (depth-first, in the order each module requests its imports), where each
  import becomes a ``const`` read from the dependency's exports object at the top of the
  function (imports are hoisted in ESM too);
* the entry's exports as real ``export { local as name }`` clauses, names computed statically
  (``export *`` included, with ESM's rule that a name two star exports bind differently is
  ambiguous and left out).

A graph that is one module without imports is returned unchanged (marked's ``marked.esm.js``).

Refused with :class:`~tavernlab.js._errors.KitBuildFailed` rather than bundled wrongly
(tavernlab choices; none occurs in the pinned packages): a bare or missing import, a cycle
(exports are read when the importer starts, so a cycle would see unfinished modules), an
exported ``let``/``var`` binding that the module assigns again (importers read its value
once, not a live binding), destructuring or string-named exports, import attributes,
``import.meta``, dynamic ``import()``, top-level ``await`` and sources that contain the
bundler's own ``__kit_`` prefix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from tavernlab.js.kit._esm_graph import (
    PREFIX,
    EsmModule,
    check_wrappable,
    decoded,
    edited_text,
    load_graph,
    refused,
)


@dataclass(frozen=True, slots=True)
class Bundle:
    """The bundled module, the names it exports (``default`` included when present) and how
    many package files went into it."""

    source: str
    names: tuple[str, ...]
    files: int


def bundle_esm(files: Mapping[str, bytes], entry: str, package: str) -> Bundle:
    """Bundle ``entry`` and the modules it imports from ``files`` (paths inside the package)."""
    graph = load_graph(files, entry, package)
    order = _evaluation_order(graph, entry, package)
    linker = _Linker(graph, package)
    names = linker.names(entry)
    if len(order) == 1:
        return Bundle(decoded(graph[entry].source, entry, package), tuple(sorted(names)), 1)
    variables = {path: f"{PREFIX}m{index}" for index, path in enumerate(order)}
    parts = [f"// {package}: {entry} and the modules it imports, bundled by tavernlab.\n"]
    for path in order:
        parts.append(linker.wrapped(graph[path], variables))
    entry_var = variables[entry]
    locals_ = [f"{PREFIX}e{index}" for index in range(len(names))]
    ordered = sorted(names)
    if ordered:
        parts.append("const " + ",\n  ".join(
            f"{local} = {entry_var}[{json.dumps(name)}]" for local, name in zip(
                locals_, ordered, strict=True)) + ";\n")
        parts.append("export {\n  " + ",\n  ".join(
            f"{local} as {export_name(name)}" for local, name in zip(
                locals_, ordered, strict=True)) + ",\n};\n")
    return Bundle("".join(parts), tuple(ordered), len(order))


def export_name(name: str) -> str:
    """``name`` as a ModuleExportName: itself when it is an ASCII identifier name (reserved
    words included, as ``export { x as default }`` allows), else a string literal."""
    head, tail = name[:1], name[1:]
    simple = (head.isascii() and (head.isalpha() or head in "_$")
              and all(c.isascii() and (c.isalnum() or c in "_$") for c in tail))
    return name if simple else json.dumps(name)


# --- linking and emitting ----------------------------------------------------------------------


def _evaluation_order(graph: Mapping[str, EsmModule], entry: str, package: str) -> list[str]:
    """Post-order depth-first over each module's requests (ESM's order); refuses cycles."""
    order: list[str] = []
    state: dict[str, bool] = {}  # False while on the stack, True when done

    def visit(path: str) -> None:
        if state.get(path) is True:
            return
        if path in state:
            raise refused(package, path, "it is part of an import cycle")
        state[path] = False
        for request in graph[path].requests:
            visit(request)
        state[path] = True
        order.append(path)

    visit(entry)
    return order


class _Linker:
    """Export names and bindings of a loaded, acyclic graph (memoized per module)."""

    def __init__(self, graph: Mapping[str, EsmModule], package: str) -> None:
        self.graph = graph
        self.package = package
        self._names: dict[str, frozenset[str]] = {}

    def resolve(self, path: str, name: str) -> tuple[str, str] | None:
        """The binding (module, local) that export ``name`` of ``path`` stands for; ``None``
        when it is missing or ambiguous between star exports."""
        module = self.graph[path]
        if name in module.local_exports:
            local = module.local_exports[name]
            for target, imported, bound in module.bindings:
                if bound == local:
                    return (target, "*") if imported == "*" else self.resolve(target, imported)
            return path, local
        if name in module.reexports:
            target, imported = module.reexports[name]
            return (target, "*") if imported == "*" else self.resolve(target, imported)
        if name == "default":
            return None
        found = {self.resolve(star, name) for star in module.stars} - {None}
        return found.pop() if len(found) == 1 else None

    def names(self, path: str) -> frozenset[str]:
        """Every name module ``path`` exports (star exports expanded, ambiguous ones out)."""
        cached = self._names.get(path)
        if cached is None:
            module = self.graph[path]
            names = {*module.local_exports, *module.reexports}
            for star in module.stars:
                names.update(name for name in self.names(star)
                             if name != "default" and self.resolve(path, name) is not None)
            cached = self._names[path] = frozenset(names)
        return cached

    def exports_object(self, module: EsmModule, variables: Mapping[str, str]) -> str:
        """``return { __proto__: null, "<name>": <value>, ... };`` for ``module``."""
        entries = []
        for name in sorted(self.names(module.path)):
            if name in module.local_exports:
                value = module.local_exports[name]
            elif name in module.reexports:
                target, imported = module.reexports[name]
                value = variables[target] + (
                    "" if imported == "*" else f"[{json.dumps(imported)}]")
            else:
                star = next(s for s in module.stars if self.resolve(s, name) is not None)
                value = f"{variables[star]}[{json.dumps(name)}]"
            entries.append(f"{json.dumps(name)}: {value}")
        return "return { __proto__: null, " + ", ".join(entries) + " };\n"

    def wrapped(self, module: EsmModule, variables: Mapping[str, str]) -> str:
        """One module as ``const __kit_m<N> = (() => { ... })();``."""
        package = self.package
        if PREFIX.encode("ascii") in module.source:
            raise refused(package, module.path, f"it contains the bundler's prefix `{PREFIX}`")
        check_wrappable(module, package)
        reads = []
        for target, name, local in module.bindings:
            if name != "*" and name not in self.names(target):
                raise refused(package, module.path, f"`{target}` does not export `{name}`")
            reads.append(f"const {local} = {variables[target]}"
                         + ("" if name == "*" else f"[{json.dumps(name)}]") + ";")
        return (f"// {module.path}\nconst {variables[module.path]} = (() => {{ "
                f"{' '.join(reads)}\n{edited_text(module, package)}\n"
                f"{self.exports_object(module, variables)}}})();\n")
