"""Frozen macros: ``{{name}}`` templates expanded with facts captured when a run starts.

See docs/workspace.md. One :class:`FrozenMacros` table serves ``macros.render()`` in
scripts and the macro projection of skill files (docs/js-and-skills.md); sub-agents
and resumed calls reuse the same table because it is built from the run's frozen prompt
snapshot.

Rendering is a single pass over the input: a value that was inserted is never scanned again,
and the scanner is linear in the input size (fixed-string tokenization plus a bracket stack,
no backtracking regular expressions), so a 16 MiB input renders in linear time.

The snapshot is read and validated by :mod:`tavernlab.workspace.macros._macro_snapshot` (upstream's
shape and the revision-1 compatibility shape, value types, builtins, fallbacks).

tavernlab choices where upstream detail is unknown (documented here and in the report):

* Error code ``agent.macro_limit_exceeded`` for the 16 MiB limits.
* An empty alternate-greetings list counts as none: ``greeting::N`` with N != 0 stays literal.
* Without a frozen macro context, ``greeting::N`` and ``hasvar::k`` (like ``getvar::k``) stay
  literal: there are no host facts to answer them with.
* A nested expression (any ``{{`` between an opening ``{{`` and its ``}}``) is left exactly
  as written, including the inner text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tavernlab.errors import MacroError, MacroLimitExceeded
from tavernlab.workspace.macros._macro_snapshot import read_snapshot

#: ``MacroError`` is what construction raises; callers import it from here.
__all__ = ["CONSTANTS", "MACRO_LIMIT_BYTES", "FrozenMacros", "MacroError", "MacroLimitExceeded"]

#: Input and output limit of one render, in UTF-8 bytes (16 MiB).
MACRO_LIMIT_BYTES = 16 * 1024 * 1024

#: Names that expand to fixed text whatever the context.
CONSTANTS: dict[str, str] = {"space": " ", "newline": "\n", "noop": ""}

_GREETING_NAMES = frozenset({"greeting", "charfirstmessage"})
_HAS_LOCAL = frozenset({"hasvar", "varexists"})
_HAS_GLOBAL = frozenset({"hasglobalvar", "globalvarexists"})
_INTEGER = re.compile(r"-?[0-9]+")
_TOKENS = re.compile(r"(?<!\\)\\*\{\{|\}\}")
_MISSING: Any = object()


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


class FrozenMacros:
    """The macro table of one run, plus the frozen variable and outlet dictionaries.

    Build it with :meth:`from_snapshot`; expand text with :meth:`render`. A dictionary that was
    not frozen at all (``None``) makes its one-argument forms stay literal, while a frozen but
    empty one makes a missing key expand to the empty string.
    """

    __slots__ = ("_alternate_greetings", "_groups", "_has_context", "_outlets", "_table",
                 "_variables_global", "_variables_local")

    def __init__(self, table: Mapping[str, str] | None = None, *,
                 local: Mapping[str, str] | None = None,
                 global_: Mapping[str, str] | None = None,
                 outlets: Mapping[str, str] | None = None,
                 alternate_greetings: list[str] | None = None,
                 groups: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self._table = {k.lower(): v for k, v in (table or {}).items()}
        self._variables_local = dict(local) if local is not None else None
        self._variables_global = dict(global_) if global_ is not None else None
        self._outlets = dict(outlets) if outlets is not None else None
        self._alternate_greetings = list(alternate_greetings or [])
        self._groups = {k: dict(v) for k, v in groups.items()} if groups is not None else None
        self._has_context = groups is not None

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_snapshot(cls, snapshot: Mapping[str, Any] | None) -> FrozenMacros:
        """Build the table from a run's frozen prompt snapshot (``None``: no host context);
        see :func:`~tavernlab.workspace.macros._macro_snapshot.read_snapshot` for what is read and
        what fails construction (:class:`MacroError`, ``agent.invalid_macro_context``)."""
        sources = read_snapshot(snapshot)
        return cls(sources.table, local=sources.local, global_=sources.global_,
                   outlets=sources.outlets, alternate_greetings=list(sources.alternate_greetings),
                   groups=sources.groups)

    # -- queries ----------------------------------------------------------------------------

    @property
    def has_context(self) -> bool:
        """Whether a ``macroContext`` was frozen (``False`` for a Session run)."""
        return self._has_context

    def context_macro(self) -> dict[str, dict[str, str]] | None:
        """``context.macro`` for scripts: ``{names, character, system, chat}`` as strings,
        or ``None`` when the run has no host context."""
        if self._groups is None:
            return None
        return {g: dict(self._groups.get(g, {})) for g in ("names", "character", "system",
                                                            "chat")}

    def lookup(self, expression: str) -> str | None:
        """The value of one expression (the text between ``{{`` and ``}}``), or ``None``
        when it stays literal."""
        if "::" in expression:
            return self._lookup_argument(expression)
        name = expression.strip().lower()
        constant = CONSTANTS.get(name)
        if constant is not None:
            return constant
        return self._table.get(name)

    def _lookup_argument(self, expression: str) -> str | None:
        parts = expression.split("::")
        if len(parts) != 2:
            return None
        name, arg = parts[0].strip().lower(), parts[1].strip()
        if name in _GREETING_NAMES:
            return self._greeting(arg) if self._has_context else None
        source = {
            "getvar": self._variables_local, "getglobalvar": self._variables_global,
            "outlet": self._outlets,
        }.get(name, _MISSING)
        if source is not _MISSING:
            return None if source is None else source.get(arg, "")
        if name in _HAS_LOCAL or name in _HAS_GLOBAL:
            variables = self._variables_local if name in _HAS_LOCAL else self._variables_global
            if variables is None:
                return None
            return "true" if arg in variables else "false"
        return None

    def _greeting(self, arg: str) -> str | None:
        """``greeting::N``: 0 (``0``, ``00``, ``-0``) is the main greeting (literal when none
        was frozen); any other N needs alternate greetings (literal without them), then N in
        1..len picks one and anything else (negative, past the end, too large) is empty."""
        if not _INTEGER.fullmatch(arg):
            return None
        digits = arg.lstrip("-").lstrip("0")
        if not digits:
            return self._table.get("greeting")
        if not self._alternate_greetings:
            return None
        if arg.startswith("-") or len(digits) > len(str(len(self._alternate_greetings))):
            return ""
        index = int(digits)
        return self._alternate_greetings[index - 1] if index <= len(
            self._alternate_greetings) else ""

    # -- rendering --------------------------------------------------------------------------

    def render(self, text: str) -> str:
        """Expand ``text`` in one pass.

        Unknown and nested expressions stay literal; an odd number of backslashes before a
        terminated ``{{ … }}`` escapes it, and each pair of backslashes there becomes one.
        Expansion stops at the first unterminated ``{{``: it, the backslashes just before it
        and all the text after it are copied unchanged. Input or output over 16 MiB raises
        :class:`MacroLimitExceeded`.
        """
        if _utf8_len(text) > MACRO_LIMIT_BYTES:
            raise MacroLimitExceeded(f"macro input exceeds {MACRO_LIMIT_BYTES} bytes")
        if "{{" not in text or "}}" not in text:
            return text  # no opener, or none of them is terminated
        openers, closes, simple = _scan(text)
        pieces: list[str] = []
        inserted = 0
        cursor = 0
        for k, (pos, escapes) in enumerate(openers):
            if pos < cursor:
                continue  # inside an expression already emitted
            close = closes.get(k)
            if close is None:
                break  # the first unterminated ``{{``: the rest is copied as it is
            pieces.append(text[cursor:pos - escapes])
            pieces.append("\\" * (escapes // 2))
            value = (self.lookup(text[pos + 2:close])
                     if escapes % 2 == 0 and k in simple else None)
            if value is None:
                pieces.append(text[pos:close + 2])
            else:
                inserted += len(value)
                if inserted > MACRO_LIMIT_BYTES:
                    raise MacroLimitExceeded(
                        f"macro expansion exceeds {MACRO_LIMIT_BYTES} bytes")
                pieces.append(value)
            cursor = close + 2
        pieces.append(text[cursor:])
        result = "".join(pieces)
        if _utf8_len(result) > MACRO_LIMIT_BYTES:
            raise MacroLimitExceeded(f"macro expansion exceeds {MACRO_LIMIT_BYTES} bytes")
        return result


def _scan(text: str) -> tuple[list[tuple[int, int]], dict[int, int], set[int]]:
    """One pass over every ``{{`` and ``}}`` with a bracket stack.

    Returns each ``{{`` in order as ``(position, backslashes right before it)`` and, keyed by
    its index, the position of its matching ``}}`` (absent when unterminated) and whether
    the pair is simple (no other brace token inside, so it can be evaluated rather than left
    literal). Escaped openers take part in the matching like any other. The token pattern
    anchors a backslash run at its first backslash (negative lookbehind), so it never
    backtracks more than the run it consumed: the scan is linear in the input.
    """
    openers: list[tuple[int, int]] = []
    closes: dict[int, int] = {}
    simple: set[int] = set()
    stack: list[tuple[int, int]] = []
    for token, found in enumerate(_TOKENS.finditer(text)):
        start, end = found.span()
        if text[end - 1] == "{":
            stack.append((token, len(openers)))
            openers.append((end - 2, end - 2 - start))
        elif stack:
            opened, k = stack.pop()
            closes[k] = start
            if token == opened + 1:
                simple.add(k)
    return openers, closes, simple
