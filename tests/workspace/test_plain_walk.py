"""The check that picks pydantic-core for a record's JSON gives the old walk's answer for
any data (the walk now gathers the item types of each container in one step)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tavernlab.workspace.records._records import _plain

SCALARS = (str, int, bool, type(None))


def old_plain(data: Any) -> bool:
    """The walk as it was: every item looked at one by one."""
    pending = [data]
    while pending:
        value = pending.pop()
        kind = type(value)
        if kind is dict:
            for key, child in value.items():
                if type(key) is not str:
                    return False
                if type(child) not in SCALARS:
                    pending.append(child)
        elif kind is list or kind is tuple:
            for child in value:
                if type(child) not in SCALARS:
                    pending.append(child)
        elif kind not in SCALARS:
            return False
    return True


class Text(str):
    pass


LEAVES = st.one_of(st.text(max_size=4), st.integers(), st.booleans(), st.none(),
                   st.floats(allow_nan=False), st.builds(Text, st.text(max_size=2)),
                   st.just(b"x"), st.just(object()))
KEYS = st.one_of(st.text(max_size=3), st.integers(), st.just(None), st.booleans(),
                 st.builds(Text, st.text(max_size=2)))
DATA = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(KEYS, inner, max_size=4)), max_leaves=12)


@settings(max_examples=600, deadline=None)
@given(DATA)
def test_the_check_agrees_with_the_old_walk(data: Any) -> None:
    assert _plain(data) == old_plain(data)


def test_cases_by_hand() -> None:
    assert _plain({"a": [1, "x", None, True, {"b": ("c",)}]})
    assert not _plain({"a": [1, 1.5]})
    assert not _plain({1: "a"})
    assert not _plain([{"a": {"b": [{"c": b"x"}]}}])
    assert _plain([]) and _plain({}) and _plain("x") and _plain(None)
    assert not _plain(Text("x")) and not _plain([Text("x")]) and not _plain({Text("k"): 1})
