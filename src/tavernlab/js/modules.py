"""Module graphs: find import specifiers with tree-sitter, resolve them, rewrite them.

jsbox only finds modules registered under a literal name; it resolves neither ``./`` nor
``../``. So before a job starts the parent walks the module graph:

1. :func:`scan_module` parses a module with tree-sitter-javascript and returns every static
   ``import``/``export ... from`` source and every ``import()`` whose argument is a literal
   (a string, or a template without substitutions). Strings, templates, regular expressions
   and comments are tokens of the parser, so ``"import x from './y.js'"`` inside a string is
   never mistaken for an import. Results are cached by the SHA-256 of the source.
2. A :class:`ModuleLoader` (one per mode) resolves each specifier against the importing
   module and loads the target: :class:`WorkspaceModuleLoader` for the V5 command (absolute
   shell paths, loaded through the Invocation's ``ScopedWorkspaceFs``) and
   :class:`SnapshotModuleLoader` for the legacy ``skill.run_script`` (logical names inside the
   skill's ``scripts/`` snapshot).
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
  second argument to ``import()``) fail with ``Import attributes are not supported.``
  (upstream wording unknown; tavernlab's choice), static or dynamic.
* A computed ``import(expr)`` cannot be resolved ahead of time; the engine rejects it with its
  own ``module not found: <specifier>`` unless the specifier happens to be a registered name.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import tree_sitter_javascript
from tree_sitter import Language, Node, Parser, Tree

from tavernlab.errors import (
    AccessDenied,
    Cancelled,
    NotFound,
    PathIsDirectory,
    TavernlabError,
    WorkspaceError,
)
from tavernlab.js.budget import InputBudget
from tavernlab.js.limits import IMPORT_ATTRIBUTES, MODULE_NOT_AVAILABLE, SOURCE_NOT_UTF8
from tavernlab.paths import InvalidWorkspacePath, WorkspacePath
from tavernlab.workspace.scope import ScopedWorkspaceFs

#: The V5 built-in module.
RUNTIME_MODULE = "@tauritavern/runtime"
#: The legacy (V2) built-in module; legacy mode registers it under both names.
LEGACY_RUNTIME_MODULE = "@tauritavern/runtime/v1"
#: Prefix of names the sandbox registers for itself (never reachable by a static import).
INTERNAL_PREFIX = "<tavernlab:"

_LANGUAGE = Language(tree_sitter_javascript.language())
_PARSERS = threading.local()
_CACHE_SIZE = 512
_CACHE: OrderedDict[bytes, ModuleScan] = OrderedDict()
_CACHE_LOCK = threading.Lock()


class ModuleLoadError(TavernlabError):
    """A module of the graph cannot be resolved or loaded; the job does not start.

    ``importer``, ``line`` and ``column`` locate the import that failed (empty for the entry).
    """

    code = "js.module_load_failed"

    def __init__(self, message: str, *, importer: str = "", line: int = 0,
                 column: int = 0) -> None:
        super().__init__(message)
        self.importer = importer
        self.line = line
        self.column = column

    def located(self, importer: str, line: int, column: int) -> ModuleLoadError:
        """The same error, pointing at the import site."""
        return ModuleLoadError(self.message, importer=importer, line=line, column=column)

    @property
    def stack(self) -> str:
        """A one-frame stack naming the import site (``    at /scratch/task.js:3:8``)."""
        if not self.importer:
            return ""
        return f"    at {self.importer}:{self.line}:{self.column}"


# --- scanning --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpecifierSite:
    """One literal module specifier in a source: its value and where its literal sits.

    ``start``/``end`` are byte offsets of the whole literal (quotes included); ``line`` and
    ``column`` are 1-based (the column counts bytes); ``newlines`` is the number of line breaks
    inside the literal (line continuations), kept when it is rewritten.
    """

    value: str
    start: int
    end: int
    line: int
    column: int
    dynamic: bool
    attributes: bool
    newlines: int


@dataclass(frozen=True, slots=True)
class ModuleScan:
    """Every literal specifier of one module, in source order."""

    sites: tuple[SpecifierSite, ...]


def _parser() -> Parser:
    parser: Parser | None = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = Parser(_LANGUAGE)
        _PARSERS.parser = parser
    return parser


def scan_module(source: bytes) -> ModuleScan:
    """The literal specifiers of ``source`` (cached by content hash; thread-safe)."""
    key = hashlib.sha256(source).digest()
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            _CACHE.move_to_end(key)
            return cached
    tree = parse_module(source)
    scan = ModuleScan(tuple(_sites(tree.root_node, source)))
    with _CACHE_LOCK:
        _CACHE[key] = scan
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return scan


def parse_module(source: bytes) -> Tree:
    """The tree-sitter syntax tree of ``source``, from the parser :func:`scan_module` uses (for
    tools that need more of a module than its specifiers, such as ``tavernlab skill lint``)."""
    return _parser().parse(source)


def walk_nodes(node: Node) -> Iterator[Node]:
    """Every node below ``node`` (itself included), in source order."""
    cursor = node.walk()
    while True:
        current = cursor.node
        if current is not None:
            yield current
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while True:
            if not cursor.goto_parent():
                return
            if cursor.goto_next_sibling():
                break


def _sites(root: Node, source: bytes) -> Iterator[SpecifierSite]:
    for node in walk_nodes(root):
        if node.type == "string":
            parent = node.parent
            if parent is not None and _field_of(parent, node) == "source":
                yield _site(node, source, dynamic=False,
                            attributes=_attributes_follow(source, node.end_byte))
        elif node.type == "call_expression":
            function = node.child_by_field_name("function")
            arguments = node.child_by_field_name("arguments")
            if function is None or function.type != "import" or arguments is None:
                continue
            values = [c for c in arguments.named_children if c.type != "comment"]
            if not values:
                continue
            first = values[0]
            literal = first.type == "string" or (
                first.type == "template_string"
                and not any(c.type == "template_substitution" for c in first.children))
            if literal:
                yield _site(first, source, dynamic=True, attributes=len(values) > 1)


def _field_of(parent: Node, child: Node) -> str | None:
    for index, candidate in enumerate(parent.children):
        if candidate.id == child.id:
            return parent.field_name_for_child(index)
    return None


def _site(node: Node, source: bytes, *, dynamic: bool, attributes: bool) -> SpecifierSite:
    text = source[node.start_byte:node.end_byte]
    return SpecifierSite(
        value=_literal_value(node, source),
        start=node.start_byte,
        end=node.end_byte,
        line=node.start_point.row + 1,
        column=node.start_point.column + 1,
        dynamic=dynamic,
        attributes=attributes,
        newlines=text.count(b"\n") + text.count(b"\r") - text.count(b"\r\n"),
    )


def _skip_trivia(source: bytes, pos: int) -> int:
    """Skip whitespace and comments starting at ``pos``."""
    size = len(source)
    while pos < size:
        char = source[pos:pos + 1]
        if char in (b" ", b"\t", b"\n", b"\r", b"\v", b"\f"):
            pos += 1
        elif source.startswith(b"//", pos):
            newline = source.find(b"\n", pos)
            pos = size if newline < 0 else newline + 1
        elif source.startswith(b"/*", pos):
            close = source.find(b"*/", pos + 2)
            pos = size if close < 0 else close + 2
        else:
            return pos
    return pos


def _attributes_follow(source: bytes, pos: int) -> bool:
    """Whether ``with {`` or ``assert {`` follows the source literal of an import/export.

    The grammar does not parse attributes after ``export ... from``, so the check looks at
    the tokens right after the literal instead of at the tree.
    """
    pos = _skip_trivia(source, pos)
    for keyword in (b"with", b"assert"):
        if source.startswith(keyword, pos):
            after = pos + len(keyword)
            if after < len(source) and (source[after:after + 1].isalnum()
                                        or source[after:after + 1] in (b"_", b"$")):
                return False
            return source.startswith(b"{", _skip_trivia(source, after))
    return False


_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


def _literal_value(node: Node, source: bytes) -> str:
    """The cooked value of a string or template literal (escape sequences decoded)."""
    parts: list[str] = []
    for child in node.children:
        text = source[child.start_byte:child.end_byte].decode("utf-8", "surrogateescape")
        if child.type == "string_fragment":
            parts.append(text)
        elif child.type == "escape_sequence":
            parts.append(_decode_escape(text))
    value = "".join(parts)
    # Join UTF-16 surrogate pairs written as two \\u escapes; lone halves stay as they are.
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _decode_escape(text: str) -> str:
    body = text[1:]
    if not body or body[0] in "\n\r\u2028\u2029":
        return ""
    head = body[0]
    if head in _SIMPLE_ESCAPES and body == head:
        return _SIMPLE_ESCAPES[head]
    if head == "x" and len(body) == 3:
        return chr(int(body[1:], 16))
    if head == "u":
        digits = body[2:-1] if body.startswith("u{") else body[1:]
        return chr(int(digits, 16))
    return body


# --- loaders ---------------------------------------------------------------------------------


class ModuleLoader(Protocol):
    """The resolution and loading rules of one mode."""

    builtins: frozenset[str]

    def resolve(self, specifier: str, importer: str) -> str:
        """The canonical name of ``specifier`` imported from ``importer`` (a built-in name is
        returned as is); raises :class:`ModuleLoadError`."""

    def load(self, name: str, importer: str) -> bytes:
        """The source bytes of the module ``name``; raises :class:`ModuleLoadError`."""


def dirname(name: str) -> str:
    """The directory part of a module name (``/scratch/task.js`` -> ``/scratch``)."""
    head, sep, _ = name.rpartition("/")
    return head if sep else ""


def join_relative(base: str, specifier: str) -> str | None:
    """Lexically join ``specifier`` to the directory ``base`` (absolute when ``base`` or the
    specifier starts with ``/``); ``None`` when ``..`` climbs above the top."""
    absolute = specifier.startswith("/") or base.startswith("/")
    segments: list[str] = [] if specifier.startswith("/") else [s for s in base.split("/") if s]
    for segment in specifier.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not segments:
                return None
            segments.pop()
        else:
            segments.append(segment)
    joined = "/".join(segments)
    return "/" + joined if absolute else joined


def has_module_extension(path: str) -> bool:
    """``.js`` or ``.mjs`` (case-sensitive, like upstream's explicit-extension rule)."""
    return path.endswith((".js", ".mjs"))


def not_a_module_path(path: str) -> str:
    """`` `<path>` must be an explicit .js or .mjs module path.``"""
    return f"`{path}` must be an explicit .js or .mjs module path."


def invalid_path(path: str) -> str:
    """``Invalid workspace path `<path>`; use / separators and workspace paths.``"""
    return f"Invalid workspace path `{path}`; use / separators and workspace paths."


def has_invalid_path_chars(path: str) -> bool:
    """A backslash, a NUL, a drive prefix (``X:``) or text that is not valid Unicode (a lone
    surrogate, which no workspace file name can contain)."""
    if "\\" in path or "\0" in path:
        return True
    if len(path) >= 2 and path[0].isascii() and path[0].isalpha() and path[1] == ":":
        return True
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def decode_source(data: bytes) -> str:
    """UTF-8 source text, or ``JavaScript source must be UTF-8.``"""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ModuleLoadError(SOURCE_NOT_UTF8) from None


class WorkspaceModuleLoader:
    """V5 rules: ``./``, ``../`` and ``/`` specifiers against the importer's directory, ``.js``
    or ``.mjs`` only, read through the Invocation's ``ScopedWorkspaceFs``.

    Canonical names are absolute shell paths (``/skills/demo/scripts/lib.js``). A path the
    Invocation may not read is reported exactly like a missing one, so hidden run files stay
    hidden. Source bytes are charged to the call's input budget.

    tavernlab choices (upstream wording unknown): ``..`` above ``/`` fails with
    ``Cannot import `<spec>` from `<importer>`: the path escapes the workspace root.``; a
    missing or hidden target with ``Cannot find module `<path>` imported from `<importer>`.``
    (``Cannot find module `<path>`.`` for the entry); a directory with
    ``Cannot load module `<path>`: it is a directory.``
    """

    builtins: frozenset[str] = frozenset({RUNTIME_MODULE})

    def __init__(self, scope: ScopedWorkspaceFs, budget: InputBudget) -> None:
        self.scope = scope
        self.budget = budget

    def resolve(self, specifier: str, importer: str) -> str:
        """See :class:`ModuleLoader`."""
        if specifier in self.builtins:
            return specifier
        if not specifier.startswith(("./", "../", "/")):
            raise ModuleLoadError(MODULE_NOT_AVAILABLE)
        if has_invalid_path_chars(specifier):
            raise ModuleLoadError(invalid_path(specifier))
        joined = join_relative(dirname(importer) or "/", specifier)
        if joined is None:
            raise ModuleLoadError(
                f"Cannot import `{specifier}` from `{importer}`: the path escapes the "
                "workspace root.")
        if not has_module_extension(joined):
            raise ModuleLoadError(not_a_module_path(joined))
        return joined

    def load(self, name: str, importer: str) -> bytes:
        """See :class:`ModuleLoader`; ``importer`` is ``""`` for the entry."""
        missing = (f"Cannot find module `{name}` imported from `{importer}`." if importer
                   else f"Cannot find module `{name}`.")
        try:
            path = WorkspacePath.parse(name.lstrip("/"))
        except InvalidWorkspacePath:
            raise ModuleLoadError(missing) from None
        if not self.scope.is_visible(path):
            raise ModuleLoadError(missing)
        try:
            data = self.scope.read_file(path, self.budget.remaining)
        except Cancelled:
            raise
        except (NotFound, AccessDenied):
            raise ModuleLoadError(missing) from None
        except PathIsDirectory:
            raise ModuleLoadError(f"Cannot load module `{name}`: it is a directory.") from None
        except WorkspaceError as exc:
            if exc.message.startswith("Workspace read exceeds"):
                raise ModuleLoadError(self.budget.exceeded_message(
                    self.budget.used + self.budget.remaining + 1)) from None
            raise ModuleLoadError(f"Cannot load module `{name}`: {exc.message}") from None
        try:
            self.budget.charge(len(data))
        except WorkspaceError as exc:
            raise ModuleLoadError(exc.message) from None
        return data


class SnapshotModuleLoader:
    """Legacy rules: relative specifiers against the importer's logical name, which must hit
    the skill's ``scripts/**/*.js`` snapshot (``scripts/main.js``...).

    tavernlab choices (upstream wording unknown): a target outside the snapshot (including
    ``../`` above the package and any ``/`` path) fails with ``Cannot find module `<spec>`
    imported from `<importer>` in the skill's scripts/ snapshot.``; a bare name other than the
    runtime modules with ``Module `<spec>` is not available: import @tauritavern/runtime/v1 or
    a relative module from the skill's scripts/ directory.``
    """

    builtins: frozenset[str] = frozenset({LEGACY_RUNTIME_MODULE, RUNTIME_MODULE})

    def __init__(self, modules: Mapping[str, str]) -> None:
        self.modules = modules

    def resolve(self, specifier: str, importer: str) -> str:
        """See :class:`ModuleLoader`."""
        if specifier in self.builtins:
            return specifier
        if not specifier.startswith(("./", "../", "/")):
            raise ModuleLoadError(
                f"Module `{specifier}` is not available: import {LEGACY_RUNTIME_MODULE} or a "
                "relative module from the skill's scripts/ directory.")
        joined = None if specifier.startswith("/") else join_relative(dirname(importer),
                                                                      specifier)
        if joined is None or joined not in self.modules:
            raise ModuleLoadError(
                f"Cannot find module `{specifier}` imported from `{importer}` in the skill's "
                "scripts/ snapshot.")
        return joined

    def load(self, name: str, importer: str) -> bytes:
        """See :class:`ModuleLoader`."""
        return self.modules[name].encode("utf-8")


# --- graphs ----------------------------------------------------------------------------------


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


def build_module_graph(entry: str, source: bytes, loader: ModuleLoader) -> ModuleGraph:
    """Load the entry's whole static graph (plus literal dynamic imports) through ``loader``.

    ``source`` is the entry's bytes, already charged to any budget. Raises
    :class:`ModuleLoadError` (located at the failing import) for a static failure.
    """
    graph = ModuleGraph(entry)
    pending: list[tuple[str, bytes]] = [(entry, source)]
    seen = {entry}
    while pending:
        name, data = pending.pop()
        text = decode_source(data)
        edits: list[tuple[SpecifierSite, str]] = []
        for site in scan_module(data).sites:
            try:
                if site.attributes:
                    raise ModuleLoadError(IMPORT_ATTRIBUTES)
                target = loader.resolve(site.value, name)
                if target not in loader.builtins and target not in seen:
                    target_source = loader.load(target, name)
                    decode_source(target_source)
                    seen.add(target)
                    pending.append((target, target_source))
            except ModuleLoadError as exc:
                if not site.dynamic or site.attributes:
                    raise exc.located(name, site.line, site.column) from None
                target = graph.register_stub(exc.message)
            if target != site.value or site.newlines:
                edits.append((site, target))
        graph.modules[name] = _rewrite(data, edits) if edits else text
    return graph


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
