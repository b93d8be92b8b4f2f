"""``pretty_json`` writes exactly what ``json.dumps(indent=2)`` writes (the on-disk JSON of
run records and persist states stays byte for byte the same)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tavernlab.ondisk import Model
from tavernlab.workspace.records import dump_model, model_text, pretty_json
from tavernlab.workspace.records._records import _plain

_LEAF = (st.none() | st.booleans() | st.integers() | st.floats() | st.text()
         | st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)))
_TREE = st.recursive(_LEAF, lambda inner: st.lists(inner, max_size=4)
                     | st.tuples(inner, inner)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=40)


@settings(max_examples=1500, deadline=None)
@given(_TREE, st.booleans())
def test_pretty_json_is_json_dumps_with_indent_2(value: object, ascii_only: bool) -> None:
    assert pretty_json(value, ascii_only=ascii_only) == json.dumps(
        value, indent=2, ensure_ascii=ascii_only)


def test_a_state_manifest_shape() -> None:
    manifest = {"version": 2, "files": [{"path": "é/a.md", "sha256": "0" * 64, "bytes": 3}],
                "directories": [], "changes": [], "baseStateId": None, "reused": False}
    assert pretty_json(manifest) == json.dumps(manifest, indent=2, ensure_ascii=False)
    assert pretty_json({1: "int key"}) == json.dumps({1: "int key"}, indent=2)


def test_ascii_only_escapes_what_json_escapes() -> None:
    """DEL and every character past ASCII (astral ones as surrogate pairs, lowercase hex),
    in keys and values; a tool call's arguments file is written this way."""
    value = {"ké\x7f": ["\x7f é \U0001f600 \u2028 \uffff \x00 \"\\ ~"], "n": [1, None, True]}
    assert pretty_json(value, ascii_only=True) == json.dumps(value, indent=2)
    assert "\\ud83d\\ude00" in pretty_json(value, ascii_only=True)


def test_write_model_writes_what_write_json_of_the_dump_writes(tmp_path: Path) -> None:
    """``write_model`` (pydantic-core in one pass) and ``write_json(dump_model(...))`` give
    the same bytes for a persist manifest, non-ASCII, escapes and absent fields included; a
    lone surrogate in a name fails both the same way, writing nothing."""
    from datetime import UTC, datetime

    from tavernlab.workspace.persist import StateManifest
    from tavernlab.workspace.persist._persist_tree import FileEntry, PersistChange
    from tavernlab.workspace.records import dump_model, write_json, write_model

    for name in ("plain.md", "ü \x01\u2028\"\\ 中文.md", "bad-\udcff.md"):
        manifest = StateManifest(
            state_id="pst_1", run_id="run_1", workspace_id="chat_1", stable_chat_id=name,
            created_at=datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
            files=[FileEntry(name, "0" * 64, 3)], directories=["a"],
            changes=[PersistChange("added", name, "0" * 64, 3), PersistChange("deleted", "x")])
        if "\udcff" in name:
            with pytest.raises(UnicodeEncodeError):
                write_model(tmp_path / "bad.json", manifest)
            with pytest.raises(UnicodeEncodeError):
                write_json(tmp_path / "bad.json", dump_model(manifest))
            assert sorted(p.name for p in tmp_path.iterdir()) == ["json.json", "model.json"]
            continue
        write_model(tmp_path / "model.json", manifest)
        write_json(tmp_path / "json.json", dump_model(manifest))
        assert (tmp_path / "model.json").read_bytes() == (tmp_path / "json.json").read_bytes()


class _Sample(Model):
    """A record with a timestamp, optional fields and room for extra ones."""

    name: str
    when: datetime
    note: str | None = None
    refs: dict[str, str] | None = None


@pytest.mark.parametrize("extra", [
    {},
    {"blockedReason": "a tool call with no result"},
    {"ratio": 1e16, "half": 0.5},  # floats: json's forms, not pydantic-core's
    {"nested": {"a": [1, None, "ü"], "b": True}},
    {"text": "lone \ud800 surrogate"},
], ids=["none", "text", "floats", "nested", "surrogate"])
def test_model_text_is_the_pretty_json_of_the_dumped_model(extra: dict[str, object]) -> None:
    sample = _Sample(name="é ✓ \"q\"", when=datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
                     refs={"z": "1", "a": "2"}, **extra)
    assert model_text(sample) == pretty_json(dump_model(sample))
    assert model_text(sample.model_copy(update={"note": "set"})) == pretty_json(
        dump_model(sample.model_copy(update={"note": "set"})))


@pytest.mark.parametrize("text", ["plain ascii ~", "del \x7f only", "é", "\x7f", "a" * 2048])
def test_ascii_only_of_ascii_text_is_json_dumps(text: str) -> None:
    """Text that is ASCII already (with or without DEL, which json still escapes) is written
    as json writes it."""
    value = {"callId": "call_1", "arguments": {"content": text}}
    assert pretty_json(value, ascii_only=True) == json.dumps(value, indent=2)


def _plain_as_before(data: object) -> bool:
    """The plain-data check as it was first written (``all`` over the keys, generators)."""
    scalars = (str, int, bool, type(None))
    pending = [data]
    while pending:
        value = pending.pop()
        kind = type(value)
        if kind is dict:
            if not all(type(key) is str for key in value):
                return False
            pending.extend(v for v in value.values() if type(v) not in scalars)
        elif kind is list or kind is tuple:
            pending.extend(v for v in value if type(v) not in scalars)
        elif kind not in scalars:
            return False
    return True


class _Str(str):
    pass


_KEYS = st.text(max_size=3) | st.integers() | st.text(max_size=3).map(_Str)


@settings(max_examples=800, deadline=None)
@given(st.recursive(_LEAF | st.text(max_size=3).map(_Str) | st.sets(st.integers(), max_size=2),
                    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                    | st.dictionaries(_KEYS, inner, max_size=3), max_leaves=20))
def test_the_plain_data_check_is_the_one_first_written(value: object) -> None:
    assert _plain(value) is _plain_as_before(value)
