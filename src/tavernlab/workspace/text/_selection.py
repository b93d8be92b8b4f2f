"""The line window of ``workspace.read_file`` with its budgets (docs/workspace.md).

:func:`select_lines` selects from a text (:func:`select_lines_at` also says where the
selection starts in it). :func:`select_encoded_lines` makes the same
selection from the UTF-8 bytes of a file already known to be text, of a known character
count (a file read again: only the part the window can reach is decoded, so a preview of a
large file costs its window, not the file).
"""

from __future__ import annotations

import codecs
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from operator import add
from typing import AnyStr

MAX_READ_BYTES = 256 * 1024
MAX_READ_LINES = 1200
MAX_READ_CHARS = 80_000
#: The most UTF-8 bytes one character takes.
_MAX_CHAR_BYTES = 4


class LineRangeError(ValueError):
    """A ``start_line``/``line_count`` that upstream refuses (``workspace.invalid_line_range``)."""


@dataclass(frozen=True, slots=True)
class LineSelection:
    """The lines ``workspace.read_file`` returns and how they relate to the whole file."""

    start_line: int
    end_line: int
    total_lines: int
    lines: list[str]  # the selected lines, from ``start_line`` on
    line_truncated: bool
    truncated: bool
    next_start_line: int | None
    text: str  # the selected text: the lines joined with ``\n``

    @property
    def rows(self) -> list[tuple[int, str]]:
        """The selected lines with their numbers."""
        return list(zip(range(self.start_line, self.end_line + 1), self.lines, strict=True))


def select_lines(text: str, start_line: int = 1, line_count: int | None = None,
                 *, file_bytes: int | None = None) -> LineSelection:
    """Select the lines of a ``workspace.read_file`` window (docs/workspace.md).

    The character budget is unlimited only for a full read (start 1, no count) of a file that
    fits all three limits (256 KiB, 1200 lines, 80 000 characters); otherwise 80 000. The
    1200-line cap always applies. A first line longer than the budget is cut to the budget
    and flagged ``line_truncated``. Only the part of the text the selection can reach is
    split into lines.
    """
    return select_lines_at(text, start_line, line_count, file_bytes=file_bytes)[0]


def select_lines_at(text: str, start_line: int = 1, line_count: int | None = None,
                    *, file_bytes: int | None = None) -> tuple[LineSelection, int]:
    """:func:`select_lines` and where the selection starts in ``text``: the selected text is
    ``text[offset:offset + len(selection.text)]``."""
    _check_arguments(start_line, line_count)
    size = len(text.encode("utf-8")) if file_bytes is None else file_bytes
    plan = _Plan.of(start_line, line_count, text.count("\n") + 1 if text else 0,
                    size <= MAX_READ_BYTES and len(text) <= MAX_READ_CHARS)
    start = _line_offset(text, start_line, "\n")
    # Every line that fits the budget lies within its first ``budget + 1`` characters.
    budget = plan.budget
    window = text[start:] if budget is None else text[start:start + budget + 1]
    return plan.select(window), start


def select_encoded_lines(data: bytes, chars: int, lines: int, start_line: int = 1,
                         line_count: int | None = None) -> LineSelection:
    """:func:`select_lines` of ``data.decode("utf-8")``, for ``data`` known to be UTF-8 of
    ``chars`` characters in ``lines`` lines; the first line is found on the bytes (a
    ``\\n`` byte is only ever a line break in UTF-8) and only the window is decoded."""
    _check_arguments(start_line, line_count)
    plan = _Plan.of(start_line, line_count, lines,
                    len(data) <= MAX_READ_BYTES and chars <= MAX_READ_CHARS)
    start = _line_offset(data, start_line, b"\n")
    if plan.budget is None:
        return plan.select(data[start:].decode("utf-8"))
    # ``budget + 1`` characters lie within as many times 4 bytes; a character the cut splits
    # is left out (not final: an incomplete sequence at the end is no error).
    reach = _MAX_CHAR_BYTES * (plan.budget + 1)
    window, _ = codecs.utf_8_decode(data[start:start + reach], "strict", False)
    return plan.select(window[:plan.budget + 1])


def _check_arguments(start_line: int, line_count: int | None) -> None:
    if start_line < 1:
        raise LineRangeError("start_line must be >= 1")
    if line_count is not None and line_count < 1:
        raise LineRangeError("line_count must be >= 1")


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a selection may take: its first line, the file's line count, the character
    budget (``None``: unlimited) and how many lines are wanted."""

    start_line: int
    total: int
    budget: int | None
    wanted: int

    @classmethod
    def of(cls, start_line: int, line_count: int | None, total: int, small: bool) -> _Plan:
        """The plan for a file of ``total`` lines (``small``: within the byte and character
        limits); refuses a start beyond the file."""
        if start_line > max(total, 1):
            raise LineRangeError(f"start_line {start_line} is beyond total lines {total}")
        fits = small and total <= MAX_READ_LINES
        budget = None if start_line == 1 and line_count is None and fits else MAX_READ_CHARS
        requested_end = total if line_count is None else min(start_line + line_count - 1, total)
        wanted = max(0, min(requested_end, start_line + MAX_READ_LINES - 1) - start_line + 1)
        return cls(start_line, total, budget, wanted)

    def select(self, window: str) -> LineSelection:
        """The selection from ``window``: the text from the first line on (all of it when the
        budget is unlimited, else at least ``budget + 1`` characters or up to the end)."""
        start_line, total, budget, wanted = self.start_line, self.total, self.budget, self.wanted
        pieces = window.split("\n", wanted)
        # Where the first ``wanted`` lines end (before the separator that follows them).
        reach = (max(0, len(window) - len(pieces[wanted]) - 1) if len(pieces) > wanted
                 else len(window))
        lines = pieces[:wanted]
        if budget is None or reach <= budget:  # every wanted line fits the budget
            selected, text = lines, window[:reach]
        else:  # lines whose joined length (with separators) stays within the budget
            joined = list(map(add, accumulate(map(len, lines)), range(1, len(lines) + 1)))
            selected = lines[:bisect_right(joined, budget + 1)]
            text = window[:joined[len(selected) - 1] - 1] if selected else ""
        line_truncated = not selected and bool(lines)
        if line_truncated:
            assert budget is not None
            text = lines[0][:budget]
            selected = [text]
        end = start_line + len(selected) - 1
        return LineSelection(
            start_line=start_line,
            end_line=end,
            total_lines=total,
            lines=selected,
            line_truncated=line_truncated,
            truncated=line_truncated or start_line > 1 or end < total,
            next_start_line=end + 1 if end < total else None,
            text=text,
        )


def _line_offset(text: AnyStr, line: int, newline: AnyStr) -> int:
    """Where line ``line`` (from 1) of ``text`` starts."""
    offset = 0
    for _ in range(line - 1):
        offset = text.index(newline, offset) + 1
    return offset
