"""The check of a tool call's arguments encodes them as ``json.dumps(...,
ensure_ascii=False, allow_nan=False)`` does: the same text, and the same error for anything
that is not JSON (which is what the ``tool.invalid_arguments`` message quotes)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tavernlab.host._dispatch import _depth_exceeds, _strict_json, unstorable

cyclic: list[Any] = []
cyclic.append(cyclic)
shared = {"a": 1}


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
                    | st.text(st.characters(exclude_categories=())),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(), inner, max_size=3), max_leaves=10))
def test_arguments_encode_as_json_dumps(value: Any) -> None:
    try:
        expected = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        with pytest.raises(ValueError) as caught:
            _strict_json(value)
        assert str(caught.value) == str(exc)
        return
    assert _strict_json(value) == expected


@pytest.mark.parametrize("value", [
    {"a": {1, 2}}, {(1, 2): "x"}, [float("nan")], {"x": float("-inf")}, cyclic,
    {"one": shared, "two": shared}, ("a", ["b"]), "\udcff", object(), {1: "a", None: 2},
])
def test_odd_arguments_fail_as_json_dumps_fails(value: Any) -> None:
    try:
        expected: Any = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)) as caught:
            _strict_json(value)
        assert str(caught.value) == str(exc)
    else:
        assert _strict_json(value) == expected


def test_a_refused_argument_names_why() -> None:
    assert unstorable({"a": float("nan")}) == (
        "arguments must be JSON values: Out of range float values are not JSON compliant")
    assert unstorable({"a": "\udcff"}) == (
        "arguments must be valid Unicode text (found a lone surrogate)")
    assert unstorable({"a": {1}}) == (
        "arguments must be JSON values: Object of type set is not JSON serializable")
    assert unstorable(cyclic) == "arguments are nested more than 128 levels deep"
    assert unstorable({"path": "a", "content": "b"}) is None


def _depth_of_walk(value: Any, limit: int) -> bool:
    """The nesting check walked in full, without the flat-object shortcut."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


class _Dict(dict[str, Any]):
    pass


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.integers() | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.lists(inner, max_size=3).map(tuple)
                    | st.dictionaries(st.text(max_size=2), inner, max_size=3)
                    | st.dictionaries(st.text(max_size=2), inner, max_size=3).map(_Dict),
                    max_leaves=12),
       st.integers(min_value=0, max_value=4))
def test_the_nesting_check_of_a_flat_object_is_that_of_the_full_walk(value: Any,
                                                                      limit: int) -> None:
    assert _depth_exceeds(value, limit) == _depth_of_walk(value, limit)
