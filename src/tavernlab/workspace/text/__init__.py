"""Text measures and the line window of ``workspace.read_file``: the characters, words and
lines the model-facing tools count and select."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tavernlab.lazy import lazy_names

if TYPE_CHECKING:
    from tavernlab.workspace.text._selection import (
        LineRangeError,
        LineSelection,
        select_encoded_lines,
        select_lines,
        select_lines_at,
    )
    from tavernlab.workspace.text._text import (
        SearchHit,
        TextMeasures,
        count_words,
        count_words_around,
        number_lines,
        query_tokens,
        search_text,
        text_metrics,
    )

__all__ = [
    "LineRangeError",
    "LineSelection",
    "SearchHit",
    "TextMeasures",
    "count_words",
    "count_words_around",
    "number_lines",
    "query_tokens",
    "search_text",
    "select_encoded_lines",
    "select_lines",
    "select_lines_at",
    "text_metrics",
]

_HOMES = {
    "LineRangeError": "tavernlab.workspace.text._selection",
    "LineSelection": "tavernlab.workspace.text._selection",
    "SearchHit": "tavernlab.workspace.text._text",
    "TextMeasures": "tavernlab.workspace.text._text",
    "count_words": "tavernlab.workspace.text._text",
    "count_words_around": "tavernlab.workspace.text._text",
    "number_lines": "tavernlab.workspace.text._text",
    "query_tokens": "tavernlab.workspace.text._text",
    "search_text": "tavernlab.workspace.text._text",
    "select_encoded_lines": "tavernlab.workspace.text._selection",
    "select_lines": "tavernlab.workspace.text._selection",
    "select_lines_at": "tavernlab.workspace.text._selection",
    "text_metrics": "tavernlab.workspace.text._text",
}


__getattr__ = lazy_names(__name__, _HOMES)
