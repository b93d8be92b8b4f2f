"""ES module graphs of a package, parsed for the kit bundler (:mod:`tavernlab.js.kit._bundle`).

:func:`load_graph` parses the entry and every module it imports (relative specifiers only;
values come from :func:`tavernlab.js.scan_module`, the one place that reads them) into
:class:`EsmModule` records: what each module requests, binds, exports and re-exports, plus the
byte-offset edits that remove its ``import``/``export`` syntax. :func:`check_wrappable`
refuses what a function wrapper would change. Failures are
:class:`~tavernlab.js._errors.KitBuildFailed` naming the package file.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import tree_sitter_javascript
from tree_sitter import Language, Node, Parser

from tavernlab.js._errors import KitBuildFailed
from tavernlab.js._scan import SpecifierSite, scan_module

_LANGUAGE = Language(tree_sitter_javascript.language())
_Sites = Mapping[int, SpecifierSite]
#: Prefix of every name the bundler adds; a source that contains it is refused.
PREFIX = "__kit_"
_DEFAULT_LOCAL = "__kit_default"
_ASSIGNMENTS = frozenset({"assignment_expression", "augmented_assignment_expression"})
_FUNCTION_SCOPES = frozenset({
    "function_declaration", "function_expression", "arrow_function", "method_definition",
    "generator_function_declaration", "generator_function", "class_static_block"})


@dataclass(slots=True)
class EsmModule:
    """One parsed module: what it imports and exports, and the edits that remove the
    ``import``/``export`` syntax from its body."""

    path: str
    source: bytes
    requests: list[str] = field(default_factory=list)
    bindings: list[tuple[str, str, str]] = field(default_factory=list)  # target, name, local
    local_exports: dict[str, str] = field(default_factory=dict)  # exported -> local
    reexports: dict[str, tuple[str, str]] = field(default_factory=dict)  # -> (target, name)
    stars: list[str] = field(default_factory=list)
    edits: list[tuple[int, int, str]] = field(default_factory=list)
    mutable: set[str] = field(default_factory=set)


def module_export_names(source: bytes, path: str, package: str) -> tuple[str, ...]:
    """The names one module exports, read from its own statements (no ``export *``)."""
    module = parse_module(path, source, package)
    if module.stars:
        raise refused(package, path, "`export *` needs the whole graph")
    return tuple(sorted({*module.local_exports, *module.reexports}))


def load_graph(files: Mapping[str, bytes], entry: str, package: str) -> dict[str, EsmModule]:
    """``entry`` and every module it imports, transitively, keyed by package path."""
    graph: dict[str, EsmModule] = {}
    pending = [entry]
    while pending:
        path = pending.pop()
        if path in graph:
            continue
        if path not in files:
            raise KitBuildFailed(f"The {package} package has no file `{path}`.", package=package)
        module = graph[path] = parse_module(path, files[path], package)
        pending.extend(module.requests)
    return graph


def parse_module(path: str, source: bytes, package: str) -> EsmModule:
    """The import/export record of one module (top-level statements only, as ESM allows)."""
    module = EsmModule(path, source)
    sites = {site.start: site for site in scan_module(source).sites}
    root = Parser(_LANGUAGE).parse(source).root_node
    if root.has_error:
        raise refused(package, path, "it does not parse as JavaScript")
    for node in root.named_children:
        if node.type == "import_statement":
            _import(module, node, sites, package)
        elif node.type == "export_statement":
            _export(module, node, sites, package)
        else:
            module.mutable.update(_mutable_names(node))
    return module


def _target(module: EsmModule, node: Node, sites: _Sites, package: str) -> str:
    """The package path a statement's ``source`` literal names (recorded as a request)."""
    literal = node.child_by_field_name("source")
    site = sites.get(literal.start_byte) if literal is not None else None
    if site is None or site.attributes:
        raise refused(package, module.path, "an import has attributes or no literal source")
    value = site.value
    target = _package_path(module.path, value)
    if target is None:
        raise refused(package, module.path, f"it imports `{value}`, outside the package")
    if target not in module.requests:
        module.requests.append(target)
    return target


def _package_path(importer: str, specifier: str) -> str | None:
    """The package file a relative ``specifier`` of ``importer`` names; ``None`` for a bare
    name, an absolute path or one that climbs out of the package. (Package paths, not
    workspace module names: the sandbox's loaders have their own rules.)"""
    if not specifier.startswith(("./", "../")):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(importer), specifier))
    return None if joined == ".." or joined.startswith("../") else joined


def _import(module: EsmModule, node: Node, sites: _Sites, package: str) -> None:
    target = _target(module, node, sites, package)
    module.edits.append(_blank(node))
    clause = next((c for c in node.named_children if c.type == "import_clause"), None)
    for part in clause.named_children if clause is not None else ():
        if part.type == "identifier":
            module.bindings.append((target, "default", _text_of(part)))
        elif part.type == "namespace_import":
            module.bindings.append((target, "*", _text_of(part.named_children[-1])))
        elif part.type == "named_imports":
            for spec in part.named_children:
                if spec.type == "import_specifier":
                    name, local = _specifier(spec, module.path, package)
                    module.bindings.append((target, name, local))


def _export(module: EsmModule, node: Node, sites: _Sites, package: str) -> None:
    declaration = node.child_by_field_name("declaration")
    value = node.child_by_field_name("value")
    is_default = any(child.type == "default" for child in node.children)
    if node.child_by_field_name("source") is not None:
        _reexport(module, node, _target(module, node, sites, package), package)
    elif declaration is not None:
        module.edits.append((node.start_byte, declaration.start_byte, ""))
        for name in _declared_names(module, declaration, package):
            module.local_exports["default" if is_default else name] = name
    elif value is not None:
        module.edits.append((node.start_byte, value.start_byte, f"const {_DEFAULT_LOCAL} = "))
        module.edits.append((value.end_byte, node.end_byte, ";"))
        module.local_exports["default"] = _DEFAULT_LOCAL
    else:
        module.edits.append(_blank(node))
        for clause in node.named_children:
            for spec in clause.named_children if clause.type == "export_clause" else ():
                local, name = _specifier(spec, module.path, package)
                module.local_exports[name] = local


def _reexport(module: EsmModule, node: Node, target: str, package: str) -> None:
    module.edits.append(_blank(node))
    clause = next((c for c in node.named_children
                   if c.type in ("export_clause", "namespace_export")), None)
    if clause is None:
        module.stars.append(target)
    elif clause.type == "namespace_export":
        module.reexports[_text_of(clause.named_children[-1])] = (target, "*")
    else:
        for spec in clause.named_children:
            name, alias = _specifier(spec, module.path, package)
            module.reexports[alias] = (target, name)


def _specifier(spec: Node, path: str, package: str) -> tuple[str, str]:
    """``(name, alias)`` of an import/export specifier (``a``, ``a as b``, ``default as b``)."""
    parts = [child for child in spec.children if child.type != "comment"]
    if any(part.type == "string" for part in parts):
        raise refused(package, path, "it uses a string-named import or export")
    texts = [_text_of(part) for part in parts]
    if len(texts) == 3 and texts[1] == "as":
        return texts[0], texts[2]
    return texts[0], texts[0]


def _declared_names(module: EsmModule, declaration: Node, package: str) -> list[str]:
    """The names an ``export <declaration>`` binds (``let``/``var`` ones are noted as
    mutable)."""
    if declaration.type not in ("lexical_declaration", "variable_declaration"):
        name = declaration.child_by_field_name("name")
        if name is None:
            raise refused(package, module.path, "it exports an unnamed declaration")
        return [_text_of(name)]
    names = []
    for declarator in declaration.named_children:
        name = declarator.child_by_field_name("name")
        if name is None or name.type != "identifier":
            raise refused(package, module.path, "it exports a destructuring declaration")
        names.append(_text_of(name))
    module.mutable.update(_mutable_names(declaration))
    return names


def _mutable_names(node: Node) -> Iterator[str]:
    """Top-level ``let``/``var`` names of a statement (identifiers only)."""
    if node.type == "variable_declaration" or (
            node.type == "lexical_declaration" and _text_of(node.children[0]) == "let"):
        for declarator in node.named_children:
            name = declarator.child_by_field_name("name")
            if name is not None and name.type == "identifier":
                yield _text_of(name)


def _text_of(node: Node) -> str:
    return (node.text or b"").decode("utf-8")


def _blank(node: Node) -> tuple[int, int, str]:
    """An edit that removes ``node`` but keeps its line breaks."""
    return node.start_byte, node.end_byte, "\n" * (node.text or b"").count(b"\n")


def refused(package: str, path: str, why: str) -> KitBuildFailed:
    """``The kit cannot bundle <package>'s `<path>`: <why>.``"""
    return KitBuildFailed(f"The kit cannot bundle {package}'s `{path}`: {why}.",
                          package=package)


def check_wrappable(module: EsmModule, package: str) -> None:
    """Refuse what a function wrapper would change: ``import.meta``, ``import()``, top-level
    ``await``, and an exported ``let``/``var`` that the module assigns again (importers read
    the value once, so they would not see the change)."""
    root = Parser(_LANGUAGE).parse(module.source).root_node
    assigned: set[str] = set()
    for node, in_function in _walk(root):
        kind = node.type
        if kind == "meta_property" and _text_of(node).startswith("import"):
            raise refused(package, module.path, "it uses import.meta")
        if kind == "call_expression" and node.children[0].type == "import":
            raise refused(package, module.path, "it uses a dynamic import()")
        if kind == "await_expression" and not in_function:
            raise refused(package, module.path, "it uses a top-level await")
        target = (node.child_by_field_name("left") if kind in _ASSIGNMENTS
                  else node.child_by_field_name("argument") if kind == "update_expression"
                  else None)
        if target is not None and target.type == "identifier":
            assigned.add(_text_of(target))
    exported = set(module.local_exports.values()) & module.mutable & assigned
    if exported:
        raise refused(package, module.path,
                       f"it reassigns the exported binding `{sorted(exported)[0]}`")


def _walk(root: Node) -> Iterator[tuple[Node, bool]]:
    """Every node with whether it sits inside a function body."""
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, in_function = stack.pop()
        yield node, in_function
        inner = in_function or node.type in _FUNCTION_SCOPES
        stack.extend((child, inner) for child in reversed(node.children))


def edited_text(module: EsmModule, package: str) -> str:
    """The module's source with its edits applied."""
    out: list[bytes] = []
    cursor = 0
    for start, end, replacement in sorted(module.edits):
        out.append(module.source[cursor:start])
        out.append(replacement.encode("utf-8"))
        cursor = end
    out.append(module.source[cursor:])
    return decoded(b"".join(out), module.path, package)


def decoded(data: bytes, path: str, package: str) -> str:
    """``data`` as UTF-8 text, or the refusal."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise refused(package, path, "it is not UTF-8") from None
