"""The text of a record's line: one C JSON encoder, and a payload's text without a model dump.

A line is what ``json.dumps(record, ensure_ascii=False)`` writes (``tests/events`` pins
it). :data:`encode` is that, from one C encoder made once. :func:`model_text` is the text
``encode(model.model_dump(mode="json", by_alias=True))`` gives, for any model; for a *flat*
model - every field a ``str``, ``int``, ``bool``, a ``Literal`` of strings, ``list[str]``,
or one of these or ``None`` - it is written straight from the model's values by a
formatter made once per class, which costs a third of the dump and encoding it replaces
(every record of a tool call has such a payload). The formatter checks each value's exact
type first (a value assigned after validation may be anything), and hands any model it
cannot write exactly - one holding extra keys, or a value of another type - to the dump.
``tests/events/test_encoding.py`` holds every payload class to the dump's bytes.
"""

from __future__ import annotations

import json
import json.encoder
import types
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel


def _line_encoder() -> Callable[[Any], str]:
    """``json.dumps(data, ensure_ascii=False)``, the same text, from one C encoder made once
    (``json.dumps`` makes one per call, and checks for reference cycles a record built
    here cannot have: together more than half the cost of a line)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    plain = json.JSONEncoder(ensure_ascii=False, check_circular=False)
    if make is None:  # an interpreter without the C accelerator
        return plain.encode
    chunks = make(None, plain.default, json.encoder.encode_basestring, None, ": ", ", ",
                  False, False, True)
    return lambda data: "".join(chunks(data, 0))


#: ``json.dumps(data, ensure_ascii=False)``.
encode = _line_encoder()

#: A JSON string as the line encoder writes it (``"..."``, non-ASCII kept).
json_string: Callable[[str], str] = json.encoder.encode_basestring


def dumped_text(model: Any) -> str:
    """The line encoder's text of ``model.model_dump(mode="json", by_alias=True)``."""
    return encode(model.model_dump(mode="json", by_alias=True))


def model_text(model: Any) -> str:
    """``dumped_text(model)``, from the class's formatter when it has one (see the module
    notes): the same text, and the same error for anything that is not a model."""
    kind = type(model)
    writer = _WRITERS.get(kind)
    if writer is None:
        writer = _WRITERS[kind] = _writer_of(kind)
    return writer(model)


_WRITERS: dict[type[Any], Callable[[Any], str]] = {}
#: How a model class makes its schema unless it says otherwise.
_OWN_SCHEMA = getattr(BaseModel.__get_pydantic_core_schema__, "__func__", None)

#: How a value of a flat field is written: one of these per field; the check that a value
#: is of that exact type (true: it is not) and its text, as code of a formatter.
_STR, _INT, _BOOL, _STRS = "str", "int", "bool", "strs"
_CHECKS = {_STR: "type({v}) is not str", _INT: "type({v}) is not int",
           _BOOL: "type({v}) is not bool",
           _STRS: "(type({v}) is not list or ({v} and not _all_strings({v})))"}
_TEXTS = {_STR: "_json_string({v})", _INT: "int.__repr__({v})",
          _BOOL: "('true' if {v} else 'false')", _STRS: "_strings({v})"}
_NONE_TYPES = (type(None),)


def _field_kind(annotation: Any) -> tuple[str, bool] | None:
    """``(how its values are written, whether None is allowed)`` of a flat field's
    annotation, ``None`` for any other."""
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in arguments if a not in _NONE_TYPES]
        if len(rest) != 1 or len(rest) == len(arguments):
            return None
        inner = _field_kind(rest[0])
        return None if inner is None else (inner[0], True)
    if annotation is str:
        return _STR, False
    if annotation is bool:
        return _BOOL, False
    if annotation is int:
        return _INT, False
    if origin is typing.Literal and arguments and all(type(a) is str for a in arguments):
        return _STR, False
    if origin is list and arguments == (str,):
        return _STRS, False
    return None


def _strings(values: list[str]) -> str:
    """A list of strings as the line encoder writes it."""
    return f"[{', '.join(map(json_string, values))}]"


def _all_strings(values: list[Any]) -> bool:
    """Whether every item is exactly a ``str``."""
    return all(type(value) is str for value in values)


def _writer_of(kind: type[Any]) -> Callable[[Any], str]:
    """The formatter of a flat model class, or :func:`dumped_text` for any other class."""
    if not (isinstance(kind, type) and issubclass(kind, BaseModel)) or getattr(
            kind, "__pydantic_root_model__", False):
        return dumped_text
    decorators = kind.__pydantic_decorators__
    schema = getattr(kind.__get_pydantic_core_schema__, "__func__", None)
    if decorators.field_serializers or decorators.model_serializers or \
            kind.model_computed_fields or kind.model_dump is not BaseModel.model_dump or \
            schema is not _OWN_SCHEMA:  # the class says how it is dumped
        return dumped_text
    names: list[str] = []
    keys: list[str] = []
    checks: list[str] = []
    values: list[str] = []
    for index, (name, info) in enumerate(kind.model_fields.items()):
        field = _field_kind(info.annotation)
        if field is None or info.metadata or info.exclude or getattr(
                info, "exclude_if", None) is not None:  # a serializer or a constraint
            return dumped_text
        how, optional = field
        key = info.serialization_alias or info.alias or name
        names.append(name)
        keys.append(f"{', ' if index else ''}{json_string(key)}: ")
        value = f"v{index}"
        check, text = _CHECKS[how].format(v=value), _TEXTS[how].format(v=value)
        if optional:
            check = f"({value} is not None and {check})"
            text = f"('null' if {value} is None else {text})"
        checks.append(check)
        values.append(text)
    body = ["def write(model):",
            "    if model.__pydantic_extra__:",
            "        return _dumped(model)"]
    if names:
        body += ["    fields = model.__dict__", "    try:"]
        body += [f"        v{index} = fields[{name!r}]" for index, name in enumerate(names)]
        body += ["    except KeyError:", "        return _dumped(model)",
                 f"    if {' or '.join(checks)}:", "        return _dumped(model)"]
    pieces = "".join(f"{{_k{index}}}{{{text}}}" for index, text in enumerate(values))
    body.append(f'    return f"{{{{{pieces}}}}}"' if values else '    return "{}"')
    space: dict[str, Any] = {"_dumped": dumped_text, "_json_string": json_string,
                             "_strings": _strings, "_all_strings": _all_strings}
    space.update({f"_k{index}": key for index, key in enumerate(keys)})
    exec("\n".join(body), space)  # made from the class's own field names and aliases
    writer: Callable[[Any], str] = space["write"]
    return writer
