"""Text metrics, line selection and search scoring (docs/workspace.md)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tavernlab.workspace.text import (
    LineRangeError,
    count_words,
    number_lines,
    query_tokens,
    search_text,
    select_lines,
)
from tavernlab.workspace.text._selection import MAX_READ_CHARS, MAX_READ_LINES
from tavernlab.workspace.text._text import count_chars, split_lines, token_weight


@pytest.mark.parametrize(("text", "words"), [
    ("hello world", 2),        # Acceptance 7.2.1
    ("你好世界", 4),            # 7.2.2
    ("foo-bar 42", 3),         # 7.2.3
    ("abc中文", 3),             # 7.2.4
    ("héllo", 1),              # 7.2.5
    ("", 0),
    ("   \n\t", 0),
    ("snake_case", 2),         # `_` is not alphanumeric
    ("ひらがな カタカナ", 8),     # kana count one each
    ("한국어 text", 4),          # hangul syllables count one each
    ("x2y 3.14", 3),
    ("Ωmega ß", 2),
    ("中a文b", 4),
])
def test_words(text: str, words: int) -> None:
    assert count_words(text) == words


def test_chars_are_scalar_values() -> None:
    assert count_chars("héllo") == 5              # Acceptance 7.2.5
    assert count_chars("你好") == 2
    assert count_chars("😀a") == 2
    assert count_chars("") == 0


def test_lines_and_numbering() -> None:
    assert split_lines("") == []
    assert split_lines("a\n") == ["a", ""]
    assert split_lines("a\nb") == ["a", "b"]
    assert number_lines(9, ["nine", "ten", "eleven"]) == (
        " 9 | nine\n10 | ten\n11 | eleven")                       # Acceptance 7.4.3
    assert number_lines(1, ["x"]) == "1 | x"
    assert number_lines(99, ["", "c"]) == " 99 | \n100 | c"
    assert number_lines(1, []) == ""


# --- read_file selection ------------------------------------------------------------------


def test_empty_file() -> None:
    """Acceptance 7.5.1."""
    sel = select_lines("")
    assert (sel.start_line, sel.end_line, sel.total_lines, sel.rows) == (1, 0, 0, [])
    assert (sel.truncated, sel.line_truncated, sel.next_start_line) == (False, False, None)


def test_window_of_a_three_line_file() -> None:
    """Acceptance 7.5.2."""
    sel = select_lines("one\ntwo\nthree", 2, 1)
    assert sel.rows == [(2, "two")]
    assert (sel.end_line, sel.truncated, sel.next_start_line) == (2, True, 3)
    tail = select_lines("one\ntwo\nthree", 3)
    assert (tail.rows, tail.truncated, tail.next_start_line) == ([(3, "three")], True, None)
    whole = select_lines("one\ntwo\nthree", 1, 3)
    assert (whole.truncated, whole.next_start_line) == (False, None)
    beyond = select_lines("one\ntwo\nthree", 2, 99)
    assert beyond.end_line == 3


def test_trailing_newline_is_a_final_empty_line() -> None:
    sel = select_lines("a\nb\n")
    assert sel.rows == [(1, "a"), (2, "b"), (3, "")]
    assert sel.total_lines == 3


def test_long_single_line() -> None:
    """Acceptance 7.5.3."""
    sel = select_lines("x" * 100_000)
    assert sel.rows == [(1, "x" * 80_000)]
    assert (sel.line_truncated, sel.truncated, sel.end_line, sel.next_start_line) == (
        True, True, 1, None)


@pytest.mark.parametrize(("start", "count", "message"), [
    (0, None, "start_line must be >= 1"),
    (-3, None, "start_line must be >= 1"),
    (1, 0, "line_count must be >= 1"),
    (5, None, "start_line 5 is beyond total lines 3"),  # Acceptance 7.5.4
    (4, 1, "start_line 4 is beyond total lines 3"),
])
def test_invalid_ranges(start: int, count: int | None, message: str) -> None:
    with pytest.raises(LineRangeError) as info:
        select_lines("a\nb\nc", start, count)
    assert str(info.value) == message


def test_start_line_one_is_allowed_on_an_empty_file_but_not_two() -> None:
    with pytest.raises(LineRangeError, match="start_line 2 is beyond total lines 0"):
        select_lines("", 2)


def test_character_budget_only_for_previews_or_big_files() -> None:
    # A full read of a file within all limits has no character budget ...
    text = "\n".join(["y" * 100] * 700)          # 70 699 chars, 700 lines
    assert len(select_lines(text).rows) == 700
    # ... a window of it does: 80 000 counted with separators
    lines = ["z" * 99] * 1000                   # each line + separator = 100 chars
    big = "\n".join(lines)                      # 99 999 chars: over the budget
    sel = select_lines(big)
    assert sel.end_line == 800                  # 800 * 99 + 799 = 79 999 <= 80 000
    assert (sel.truncated, sel.line_truncated, sel.next_start_line) == (True, False, 801)
    window = select_lines("\n".join(["w" * 99] * 900), 1, 900)   # fits, but not a full read
    assert window.end_line == 800


def test_exact_budget_boundary() -> None:
    text = "a" * 40_000 + "\n" + "b" * 39_999 + "\n" + "c"
    sel = select_lines(text, 1, 3)              # 40 000 + 1 + 39 999 = 80 000 exactly
    assert sel.end_line == 2
    assert sel.next_start_line == 3


def test_line_cap_always_applies() -> None:
    text = "\n".join(str(i) for i in range(1, 1302))  # 1301 short lines
    sel = select_lines(text)
    assert sel.end_line == MAX_READ_LINES
    assert (sel.truncated, sel.next_start_line) == (True, 1201)
    rest = select_lines(text, 1201)
    assert (rest.start_line, rest.end_line, rest.next_start_line) == (1201, 1301, None)


def test_the_byte_limit_alone_never_cuts_a_full_read() -> None:
    """A text within 80 000 characters fits the 80 000 budget even when it is over 256 KiB
    (4-byte characters), so a full read stays whole."""
    text = "\N{GRINNING FACE}" * 70_000              # 70 000 chars, 280 000 bytes
    sel = select_lines(text)
    assert (sel.end_line, sel.truncated, sel.line_truncated) == (1, False, False)
    assert sel.rows[0][1] == text
    assert MAX_READ_CHARS == 80_000


# --- search --------------------------------------------------------------------------------


def test_query_tokens() -> None:
    assert query_tokens("Hello, World!") == ["hello", "world"]      # Acceptance 7.4.1
    assert query_tokens("snake_case  x-y x") == ["snake_case", "x", "y"]
    assert query_tokens("ÉTÉ 中文") == ["été", "中文"]
    assert query_tokens("!!! ...") == []
    assert query_tokens(" ".join(f"t{i}" for i in range(100))) == [f"t{i}" for i in range(64)]
    assert query_tokens(" ".join(["dup"] * 70 + ["last"])) == ["dup", "last"]


def test_token_weights() -> None:
    assert [token_weight(t) for t in ("a", "hello", "abcdefgh", "abcdefghijk")] == [1, 5, 8, 8]


def test_a_line_with_one_of_two_tokens_scores_half() -> None:
    """Acceptance 7.4.2."""
    hits, more = search_text("a.md", "nothing\nsay hello\n", ["hello", "world"], limit=5,
                             context_lines=0)
    assert [(h.score, h.start_line, h.end_line, h.snippet) for h in hits] == [
        (0.5, 2, 2, "2 | say hello")]
    assert more is False


def test_substring_matching_is_case_insensitive() -> None:
    hits, _ = search_text("a.md", "Say HELLOWORLD", ["hello", "world"], limit=5,
                          context_lines=0)
    assert hits[0].score == 1.0


def test_windows_ranking_and_overlap() -> None:
    text = "\n".join([
        "alpha",          # 1: 5/9
        "filler",         # 2
        "alpha beta",     # 3: 9/9
        "filler",         # 4
        "filler",         # 5
        "filler",         # 6
        "beta",           # 7: 4/9
        "filler", "filler", "filler", "filler",
        "alpha",          # 12: 5/9
    ])
    hits, more = search_text("f.md", text, ["alpha", "beta"], limit=10, context_lines=1)
    # weights: alpha 5, beta 4 -> total 9
    assert [(h.line, round(h.score, 3), h.start_line, h.end_line) for h in hits] == [
        (3, 1.0, 2, 4),
        (12, 0.556, 11, 12),
        (7, 0.444, 6, 8),
    ]
    # line 1 (window 1-2) overlapped the best window and was dropped
    assert more is False
    limited, more = search_text("f.md", text, ["alpha", "beta"], limit=2, context_lines=1)
    assert [h.line for h in limited] == [3, 12]
    assert more is True


def test_equal_scores_rank_by_line() -> None:
    hits, _ = search_text("f.md", "x\nkey\nx\nx\nx\nx\nkey", ["key"], limit=5, context_lines=0)
    assert [h.line for h in hits] == [2, 7]


def test_snippet_width_follows_the_last_line_number() -> None:
    text = "\n".join(f"line {i}" if i != 10 else "target" for i in range(1, 15))
    hits, _ = search_text("f.md", text, ["target"], limit=1, context_lines=1)
    assert hits[0].snippet == " 9 | line 9\n10 | target\n11 | line 11"  # Acceptance 7.4.3


def test_lowercasing_is_per_line_even_for_context_sensitive_letters() -> None:
    """Final sigma and dotted capital I lowercase the same whether the whole text or each line
    is lowercased, so whole-file pre-filtering finds exactly the per-line matches."""
    odos = "\u039f\u0394\u039f\u03a3"                # Greek capitals: ends in a final sigma
    text = f"{odos}\n{odos} \u039a\u0391\u0399\nnothing\n\u0130stanbul\nISTANBUL"
    tokens = query_tokens(f"{odos.lower()} istanbul")
    per_line = [n for n, line in enumerate(text.split("\n"), 1)
                if any(t in line.lower() for t in tokens)]
    hits, _ = search_text("f.md", text, tokens, limit=10, context_lines=0)
    assert sorted(h.line for h in hits) == per_line == [1, 2, 5]
    assert search_text("f.md", "nothing here", ["zebra"], limit=5, context_lines=0) == (
        [], False)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=12_000), st.integers(min_value=0, max_value=120))
def test_numbering_from_the_cached_column_is_the_formatted_one(first: int, count: int) -> None:
    """Line numbers of up to four digits come from a column made once; rows are exactly
    ``f"{n:>w} | {line}"`` wherever they start, across the four-to-five digit edge too."""
    lines = [f"line {i}" for i in range(count)]
    width = len(str(first + count - 1)) if count else 0
    expected = "\n".join(f"{n:>{width}} | {line}"
                         for n, line in zip(range(first, first + count), lines, strict=True))
    assert number_lines(first, lines) == expected
