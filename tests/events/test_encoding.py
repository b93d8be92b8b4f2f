"""A record's line is built without a model dump where it can be, and is the same bytes.

Every payload class a typed event or journal record has, and the event scope, is written by
:func:`~tavernlab.events._encoding.model_text` exactly as the line encoder writes its
``model_dump(mode="json", by_alias=True)``: for any values (text of any kind, lone
surrogates included), for values of the wrong type assigned after validation, and for extra
keys. A whole line built by the logs is what the envelope dictionary they used to encode
gives, for events with and without a scope, journal records, and the errors.
"""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tavernlab.clock import FixedClock, SequentialIds, rfc3339
from tavernlab.events import (
    Event,
    EventLog,
    EventScope,
    FileChange,
    FileChanged,
    FileWritten,
    JournalLog,
    JournalRecord,
    RunCompleted,
    RunCreated,
    RunFailed,
    RunFailure,
    StatusChange,
    StatusChanged,
    ToolCallCompleted,
    ToolCallOutcome,
    ToolCallRef,
    ToolCallStarted,
    WorkspaceFileWritten,
)
from tavernlab.events._base import typed_classes
from tavernlab.events._encoding import (
    _WRITERS,
    _field_kind,
    _writer_of,
    dumped_text,
    encode,
    model_text,
)
from tavernlab.events._log import _payload_model

#: Every payload class of a typed event or journal record (every family imported), and
#: the event scope.
PAYLOADS = sorted({_payload_model(kind) for kind in typed_classes().values()} - {object}
                  | {EventScope}, key=lambda cls: cls.__name__)
#: Those written without a dump (the rest take the dump itself).
FLAT = [cls for cls in PAYLOADS if _writer_of(cls) is not dumped_text]

TEXT = st.text(st.characters(exclude_categories=()), max_size=12)  # lone surrogates too
#: Anything a value of a field may be after an assignment nobody validated.
ANYTHING = st.one_of(st.none(), st.booleans(), st.integers(), TEXT,
                     st.floats(allow_nan=True), st.lists(TEXT, max_size=3),
                     st.lists(st.integers(), min_size=1, max_size=2),
                     st.tuples(TEXT), st.dictionaries(TEXT, st.integers(), max_size=2))


def test_the_payloads_of_a_tool_call_are_flat() -> None:
    """The records every tool call writes take the formatter (the point of it)."""
    assert {ToolCallRef, ToolCallOutcome, FileWritten, StatusChange, FileChange,
            EventScope} <= set(FLAT)
    assert RunFailure not in FLAT  # a nested model: the dump


def valid_value(annotation: Any) -> st.SearchStrategy[Any]:
    """Values of a flat field's own type (the type validation leaves it with)."""
    kind = _field_kind(annotation)
    assert kind is not None
    how, optional = kind
    base = {"str": TEXT, "int": st.integers(), "bool": st.booleans(),
            "strs": st.lists(TEXT, max_size=3)}[how]
    return st.none() | base if optional else base


def same_result(model: Any) -> None:
    """``model_text`` gives the dump's text, or raises what the dump raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a wrong type warns the same either way
        try:
            expected: Any = dumped_text(model)
        except Exception as exc:  # the same error from both
            with pytest.raises(type(exc)) as caught:
                model_text(model)
            assert str(caught.value) == str(exc)
            return
        assert model_text(model) == expected


@pytest.mark.parametrize("cls", FLAT, ids=lambda cls: cls.__name__)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_flat_payload_is_written_as_its_dump(cls: type[pydantic.BaseModel],
                                               data: st.DataObject) -> None:
    fields = {name: data.draw(valid_value(info.annotation), label=name)
              for name, info in cls.model_fields.items()}
    model = cls.model_construct(**fields)
    same_result(model)
    if cls.model_fields:  # one value of another type, assigned behind validation's back
        name = data.draw(st.sampled_from(sorted(cls.model_fields)), label="wrong")
        object.__setattr__(model, name, data.draw(ANYTHING, label="value"))
        same_result(model)
    if cls.model_config.get("extra") == "allow":
        extra = cls.model_construct(**fields, **{"zExtra": data.draw(ANYTHING, label="x")})
        assert extra.__pydantic_extra__
        same_result(extra)


class Name(str):
    """A string of another class."""


#: A value of each kind a field may be left holding.
ODD_VALUES = [True, False, 0, 7, 1.5, float("nan"), float("inf"), "s", "\udcff", Name("n"),
              None, [], ["a"], [1], [Name("n")], ("a",), {"a": 1}, b"x", object()]


@pytest.mark.parametrize("cls", FLAT, ids=lambda cls: cls.__name__)
def test_every_field_holding_any_value_is_written_as_its_dump(
        cls: type[pydantic.BaseModel]) -> None:
    """Each field in turn holds each odd value (validated models, then assigned): a bool
    in an int field is ``1`` in the dump, for one, which only the exact type check sees."""
    fields = {name: _a_valid_value(info.annotation) for name, info in cls.model_fields.items()}
    for name in cls.model_fields:
        for value in ODD_VALUES:
            model = cls.model_construct(**fields)
            same_result(model)
            object.__setattr__(model, name, value)
            same_result(model)


def _a_valid_value(annotation: Any) -> Any:
    kind = _field_kind(annotation)
    assert kind is not None
    return {"str": "x", "int": 1, "bool": True, "strs": ["a", "b"]}[kind[0]]


class Shouted(StatusChange):
    """A payload that says how its field is dumped."""

    @pydantic.field_serializer("status")
    def _loud(self, value: str) -> str:
        return value.upper()


class Dumped(StatusChange):
    """A payload with its own ``model_dump``."""

    def model_dump(self, **options: Any) -> dict[str, Any]:  # type: ignore[override]
        return {"status": "mine"}


class Serialized(pydantic.BaseModel):
    """A field whose type carries its own serializer."""

    name: Annotated[str, pydantic.PlainSerializer(lambda value: value * 2)]


class Limited(pydantic.BaseModel):
    """A field with a constraint (metadata): the dump, to be safe."""

    name: str = pydantic.Field(min_length=1)


@pytest.mark.parametrize("cls", [Shouted, Dumped, Serialized, Limited])
def test_a_class_that_says_how_it_is_dumped_takes_the_dump(cls: type[Any]) -> None:
    model = cls(**({"name": "ab"} if "name" in cls.model_fields else {"status": "failed"}))
    assert _writer_of(cls) is dumped_text
    assert model_text(model) == encode(model.model_dump(mode="json", by_alias=True))


def test_a_field_missing_from_a_constructed_model_takes_the_dump() -> None:
    model = ToolCallRef.model_construct(round=1)
    same_result(model)


def test_a_string_subclass_takes_the_dump() -> None:
    model = StatusChange(status="calling_model")
    object.__setattr__(model, "status", Name("calling_model"))
    same_result(model)


def test_anything_that_is_not_a_model_fails_as_the_dump_does() -> None:
    for value in (None, {"a": 1}, 3):
        with pytest.raises(AttributeError):
            model_text(value)
        assert _WRITERS[type(value)] is dumped_text


class Readings:
    """A clock that keeps what it read."""

    def __init__(self) -> None:
        self.clock = FixedClock(datetime(2026, 5, 1, tzinfo=UTC), timedelta(microseconds=7))
        self.moments: list[datetime] = []

    def now(self) -> datetime:
        moment = self.clock.now()
        self.moments.append(moment)
        return moment

    def monotonic(self) -> float:
        return self.clock.monotonic()


def logs(tmp_path: Path, run_id: str = "run_x") -> tuple[EventLog, JournalLog, Readings]:
    readings = Readings()
    events = EventLog(tmp_path / "events.jsonl", run_id, clock=readings,
                      ids=SequentialIds("encoding"))
    return events, JournalLog(tmp_path / "journal.jsonl", events), readings


def envelope_line(data: dict[str, Any], moment: datetime, kind: type[Event], run_id: str,
                  payload: Any, level: Any = None, scope: Any = None) -> bytes:
    """The line as the logs used to encode it: the envelope as one dictionary."""
    rest: dict[str, Any] = {
        "id": data["id"], "runId": run_id, "timestamp": rfc3339(moment),
        "level": level or kind.default_level(), "type": kind.type_name(),
        "payload": None if payload is None else payload.model_dump(mode="json",
                                                                   by_alias=True)}
    if scope is not None:
        rest["eventScope"] = scope.model_dump(mode="json", by_alias=True)
    return (encode(rest)[1:] + "\n").encode("utf-8")


REF = ToolCallRef(round=3, invocation_id="inv_é\"\\", call_id="call_1", tool_id="t.x",
                  name="t_x", arguments_path="tool-args/ünï/\u2028.json")
OUTCOME = ToolCallOutcome(round=1, invocation_id="inv", call_id="c", tool_id="t", name="n",
                          is_error=True, error_code="tool.x", message="a\n\"b\"\t😀",
                          elapsed_ms=12, resource_refs=["a", "ß"])
CASES: list[tuple[type[Event], Any, dict[str, Any]]] = [
    (ToolCallStarted, REF, {"scope": EventScope(invocation_id="inv_é")}),
    (ToolCallStarted, REF, {"scope": EventScope(invocation_id="i",
                                                related_invocation_ids=["a", "\u00ff"])}),
    (ToolCallCompleted, OUTCOME, {"level": "warn"}),
    (StatusChanged, StatusChange(status="dispatching_tool"), {}),
    (WorkspaceFileWritten, FileWritten(call_id="c", path="p", sha256="0" * 64,
                                       mode="replace"), {}),
    (RunFailed, RunFailure.internal_fault("boom ✗"), {}),
    (RunCreated, None, {}),  # not an instance: the envelope's validation says why
    (RunCompleted, None, {}),
]


@pytest.mark.parametrize("run_id", ["run_x", "run_\"ünï\""])
@pytest.mark.parametrize(("kind", "payload", "options"), CASES)
def test_an_event_line_is_the_envelope_encoded(tmp_path: Path, run_id: str,
                                               kind: type[Event], payload: Any,
                                               options: dict[str, Any]) -> None:
    events, _, readings = logs(tmp_path, run_id)
    try:
        _, data = events.build(kind, payload, **options)
    except pydantic.ValidationError:
        with pytest.raises(pydantic.ValidationError):
            kind(seq=0, id="x", run_id=run_id, timestamp=datetime.now(UTC), payload=payload)
        return
    assert data["rest"] == envelope_line(data, readings.moments[-1], kind, run_id, payload,
                                         **options)
    assert (data["seq"], data["type"]) == (0, kind.type_name()) and "eventSeq" not in data
    line = b'{"seq": 1, ' + data["rest"]
    assert json.loads(line)["id"] == data["id"]


def test_a_journal_line_is_the_envelope_encoded(tmp_path: Path) -> None:
    _, journal, readings = logs(tmp_path, "run_\"ü\"")
    change = FileChange(path="ä/\"b\".md", change="modified", node="file", size=3,
                        sha256="0" * 64, writer="tool", call_id="call_1")
    _, data = journal.build(FileChanged, change)
    assert data["rest"] == envelope_line(data, readings.moments[-1], FileChanged,
                                         "run_\"ü\"", change)
    assert (data["seq"], data["eventSeq"], data["type"]) == (0, 0, "file_changed")


def test_text_that_cannot_be_written_is_refused_when_built(tmp_path: Path) -> None:
    events, journal, _ = logs(tmp_path)
    with pytest.raises(UnicodeEncodeError):
        events.build(StatusChanged, StatusChange(status="calling_model"),
                     scope=EventScope(invocation_id="inv_\udcff"))
    with pytest.raises(UnicodeEncodeError):
        journal.build(FileChanged, FileChange(path="\ud800", change="created", node="file",
                                              writer="tool"))
    assert not (tmp_path / "events.jsonl").exists()


def test_a_class_of_the_wrong_file_is_refused(tmp_path: Path) -> None:
    events, journal, _ = logs(tmp_path)
    with pytest.raises(ValueError, match="not an upstream event type"):
        events.build(FileChanged, FileChange(path="a", change="created", node="file",
                                             writer="tool"))  # type: ignore[type-var]
    with pytest.raises(ValueError, match="not a journal record type"):
        journal.build(StatusChanged,  # type: ignore[type-var]
                      StatusChange(status="calling_model"))
    assert issubclass(FileChanged, JournalRecord)


def test_a_written_event_reads_back_as_its_model(tmp_path: Path) -> None:
    events, _, _ = logs(tmp_path)
    written = events.append(ToolCallStarted, REF, scope=EventScope(invocation_id="inv_é"))
    (read,) = events.read()
    assert read.model_dump() == written.model_dump()
