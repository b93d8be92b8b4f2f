"""Find the literal module specifiers of a source with tree-sitter-javascript.

:func:`scan_module` parses a module and returns every static ``import``/``export ... from``
source and every ``import()`` whose argument is a literal (a string, or a template without
substitutions), with its exact byte offsets, its 1-based line and column and whether import
attributes follow it. Strings, templates, regular expressions and comments are tokens of the
parser, so ``"import x from './y.js'"`` inside a string is never mistaken for an import. Results
are cached by the SHA-256 of the source (thread-safe; each thread has its own parser).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

import tree_sitter_javascript
from tree_sitter import Language, Node, Parser, Tree

_LANGUAGE = Language(tree_sitter_javascript.language())
_PARSERS = threading.local()
_CACHE_SIZE = 512
_CACHE: OrderedDict[bytes, ModuleScan] = OrderedDict()
_CACHE_LOCK = threading.Lock()


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
    tree = _parser().parse(source)
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
