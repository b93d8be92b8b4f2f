"""``select_encoded_lines`` (a reread file: lines found on the bytes, only the window decoded)
selects exactly what ``select_lines`` selects from the decoded text, whatever the budgets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tavernlab.workspace.text import (
    LineRangeError,
    LineSelection,
    select_encoded_lines,
    select_lines,
)
from tavernlab.workspace.text import _selection as selection_module

# Line breaks, ASCII, two-, three- and four-byte characters: the decoded window's cut falls
# inside multi-byte characters.
_TEXT = st.text(st.sampled_from(["\n", "a", " ", "é", "中", "\U0001f600", "\u2028", "\r"]),
                max_size=60)


def _both(text: str, start: int, count: int | None
          ) -> tuple[LineSelection | str, LineSelection | str]:
    """Both selections of ``text`` (a refusal as its message)."""
    data, lines = text.encode("utf-8"), len(text.split("\n")) if text else 0
    results: list[LineSelection | str] = []
    for select in (lambda: select_lines(text, start, count, file_bytes=len(data)),
                   lambda: select_encoded_lines(data, len(text), lines, start, count)):
        try:
            results.append(select())
        except LineRangeError as exc:
            results.append(f"LineRangeError: {exc}")
    return results[0], results[1]


@settings(max_examples=600, deadline=None)
@given(_TEXT, st.integers(min_value=0, max_value=12),
       st.one_of(st.none(), st.integers(min_value=0, max_value=12)),
       st.integers(min_value=1, max_value=12), st.integers(min_value=1, max_value=8),
       st.integers(min_value=1, max_value=80))
def test_encoded_selection_is_the_text_selection(text: str, start: int, count: int | None,
                                                 chars: int, lines: int, size: int) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(selection_module, "MAX_READ_CHARS", chars)
        patch.setattr(selection_module, "MAX_READ_LINES", lines)
        patch.setattr(selection_module, "MAX_READ_BYTES", size)
        expected, encoded = _both(text, start, count)
    assert encoded == expected


@pytest.mark.parametrize(("start", "count"), [(1, None), (2, 7), (4990, None), (5001, None),
                                              (5002, None)])
def test_a_preview_of_a_large_file(start: int, count: int | None) -> None:
    expected, encoded = _both("\n".join(["中文 words é"] * 5000) + "\n" + "x" * 100_000,
                              start, count)
    assert encoded == expected
    assert isinstance(expected, LineSelection) or start == 5002
