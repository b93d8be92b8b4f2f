"""Frozen macros: ``{{name}}`` templates expanded with facts captured when a run starts.

spec/workspace.md section 13. One :class:`FrozenMacros` table serves ``macros.render()`` in
scripts and the macro projection of skill files (spec/js-and-skills.md section 9); sub-agents
and resumed calls reuse the same table because it is built from the run's frozen prompt
snapshot (shape documented in :mod:`tavernlab.workspace.context`).

Rendering is a single pass over the input: a value that was inserted is never scanned again,
and the scanner is linear in the input size (fixed-string tokenization plus a bracket stack,
no backtracking regular expressions), so a 16 MiB input renders in linear time.

tavernlab choices where upstream detail is unknown (documented here and in the report):

* Error code ``agent.invalid_macro_context`` for a malformed snapshot and
  ``agent.macro_limit_exceeded`` for the 16 MiB limits.
* A builtin never replaces a name that a ``macroContext`` field already defined; two builtins
  whose names differ only by case fail construction instead of one silently winning.
* ``macroContext.alternateGreetings`` must be a list of strings; ``extensionPrompts`` must be an
  object whose values are strings or numbers.
* Numbers are stringified with Python's ``str`` (``7`` -> ``7``, ``1.5`` -> ``1.5``).
* Without a frozen macro context, ``greeting::N`` and ``hasvar::k`` (like ``getvar::k``) stay
  literal: there are no host facts to answer them with.
* A nested expression (any ``{{`` between an opening ``{{`` and its ``}}``) is left exactly
  as written, including the inner text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from tavernlab.errors import MacroError, MacroLimitExceeded

#: Input and output limit of one render, in UTF-8 bytes (16 MiB).
MACRO_LIMIT_BYTES = 16 * 1024 * 1024

#: ``macroContext`` field -> macro names, per group (section 13 table).
FIELD_NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "names": {
        "user": ("user",),
        "char": ("char",),
        "group": ("group", "charifnotgroup"),
        "groupNotMuted": ("groupnotmuted",),
        "notChar": ("notchar",),
    },
    "character": {
        "charPrompt": ("charprompt",),
        "charInstruction": ("charinstruction",),
        "charJailbreak": ("charjailbreak",),
        "description": ("description", "chardescription"),
        "personality": ("personality", "charpersonality"),
        "scenario": ("scenario", "charscenario"),
        "persona": ("persona",),
        "personaPosition": ("personaposition",),
        "mesExamplesRaw": ("mesexamplesraw",),
        "mesExamples": ("mesexamples",),
        "charDepthPrompt": ("chardepthprompt",),
        "creatorNotes": ("creatornotes", "charcreatornotes"),
        "version": ("version", "charversion", "char_version"),
        "firstMessage": ("greeting", "charfirstmessage"),
    },
    "system": {"model": ("model",)},
    "chat": {
        "lastMessageId": ("lastmessageid",),
        "lastSwipeId": ("lastswipeid",),
        "currentSwipeId": ("currentswipeid",),
    },
}

#: ``(target, source)``: fill ``target`` from ``source`` only when ``target`` is absent.
FALLBACKS: tuple[tuple[str, str], ...] = (
    ("charifnotgroup", "char"),
    ("charinstruction", "charjailbreak"),
    ("charjailbreak", "charinstruction"),
    ("idle_duration", "idleduration"),
    ("maxprompttokens", "maxprompt"),
    ("maxcontexttokens", "maxcontext"),
    ("maxresponsetokens", "maxresponse"),
    ("instructuserprefix", "instructinput"),
    ("instructassistantprefix", "instructoutput"),
    ("instructassistantsuffix", "instructseparator"),
    ("instructfirstassistantprefix", "instructfirstoutput"),
    ("instructfirstoutputprefix", "instructfirstoutput"),
    ("instructlastassistantprefix", "instructlastoutput"),
    ("instructlastoutputprefix", "instructlastoutput"),
    ("instructfirstuserprefix", "instructfirstinput"),
    ("instructlastuserprefix", "instructlastinput"),
    ("instructsystem", "defaultsystemprompt"),
    ("instructsystemprompt", "defaultsystemprompt"),
    ("exampleseparator", "chatseparator"),
)

#: Names that expand to fixed text whatever the context.
CONSTANTS: dict[str, str] = {"space": " ", "newline": "\n", "noop": ""}

OUTLET_PREFIX = "customWIOutlet_"

_GREETING_NAMES = frozenset({"greeting", "charfirstmessage"})
_HAS_LOCAL = frozenset({"hasvar", "varexists"})
_HAS_GLOBAL = frozenset({"hasglobalvar", "globalvarexists"})
_INTEGER = re.compile(r"-?[0-9]+")
_TOKENS = re.compile(r"(?<!\\)\\*\{\{|\}\}")
_MISSING: Any = object()



def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _scalar(value: Any, where: str) -> str:
    """A string, or a number stringified; anything else fails construction."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MacroError(f"{where} must be a string or a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise MacroError(f"{where} must be a finite number")
    return str(value)


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise MacroError(f"{where} must be an object")
    return value


def _string_map(value: Any, where: str) -> dict[str, str]:
    """An object whose values are strings or numbers, stringified."""
    return {str(k): _scalar(v, f"{where}.{k}") for k, v in _object(value, where).items()}


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
        """Build the table from a run's frozen prompt snapshot (``None``: no host context).

        Reads ``macroContext`` (groups ``names``, ``character``, ``system``, ``chat``,
        ``variableValues``, plus ``builtins`` and ``alternateGreetings``) and
        ``extensionPrompts``. Groups must be objects and values strings or numbers, else
        :class:`MacroError` (``agent.invalid_macro_context``).
        """
        if snapshot is None:
            return cls()
        snapshot = _object(snapshot, "prompt snapshot")
        outlets = None
        if snapshot.get("extensionPrompts") is not None:
            prompts = _string_map(snapshot["extensionPrompts"], "extensionPrompts")
            outlets = {name[len(OUTLET_PREFIX):]: text for name, text in prompts.items()
                       if name.startswith(OUTLET_PREFIX)}
        raw = snapshot.get("macroContext")
        if raw is None:
            return cls(outlets=outlets)
        context = _object(raw, "macroContext")

        groups: dict[str, dict[str, str]] = {}
        table: dict[str, str] = {}
        for group, fields in FIELD_NAMES.items():
            values = (_string_map(context[group], f"macroContext.{group}")
                      if context.get(group) is not None else {})
            groups[group] = values
            for field, names in fields.items():
                if field in values:
                    for name in names:
                        table[name] = values[field]

        if context.get("builtins") is not None:
            builtins = _string_map(context["builtins"], "macroContext.builtins")
            seen: set[str] = set()
            for key, value in builtins.items():
                name = key.lower()
                if name in seen:
                    raise MacroError(f"macroContext.builtins defines `{name}` more than once")
                seen.add(name)
                table.setdefault(name, value)

        for target, source in FALLBACKS:
            if target not in table and source in table:
                table[target] = table[source]

        local = global_ = None
        if context.get("variableValues") is not None:
            variables = _object(context["variableValues"], "macroContext.variableValues")
            if variables.get("local") is not None:
                local = _string_map(variables["local"], "macroContext.variableValues.local")
            if variables.get("global") is not None:
                global_ = _string_map(variables["global"], "macroContext.variableValues.global")

        greetings: list[str] = []
        if context.get("alternateGreetings") is not None:
            raw_greetings = context["alternateGreetings"]
            if not isinstance(raw_greetings, list):
                raise MacroError("macroContext.alternateGreetings must be an array")
            for i, item in enumerate(raw_greetings):
                if not isinstance(item, str):
                    raise MacroError(f"macroContext.alternateGreetings[{i}] must be a string")
                greetings.append(item)

        return cls(table, local=local, global_=global_, outlets=outlets,
                   alternate_greetings=greetings, groups=groups)

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
            if not self._has_context or not _INTEGER.fullmatch(arg):
                return None
            index = int(arg)
            if index == 0:
                return self._table.get("greeting", "")
            if 1 <= index <= len(self._alternate_greetings):
                return self._alternate_greetings[index - 1]
            return ""
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

    # -- rendering --------------------------------------------------------------------------

    def render(self, text: str) -> str:
        """Expand ``text`` in one pass.

        Unknown, nested and unterminated expressions stay literal; an odd number of
        backslashes before ``{{`` escapes it, and each pair of backslashes there becomes one.
        Input or output over 16 MiB raises :class:`MacroLimitExceeded`.
        """
        if _utf8_len(text) > MACRO_LIMIT_BYTES:
            raise MacroLimitExceeded(f"macro input exceeds {MACRO_LIMIT_BYTES} bytes")
        if "{{" not in text or ("}}" not in text and "\\{{" not in text):
            return text  # nothing to expand and no escape to collapse
        positions, escapes, closes, simple = _scan(text)
        pieces: list[str] = []
        inserted = 0
        cursor = 0
        for k, pos in enumerate(positions):
            if pos < cursor:
                continue  # inside an expression already emitted
            count = escapes.get(k, 0)
            close = closes.get(k, -1)
            if close < 0 and count == 0:
                continue  # an unterminated ``{{`` stays in the literal text as it is
            pieces.append(text[cursor:pos - count])
            pieces.append("\\" * (count // 2))
            if close < 0:
                pieces.append("{{")
                cursor = pos + 2
                continue
            value = self.lookup(text[pos + 2:close]) if k in simple else None
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


def _scan(text: str) -> tuple[list[int], dict[int, int], dict[int, int], set[int]]:
    """One pass over every ``{{`` and ``}}`` with a bracket stack.

    Returns the position of each ``{{`` in order, and keyed by its index: the number of
    backslashes right before it (when any), the position of its matching ``}}`` (absent when
    escaped or unterminated), and whether the pair is simple (no other brace token inside,
    so it is evaluated rather than left literal). The token pattern anchors a backslash run
    at its first backslash (negative lookbehind), so it never backtracks more than the run
    it consumed: the scan is linear in the input.
    """
    positions: list[int] = []
    escapes: dict[int, int] = {}
    closes: dict[int, int] = {}
    simple: set[int] = set()
    stack: list[tuple[int, int]] = []
    for token, found in enumerate(_TOKENS.finditer(text)):
        start, end = found.span()
        if text[end - 1] == "{":
            k = len(positions)
            positions.append(end - 2)
            count = end - 2 - start
            if count:
                escapes[k] = count
            if count % 2 == 0:
                stack.append((token, k))
        elif stack:
            opened, k = stack.pop()
            closes[k] = start
            if token == opened + 1:
                simple.add(k)
    return positions, escapes, closes, simple
