"""The word count as it was before windowing, kept verbatim as the
oracle the windowed :func:`tavernlab.workspace.text.count_words` must agree with: the tests
(``tests/workspace/text/test_text_metrics.py``) check it, ``bench/text_metrics.py`` times it. It is
frozen on purpose: it must not share the implementation's class table, or a mistake there
would agree with itself."""

from __future__ import annotations

import re

CJK_CLASS = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # Hangul Jamo extended A
    "\uac00-\ud7af"  # Hangul syllables
    "\ud7b0-\ud7ff"  # Hangul Jamo extended B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width katakana
    "\uffa0-\uffdc"  # half-width hangul
    "\U00020000-\U0003134f"  # CJK extensions B-H
)
#: One match per CJK code point or run of other alphanumerics.
WORD = re.compile(f"[{CJK_CLASS}]|(?:(?![{CJK_CLASS}])[^\\W_])+")


def old_count_words(text: str) -> int:
    """The old ``count_words``: one match per CJK code point or run of other alphanumerics."""
    return sum(1 for _ in WORD.finditer(text))
