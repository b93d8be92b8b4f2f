"""``workspace.read_file`` builds what it returns once per content and window: a first read
(nothing known), a read of the same window again (its view kept) and a read whose view was
forgotten but whose measures are known (only the window decoded) all return exactly what
the frozen oracle (``tests/read_oracle.py``, the tool as it was before) returns, and leave
the same read records."""

from __future__ import annotations

import itertools

import pytest
import read_oracle
from hypothesis import given, settings
from hypothesis import strategies as st
from read_oracle import old_read

from tavernlab.host import Lab, Run
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage._fs import WriteGuard
from tavernlab.workspace.text import _selection as selection_module
from tavernlab.workspace.tools import _reading as reading_module

# ASCII words and punctuation, a carriage return, two-, three- and four-byte characters
# (accents, ideographs, hangul, emoji), a separator outside ASCII.
_PIECE = st.sampled_from(["a", "word", " ", "-", "_", "42", "\r", "\u00e9", "\u4e2d",
                          "\uac00", "\u0436", "\U0001f600", "\U00020000", "\u2028"])
_LINE = st.lists(_PIECE, max_size=8).map("".join)
# Bytes that are not UTF-8: a stray continuation, a cut sequence, an encoded surrogate.
_INVALID = st.sampled_from([b"\xff", b"\x80", b"\xe4\xb8", b"\xed\xa0\x80"])
_NAMES = itertools.count()


@st.composite
def _contents(draw: st.DrawFn) -> bytes:
    data = draw(st.sampled_from(["\n", "\r\n"])).join(
        draw(st.lists(_LINE, max_size=8))).encode("utf-8")
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        at = draw(st.integers(min_value=0, max_value=len(data)))
        data = data[:at] + draw(_INVALID) + data[at:]
    return data


def _forget(views: bool = True, measures: bool = True) -> None:
    if views:
        reading_module._VIEWS.clear()
    if measures:
        reading_module._MEASURES._known.clear()


@settings(max_examples=200, deadline=None)
@given(_contents(), st.one_of(st.just(1), st.integers(min_value=0, max_value=9)),
       st.one_of(st.none(), st.integers(min_value=0, max_value=7)),
       st.integers(min_value=1, max_value=30), st.integers(min_value=1, max_value=6),
       st.integers(min_value=1, max_value=120))
def test_every_read_is_the_oracles(tmp_path_factory: pytest.TempPathFactory, data: bytes,
                                   start: int, count: int | None, chars: int, lines: int,
                                   size: int) -> None:
    """Any content (empty, CRLF, CJK, emoji, not UTF-8) and window, under any budgets."""
    run = Lab(tmp_path_factory.mktemp("lab")).start_run(chat_id="alice")
    path = f"scratch/views-{next(_NAMES)}.md"
    run.internals.scope.write_file(WorkspacePath(path), data, WriteGuard.unchecked())
    args: dict[str, object] = {"path": path, "start_line": start}
    if count is not None:
        args["line_count"] = count
    with pytest.MonkeyPatch.context() as patch:
        for name, value in [("MAX_READ_CHARS", chars), ("MAX_READ_LINES", lines),
                            ("MAX_READ_BYTES", size)]:
            patch.setattr(selection_module, name, value)
            patch.setattr(read_oracle, name, value)
        expected = old_read(path, data, start, count)
        _forget()
        first = run.call_tool("workspace.read_file", args)       # nothing known
        again = run.call_tool("workspace.read_file", args)       # its view kept
        _forget(measures=False)
        known = run.call_tool("workspace.read_file", args)       # measures known
        _forget(views=False)
        viewed = run.call_tool("workspace.read_file", args)      # view kept, measures not
    record = run.internals.main.records.get(path)
    for result in (first, again, known, viewed):
        if isinstance(expected, str):
            assert (result.is_error, result.error_code) == (True, expected)
            assert (result.content, result.structured) == (first.content, first.structured)
            continue
        content, structured, _ = expected
        assert not result.is_error, result.content
        assert (result.content, result.structured, result.resource_refs) == (
            content, structured, [path])
    if isinstance(expected, str):
        assert record is None
    else:
        assert record is not None and record.sha256 == expected[1]["sha256"]
        assert (record.full_read, record.observed_texts) == (
            (True, []) if expected[2] is None else (False, [expected[2]] * 4))


def test_a_returned_payload_is_the_callers_own(run: Run) -> None:
    """A kept view hands out a new ``structured`` dict each time: changing one result's
    leaves the next read's as it was."""
    run.internals.scope.write_file(WorkspacePath("scratch/own.md"), b"one\ntwo",
                                   WriteGuard.unchecked())
    first = run.call_tool("workspace.read_file", {"path": "scratch/own.md"})
    first.structured["chars"] = -1
    first.resource_refs.append("elsewhere")
    second = run.call_tool("workspace.read_file", {"path": "scratch/own.md"})
    assert (second.structured["chars"], second.resource_refs) == (7, ["scratch/own.md"])


def test_views_stay_within_their_limits() -> None:
    views = reading_module._Views(chars=100, entries=3)
    view = reading_module._View

    def key(n: int) -> tuple[str, str, int, int | None]:
        return (f"d{n}", "p", 1, None)

    for n in range(5):
        views.put(key(n), view("x" * 10, {}, "y" * 10))
    assert [views.get(key(n)) is not None for n in range(5)] == [False, False, True, True, True]
    views.get(key(2))  # now the most recently used
    views.put(key(5), view("x" * 70, {}, None))  # 20 * 3 + 70 > 100: two go
    assert [views.get(key(n)) is not None for n in (2, 3, 4, 5)] == [True, False, False, True]
    views.put(key(6), view("x" * 101, {}, None))  # larger than the limit: not kept
    assert views.get(key(6)) is None and views.get(key(5)) is not None
    views.put(key(5), view("x", {}, None))  # replaced, its weight with it
    views.put(key(7), view("x" * 79, {}, None))
    assert [views.get(key(n)) is not None for n in (2, 5, 7)] == [True, True, True]
