"""The YAML front matter of ``SKILL.md`` (docs/js-and-skills.md), read so that no package
can crash or stall the reader.

``SKILL.md`` starts with ``---\\n``; the front matter ends at the first ``\\n---`` and is YAML
with the required strings ``name`` and ``description`` and the optional ``license``,
``metadata.author``, ``metadata.version`` and ``metadata.tags``.

A package is untrusted input, so the YAML is read by a bounded safe loader. Every problem is an
:class:`InvalidSkillPackage` (``Invalid SKILL.md frontmatter: <reason>``, with the line and
column in ``SKILL.md``), never a ``ValueError``, ``RecursionError`` or a long stall. tavernlab
choices (upstream, which reads YAML with a Rust parser, has its own limits, unknown here):

* The front matter is at most :data:`MAX_FRONTMATTER_BYTES` (64 KiB) of UTF-8, checked before
  it is parsed (``SKILL.md frontmatter must be <= 65536 bytes``).
* Collections (mappings and sequences, the top-level mapping included) nest at most
  :data:`MAX_FRONTMATTER_DEPTH` (64) levels: 20,000 nested ``[`` fail at once, at the first
  bracket too deep, instead of exhausting Python's recursion limit after a second or more.
* Aliases are allowed, but the document may describe at most :data:`MAX_FRONTMATTER_NODES`
  (10,000) nodes with every alias counted as the whole node it repeats, so a "billion laughs"
  document fails while it is being read.
* An integer longer than Python's integer-string limit (4,300 digits by default) and any other
  value the safe constructors cannot build (``2020-13-45``) fail with their position.
* A ``name`` or ``description`` that is missing, not a string, empty or blank fails with
  ``SKILL.md frontmatter must include name`` / ``... description``. Optional fields of the
  wrong type are ignored like upstream does, but each produces a warning instead of vanishing
  silently.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.error import Mark, MarkedYAMLError
from yaml.events import Event
from yaml.nodes import Node, ScalarNode
from yaml.scanner import ScannerError

from tavernlab.skills._errors import InvalidSkillPackage

MAX_FRONTMATTER_BYTES = 64 * 1024
MAX_FRONTMATTER_DEPTH = 64
MAX_FRONTMATTER_NODES = 10_000


@dataclass(frozen=True, slots=True)
class SkillFrontmatter:
    """The YAML front matter of ``SKILL.md``."""

    name: str
    description: str
    license: str | None = None
    author: str | None = None
    version: str | None = None
    tags: tuple[str, ...] = ()


def _too_deep() -> str:
    return f"collections nest deeper than {MAX_FRONTMATTER_DEPTH} levels"


def _describe(exc: yaml.YAMLError) -> str:
    """One line: what went wrong and where (``line``/``column`` of ``SKILL.md``)."""
    if not isinstance(exc, MarkedYAMLError):
        return " ".join(str(exc).split())
    text = " ".join(" ".join(p for p in (exc.context, exc.problem) if p).split())
    mark = exc.problem_mark or exc.context_mark
    return f"{text} (line {mark.line + 1}, column {mark.column + 1})" if mark else text


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the depth, node and value bounds of the module notes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.name = "SKILL.md"
        self._depth = 0
        self._nodes = 0
        self._sizes: dict[int, int] = {}

    def _next_mark(self) -> Mark | None:
        """Where the next event starts (the node being composed)."""
        event: Event = self.peek_event()  # type: ignore[no-untyped-call]
        return cast("Mark | None", event.start_mark)

    def _charge(self, count: int) -> None:
        self._nodes += count
        if self._nodes > MAX_FRONTMATTER_NODES:
            raise ComposerError(None, None, f"the document expands to more than "
                                f"{MAX_FRONTMATTER_NODES} nodes (aliases included)",
                                self._next_mark())

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        """Scan a ``[`` or ``{``; refused beyond the depth bound, so the scanner (whose
        look-ahead for simple keys is quadratic in the flow level) never runs far ahead."""
        if len(self.indents) + self.flow_level >= MAX_FRONTMATTER_DEPTH:  # open block + flow
            raise ScannerError(None, None, _too_deep(), self.get_mark())
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        """Compose one node, counting it (an alias counts as the node it repeats)."""
        if self.check_event(yaml.AliasEvent):
            node = super().compose_node(parent, index)
            self._charge(self._sizes.get(id(node), 1))
            return node
        collection = self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent)
        if collection and self._depth >= MAX_FRONTMATTER_DEPTH:
            raise ComposerError(None, None, _too_deep(), self._next_mark())
        before = self._nodes
        self._charge(1)
        self._depth += collection
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= collection
        if node is not None:
            self._sizes[id(node)] = self._nodes - before
        return node

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        """Build one value; a ``ValueError`` of a safe constructor becomes a YAML error."""
        try:
            return super().construct_object(node, deep)
        except ValueError as exc:
            raise ConstructorError(None, None, f"found a value that cannot be read ({exc})",
                                   node.start_mark) from None

    def construct_yaml_int(self, node: ScalarNode) -> int:
        """An integer, or a YAML error when it exceeds Python's integer-string limit."""
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            limit = sys.get_int_max_str_digits()
            if sum(c.isdigit() for c in str(node.value)) <= limit:
                raise  # not a length problem (``!!int abc``): reported by construct_object
            raise ConstructorError(None, None, f"found an integer with more than {limit} "
                                   "digits", node.start_mark) from None


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


def load_frontmatter_yaml(block: str) -> Any:
    """The value of a front matter block (the text between the fences), bounded."""
    if len(block.encode("utf-8")) > MAX_FRONTMATTER_BYTES:
        raise InvalidSkillPackage(
            f"SKILL.md frontmatter must be <= {MAX_FRONTMATTER_BYTES} bytes")
    # The leading newline stands for the opening ``---`` line, so reported lines are the
    # lines of SKILL.md.
    loader = _BoundedLoader("\n" + block)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        raise InvalidSkillPackage(f"Invalid SKILL.md frontmatter: {_describe(exc)}") from None
    finally:
        loader.dispose()


def _split(text: str) -> str:
    """The front matter block of ``SKILL.md`` (CRLF already normalized)."""
    if not text.startswith("---\n"):
        raise InvalidSkillPackage("SKILL.md must start with YAML frontmatter")
    rest = text[4:]
    end = rest.find("\n---")
    if end < 0:
        raise InvalidSkillPackage("SKILL.md frontmatter is not closed")
    return rest[:end]


def _required(mapping: Mapping[str, Any], key: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidSkillPackage(f"SKILL.md frontmatter must include {key}")
    return value.strip()


def _tags(metadata: Mapping[str, Any], warnings: list[str]) -> tuple[str, ...]:
    raw = metadata.get("tags")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        warnings.append("SKILL.md metadata.tags is not a list and was ignored.")
        return ()
    tags: list[str] = []
    for tag in raw:
        if isinstance(tag, str):
            if tag.strip():
                tags.append(tag.strip())
        else:
            warnings.append("SKILL.md metadata.tags has a non-string entry; it was ignored.")
    return tuple(tags)


def parse_frontmatter(text: str) -> tuple[SkillFrontmatter, list[str]]:
    """Parse ``SKILL.md`` (CRLF normalized); returns the front matter and warnings.

    The name is returned trimmed but unchecked; :func:`validate_skill_name` checks it.
    """
    data = load_frontmatter_yaml(_split(text.replace("\r\n", "\n")))
    mapping: Mapping[str, Any] = data if isinstance(data, dict) else {}
    warnings: list[str] = []

    def optional(source: Mapping[str, Any], key: str, label: str) -> str | None:
        value = source.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            warnings.append(f"SKILL.md {label} is not a string and was ignored.")
            return None
        return value.strip() or None

    name = _required(mapping, "name")
    description = _required(mapping, "description")
    raw_metadata = mapping.get("metadata")
    metadata: Mapping[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
    if raw_metadata is not None and not isinstance(raw_metadata, dict):
        warnings.append("SKILL.md metadata is not a mapping and was ignored.")
    license_ = optional(mapping, "license", "license")
    author = optional(metadata, "author", "metadata.author")
    version = optional(metadata, "version", "metadata.version")
    tags = _tags(metadata, warnings)
    return SkillFrontmatter(name, description, license_, author, version, tags), warnings
