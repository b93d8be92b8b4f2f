"""Reading a run's frozen snapshot into the frozen-macro table (docs/workspace.md).

:func:`read_snapshot` validates ``macroContext`` and ``extensionPrompts`` and returns the
:class:`MacroSources` that :class:`~tavernlab.workspace.macros.FrozenMacros` expands with:
the name table (fields, then builtins, then fallbacks), the variable, outlet and
alternate-greeting dictionaries, and the groups scripts see as ``context.macro``.

Value types: table fields may be strings or numbers (numbers are stringified with Python's
``str``: ``7`` -> ``7``, ``1.5`` -> ``1.5``); builtins, variables, alternate greetings and
outlet values must be strings; anything else fails construction with
:class:`~tavernlab.errors.MacroError` (``agent.invalid_macro_context``, a tavernlab code).

Snapshot shape: upstream's (``macroContext.character.alternateGreetings``, outlets as
``extensionPrompts.customWIOutlet_<key>.value``). tavernlab also accepts the revision-1 shape
(``macroContext.alternateGreetings``, an outlet given directly as a string); when both
greeting lists are present, ``character.alternateGreetings`` wins (both are validated). This
compatibility is a tavernlab choice, as are these:

* Two builtins whose names differ only by case fail construction instead of one silently
  winning.
* Fields of a group that the table does not name follow the table's rule (strings or
  numbers); ``extensionPrompts`` entries not named ``customWIOutlet_<key>`` are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tavernlab.errors import MacroError

#: ``macroContext`` field -> macro names, per group (the macro table).
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

OUTLET_PREFIX = "customWIOutlet_"
#: Where the alternate greetings live: ``macroContext.character.<key>`` (upstream) or
#: ``macroContext.<key>`` (revision 1).
GREETINGS_KEY = "alternateGreetings"



@dataclass(frozen=True, slots=True)
class MacroSources:
    """What a snapshot freezes for macros. A dictionary that was not frozen at all is
    ``None`` (its one-argument forms stay literal); ``groups`` is ``None`` without a
    ``macroContext``."""

    table: dict[str, str]
    local: dict[str, str] | None = None
    global_: dict[str, str] | None = None
    outlets: dict[str, str] | None = None
    alternate_greetings: tuple[str, ...] = ()
    groups: dict[str, dict[str, str]] | None = None


def read_snapshot(snapshot: Mapping[str, Any] | None) -> MacroSources:
    """Validate and read a frozen prompt snapshot (``None``: no host context).

    Builtins are applied after the fields, so a builtin replaces a field of the same name;
    the fallbacks fill absent names after the builtins.
    """
    if snapshot is None:
        return MacroSources({})
    snapshot = _object(snapshot, "prompt snapshot")
    outlets = _outlets(snapshot)
    if snapshot.get("macroContext") is None:
        return MacroSources({}, outlets=outlets)
    context = _object(snapshot["macroContext"], "macroContext")
    groups, table = _fields(context)
    table.update(_builtins(context))
    for target, source in FALLBACKS:
        if target not in table and source in table:
            table[target] = table[source]
    return MacroSources(table, local=_variables(context, "local"),
                        global_=_variables(context, "global"), outlets=outlets,
                        alternate_greetings=tuple(_greetings(context)), groups=groups)


def _scalar(value: Any, where: str) -> str:
    """A table field: a string, or a number stringified; anything else fails construction."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MacroError(f"{where} must be a string or a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise MacroError(f"{where} must be a finite number")
    return str(value)


def _string(value: Any, where: str) -> str:
    """A value that must be a string (builtins, variables, greetings, outlets)."""
    if not isinstance(value, str):
        raise MacroError(f"{where} must be a string")
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise MacroError(f"{where} must be an object")
    return value


def _scalar_map(value: Any, where: str, *, skip: str | None = None) -> dict[str, str]:
    """A group of table fields: an object whose values are strings or numbers (stringified);
    the key ``skip`` is left out (read separately)."""
    return {str(k): _scalar(v, f"{where}.{k}") for k, v in _object(value, where).items()
            if k != skip}


def _string_map(value: Any, where: str) -> dict[str, str]:
    """An object whose values must be strings."""
    return {str(k): _string(v, f"{where}.{k}") for k, v in _object(value, where).items()}


def _fields(context: Mapping[str, Any]) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """The groups (``names``, ``character``, ``system``, ``chat``) and the macro names their
    table fields define."""
    groups: dict[str, dict[str, str]] = {}
    table: dict[str, str] = {}
    for group, fields in FIELD_NAMES.items():
        values = (_scalar_map(context[group], f"macroContext.{group}", skip=GREETINGS_KEY)
                  if context.get(group) is not None else {})
        groups[group] = values
        for field_name, names in fields.items():
            if field_name in values:
                for name in names:
                    table[name] = values[field_name]
    return groups, table


def _builtins(context: Mapping[str, Any]) -> dict[str, str]:
    """``macroContext.builtins``: string values, names lower-cased (two names that differ only
    by case fail)."""
    if context.get("builtins") is None:
        return {}
    builtins: dict[str, str] = {}
    for key, value in _string_map(context["builtins"], "macroContext.builtins").items():
        name = key.lower()
        if name in builtins:
            raise MacroError(f"macroContext.builtins defines `{name}` more than once")
        builtins[name] = value
    return builtins


def _variables(context: Mapping[str, Any], scope: str) -> dict[str, str] | None:
    """``macroContext.variableValues.<scope>`` (string values), ``None`` when not frozen."""
    if context.get("variableValues") is None:
        return None
    variables = _object(context["variableValues"], "macroContext.variableValues")
    if variables.get(scope) is None:
        return None
    return _string_map(variables[scope], f"macroContext.variableValues.{scope}")


def _greeting_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list):
        raise MacroError(f"{where} must be an array")
    return [_string(item, f"{where}[{i}]") for i, item in enumerate(value)]


def _greetings(context: Mapping[str, Any]) -> list[str]:
    """The alternate greetings: ``character.alternateGreetings`` (upstream), else the
    revision-1 ``macroContext.alternateGreetings``; both are validated when present."""
    legacy = (_greeting_list(context[GREETINGS_KEY], f"macroContext.{GREETINGS_KEY}")
              if context.get(GREETINGS_KEY) is not None else [])
    character = context.get("character")
    if isinstance(character, Mapping) and character.get(GREETINGS_KEY) is not None:
        return _greeting_list(character[GREETINGS_KEY],
                              f"macroContext.character.{GREETINGS_KEY}")
    return legacy


def _outlets(snapshot: Mapping[str, Any]) -> dict[str, str] | None:
    """The outlets of ``extensionPrompts`` (``None`` when it was not frozen): each entry
    ``customWIOutlet_<key>`` is ``{"value": "<text>"}`` (upstream) or the text itself
    (revision 1); other entries are ignored."""
    if snapshot.get("extensionPrompts") is None:
        return None
    outlets: dict[str, str] = {}
    for name, entry in _object(snapshot["extensionPrompts"], "extensionPrompts").items():
        if not name.startswith(OUTLET_PREFIX):
            continue
        where = f"extensionPrompts.{name}"
        outlets[name[len(OUTLET_PREFIX):]] = (
            _string(entry.get("value"), f"{where}.value") if isinstance(entry, Mapping)
            else _string(entry, where))
    return outlets
