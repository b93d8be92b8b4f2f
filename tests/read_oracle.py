"""``workspace.read_file``'s result as it was built before its views were cached and its
window measured in the same pass as the file, kept verbatim (but for the word count, the
frozen :func:`text_oracle.old_count_words`) as the oracle the tool must agree with: the
tests (``tests/workspace/tools/test_tools_read_views.py``) compare every content,
structured payload and observed text. It is frozen on purpose: it must not share the
implementation's selection, or a mistake there would agree with itself."""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from itertools import accumulate
from operator import add
from typing import Any

from text_oracle import old_count_words

MAX_READ_BYTES = 256 * 1024
MAX_READ_LINES = 1200
MAX_READ_CHARS = 80_000


class OldLineRangeError(ValueError):
    """A refused ``start_line``/``line_count``."""


def _old_select(text: str, start_line: int, line_count: int | None, size: int
                ) -> tuple[list[str], int, int, int, bool, bool, int | None]:
    """``(lines, start, end, total, line_truncated, truncated, next_start_line)``."""
    if start_line < 1:
        raise OldLineRangeError("start_line must be >= 1")
    if line_count is not None and line_count < 1:
        raise OldLineRangeError("line_count must be >= 1")
    total = text.count("\n") + 1 if text else 0
    small = size <= MAX_READ_BYTES and len(text) <= MAX_READ_CHARS
    if start_line > max(total, 1):
        raise OldLineRangeError(f"start_line {start_line} is beyond total lines {total}")
    fits = small and total <= MAX_READ_LINES
    budget = None if start_line == 1 and line_count is None and fits else MAX_READ_CHARS
    requested_end = total if line_count is None else min(start_line + line_count - 1, total)
    wanted = max(0, min(requested_end, start_line + MAX_READ_LINES - 1) - start_line + 1)
    offset = 0
    for _ in range(start_line - 1):
        offset = text.index("\n", offset) + 1
    window = text[offset:] if budget is None else text[offset:offset + budget + 1]
    lines = window.split("\n", wanted)[:wanted]
    if budget is None:
        fitting = len(lines)
    else:
        joined = list(map(add, accumulate(map(len, lines)), range(1, len(lines) + 1)))
        fitting = bisect_right(joined, budget + 1)
    selected = lines[:fitting]
    line_truncated = not selected and bool(lines)
    if line_truncated:
        assert budget is not None
        selected = [lines[0][:budget]]
    end = start_line + len(selected) - 1
    return (selected, start_line, end, total, line_truncated,
            line_truncated or start_line > 1 or end < total, end + 1 if end < total else None)


def _old_number_lines(first: int, lines: list[str]) -> str:
    if not lines:
        return ""
    width = len(str(first + len(lines) - 1))
    return "\n".join(f"{n:>{width}} | {line}" for n, line in enumerate(lines, first))


def old_read(path: str, data: bytes, start_line: int = 1, line_count: int | None = None
             ) -> tuple[str, dict[str, Any], str | None] | str:
    """``(content, structured, observed)`` of a read of ``data`` at ``path`` (``observed``:
    the text a partial read records, ``None`` for a full read), or the error code."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "workspace.file_not_text"
    try:
        lines, start, end, total, line_truncated, truncated, next_start = _old_select(
            text, start_line, line_count, len(data))
    except OldLineRangeError:
        return "workspace.invalid_line_range"
    selected = "\n".join(lines)
    digest = hashlib.sha256(data).hexdigest()
    chars, words = len(selected), old_count_words(selected)
    total_chars, total_words = len(text), old_count_words(text)
    header = (f"{path} lines {start}-{end} of {total}, chars {chars} of {total_chars}, words "
              f"{words} of {total_words}")
    if truncated:
        header += " (preview)"
    content = header + "\n" + _old_number_lines(start, lines)
    if next_start is not None:
        content += (f"\n\nPreview ended before the file. Continue with start_line="
                    f"{next_start} and line_count={len(lines)}.")
    if line_truncated:
        content += (f"\n\nLine {start} is longer than this reader can return "
                    "safely, so only its beginning is shown. Search this file for specific "
                    "text if you need a later section.")
    structured: dict[str, Any] = {
        "path": path, "sha256": digest, "startLine": start, "endLine": end,
        "totalLines": total, "chars": chars, "totalChars": total_chars, "words": words,
        "totalWords": total_words, "lineTruncated": line_truncated, "truncated": truncated,
        "fullRead": not truncated,
    }
    if next_start is not None:
        structured["nextStartLine"] = next_start
    return content, structured, None if not truncated else selected
