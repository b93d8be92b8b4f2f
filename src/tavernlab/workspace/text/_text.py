"""Text measures and selections used by the model-facing tools (docs/workspace.md).

* :func:`count_words` / :func:`count_chars` / :func:`text_metrics` - upstream's word and
  character metrics, in linear time and constant extra memory; :func:`count_words_around` -
  the words of a text and of a window of it in one pass; :class:`TextMeasures` - the
  metrics, once per content.
* :func:`query_tokens` / :func:`search_text` - the plain-text token search of
  ``workspace.search_files``.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

# CJK ideographs, kana and hangul: each code point counts as one word.
_CJK_CLASS = (
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
# The other word characters ("run characters"): alphanumeric (``[^\W_]`` is exactly
# ``str.isalnum``) and not CJK. Each pattern below is one character class, repeated at most as
# ``[X][X]*``: ``re`` counts such a repeat without keeping backtracking state, so no pattern
# needs memory in proportion to a run, and a pattern that opens with the class (unlike
# ``[X]+``) lets ``re`` skip ahead to its first character in C.
_ALNUM = re.compile(r"[^\W_]")


class _WidePatterns:
    """The patterns that name the CJK ranges. Compiling them costs tens of milliseconds, so
    they are compiled when a text with a character past Latin-1 is first measured (ASCII and
    Latin-1 text never needs them)."""

    def __init__(self) -> None:
        self.run_char = re.compile(f"[^\\W_{_CJK_CLASS}]")
        self.cjk_run = re.compile(f"[{_CJK_CLASS}][{_CJK_CLASS}]*")
        self.not_run = re.compile(f"[\\W_{_CJK_CLASS}]")
        self.wide_run = re.compile(
            f"[^\\W_\\x00-\\x7f{_CJK_CLASS}][^\\W_\\x00-\\x7f{_CJK_CLASS}]*")
        self.wide_other_run = re.compile(r"[^\w\x00-\x7f][^\w\x00-\x7f]*")


@cache
def _wide() -> _WidePatterns:
    return _WidePatterns()


def _starts_run(text: str) -> bool:
    """Whether ``text`` starts with a run character (alphanumeric and not CJK)."""
    first = text[:1]
    if first.isascii():
        return first.isalnum()
    return _wide().run_char.match(first) is not None


_ASCII_BYTES = bytes(range(128))
# ``bytes.translate`` tables: a byte of a run character becomes 1, any other byte 0.
_LATIN1_MARKS = bytes(int(_ALNUM.match(chr(code)) is not None) for code in range(256))
_ASCII_MARKS = _LATIN1_MARKS[:128] + bytes(128)
_UTF8_MARKS = _ASCII_MARKS[:128] + b"\x01" * 128  # every byte of a wide character: 1
# A window is dense in wide run characters when 1/_DENSE_SHARE of it or more is wide and not
# CJK; either way the count is exact, this only picks the cheaper rewrite.
_DENSE_SHARE = 4
# Texts are measured in windows of this many characters, so the extra memory is bounded.
_WINDOW = 32 * 1024


def count_chars(text: str) -> int:
    """Number of Unicode scalar values."""
    return len(text)


def count_words(text: str) -> int:
    """Words as upstream counts them: each CJK ideograph, kana or hangul code point is one
    word; otherwise each maximal run of alphanumeric characters is one word.

    ``hello world`` -> 2, ``你好世界`` -> 4, ``foo-bar 42`` -> 3, ``abc中文`` -> 3.

    Runs in time linear in the text and in constant extra memory: the text is measured in
    windows of 32 Ki characters (see :func:`_window_words`), and a run cut by a window edge is
    counted once.
    """
    return _count_words(text, _WINDOW)


def text_metrics(text: str) -> tuple[int, int]:
    """``(chars, words)`` of ``text``: :func:`count_chars` and :func:`count_words` at once.

    The character count is ``len``, free for a ``str``, so this costs one word count; callers
    that report both metrics use it to walk the text once.
    """
    return len(text), _count_words(text, _WINDOW)


class Measures(NamedTuple):
    """What :class:`TextMeasures` knows of a text: characters, words and lines (as
    :func:`split_lines` counts them)."""

    chars: int
    words: int
    lines: int


class TextMeasures:
    """The :class:`Measures` of texts, computed once per content: cached by a key that
    names the content - the SHA-256 of the UTF-8 text (given when the caller already has
    it, as a read file's digest; computed otherwise) or another name the caller derives from
    one, such as a line window of a file with that digest.

    ``workspace.read_file`` reports the whole file's metrics and the selection's, in its
    header and in ``structured``: a full read measures the file once, and the tool keeps one
    bounded instance for the process, so reading an unchanged file again (or the same window
    of it) measures nothing. With ``limit`` the cache keeps that many most recently used
    contents (a few hundred bytes each); thread-safe.
    """

    def __init__(self, limit: int | None = None) -> None:
        self._known: OrderedDict[str, Measures] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def known(self, key: str) -> Measures | None:
        """The measures of the content ``key`` names, if it was measured lately."""
        with self._lock:
            known = self._known.get(key)
            if known is not None:
                self._known.move_to_end(key)
            return known

    def of(self, text: str, key: str | None = None) -> Measures:
        """The measures of ``text`` (whose content ``key`` names, when known)."""
        if key is None:
            key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        known = self.known(key)
        if known is not None:
            return known
        return self.remember(key, *text_metrics(text), text.count("\n") + 1 if text else 0)

    def remember(self, key: str, chars: int, words: int, lines: int) -> Measures:
        """Keep the measures of the content ``key`` names, measured by the caller (as
        :meth:`of` would measure it: ``lines`` counts an empty text as none)."""
        known = Measures(chars, words, lines)
        with self._lock:
            self._known[key] = known
            if self._limit is not None and len(self._known) > self._limit:
                self._known.popitem(last=False)
        return known


def count_words_around(text: str, start: int, end: int) -> tuple[int, int]:
    """``(count_words(text), count_words(text[start:end]))``, each character counted once.

    ``workspace.read_file`` reports the words of a file and of the window it shows: the
    window and the text on either side of it are counted apart, and a run that crosses
    either cut (counted on both sides) is taken back once. ``0 <= start <= end <= len(text)``.
    """
    inside = _count_words(text, _WINDOW, start, end)
    words = _count_words(text, _WINDOW, 0, start) + inside + _count_words(text, _WINDOW, end)
    for cut in {start, end}:  # one cut when the window is empty
        if 0 < cut < len(text) and _starts_run(text[cut - 1]) and _starts_run(text[cut]):
            words -= 1
    return words, inside


def _count_words(text: str, window: int, start: int = 0, end: int | None = None) -> int:
    """:func:`count_words` of ``text[start:end]`` with ``window`` characters per window
    (tests use tiny windows), the span cut out one window at a time.

    A window's words are counted on their own; where a run of non-CJK alphanumerics crosses
    the edge between two windows it was counted in both, so one is taken back.
    """
    end = len(text) if end is None else end
    words = 0
    carried = False  # the previous window ended with a run character
    for offset in range(start, end, window):
        part = text[offset:min(offset + window, end)]  # the text itself when it is all of it
        words += _window_words(part)
        if carried and _starts_run(part):
            words -= 1
        carried = _starts_run(part[-1])
    return words


def _window_words(part: str) -> int:
    """Words of ``part`` = its CJK code points + its runs of run characters.

    Runs are counted on bytes: each character becomes bytes marked 1 if it is a run
    character, 0 if not, and :func:`_runs` counts where a marked byte follows an unmarked
    one, in C. ASCII and Latin-1 text encodes to such bytes directly. In wider text the CJK count
    and the kinds of wide character present are read off the non-ASCII characters alone, cut
    out of the UTF-8 encoding by one ``bytes.translate``, so no regular expression scans the
    ASCII part of English/CJK text. Then the whole window is marked: all wide characters as
    run characters when they all are (Greek or Cyrillic with ASCII punctuation), all as
    separators when none is (CJK and punctuation), and otherwise by :func:`_mixed_wide_runs`.
    """
    if part.isascii():
        return _runs(part.encode("ascii"), _ASCII_MARKS)
    try:
        return _runs(part.encode("latin-1"), _LATIN1_MARKS)
    except UnicodeEncodeError:
        pass
    utf8 = part.encode("utf-8", "surrogatepass")
    wide = utf8.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")
    patterns = _wide()
    if patterns.not_run.search(wide) is None:  # every wide character is a run character
        return _runs(utf8, _UTF8_MARKS)
    other = patterns.cjk_run.sub("", wide)  # the wide characters that are not CJK
    cjk = len(wide) - len(other)
    if _ALNUM.search(other) is None:  # no wide run character: every wide byte separates
        return cjk + _runs(utf8, _ASCII_MARKS)
    return cjk + _mixed_wide_runs(part, other, cjk)


def _mixed_wide_runs(part: str, other: str, cjk: int) -> int:
    """Runs of a window whose wide characters are partly run characters (``other``: its wide
    characters that are not CJK; ``cjk``: how many are).

    Regular-expression rewriting costs one match per run it rewrites, so rewrite the rarer
    kind: when wide run characters are few (accents in English), each run of them becomes
    ``a`` and the window encodes as ASCII with ``?`` for the rest; when they are many (Greek
    or Cyrillic prose), the runs of CJK and of wide non-alphanumerics become spaces and every
    byte of the remaining wide characters is marked as a run character.
    """
    patterns = _wide()
    if len(other) * _DENSE_SHARE < len(part):
        return _runs(patterns.wide_run.sub("a", part).encode("ascii", "replace"), _ASCII_MARKS)
    if cjk:
        part = patterns.cjk_run.sub(" ", part)
    if not cjk or patterns.not_run.search(other) is not None:  # without CJK, the wide
        part = patterns.wide_other_run.sub(" ", part)  # separator found in ``wide`` is in ``other``
    return _runs(part.encode("utf-8", "surrogatepass"), _UTF8_MARKS)


def _runs(data: bytes, marks: bytes) -> int:
    """Runs of run characters in ``data``, ``marks`` the table that marks their bytes 1.

    A run starts at each marked byte whose predecessor is not marked. The marks read as one
    integer (byte ``i`` its ``i``-th byte) and shifted by one byte hold each byte's
    predecessor, so the starts are the bits of the integer not set in its shift: three
    big-integer operations and a bit count, all in C (faster than ``bytes.count`` of a
    two-byte pattern as frequent as a word start).
    """
    marked = int.from_bytes(data.translate(marks), "little")
    return (marked ^ (marked & (marked << 8))).bit_count()


def split_lines(text: str) -> list[str]:
    """Lines are the text split on ``\\n``: an empty text has none; a trailing newline yields a
    final empty line."""
    return [] if text == "" else text.split("\n")


#: Row openings up to this many digits come from :func:`_openings` (9,999 strings at most).
_CACHED_WIDTH = 4
_OPENINGS: dict[int, list[str]] = {}


def _openings(width: int) -> list[str]:
    """``"\n" + str(n).rjust(width) + " | "`` (a line break, the number and the separator
    that open row ``n`` after the first) for every ``n`` below ``10 ** width``, made once per
    width (formatting the numbers was most of numbering a long preview)."""
    column = _OPENINGS.get(width)
    if column is None:
        column = _OPENINGS[width] = [f"\n{n:>{width}} | " for n in range(10 ** width)]
    return column


def number_lines(first: int, lines: Sequence[str]) -> str:
    """``"{n:>w} | {line}"`` rows numbered from ``first``, ``w`` the digit count of the last
    number shown.

    Built with one ``join`` over a precomputed list (each row's opening - line break, number
    and separator - then its line) rather than one format per row: a 1200-line preview
    costs a fifth.
    """
    count = len(lines)
    if not count:
        return ""
    last = first + count - 1
    width = len(str(last))
    parts = list(lines) * 2
    if width <= _CACHED_WIDTH and first >= 0:
        parts[0::2] = _openings(width)[first:last + 1]
    else:
        parts[0::2] = [f"\n{number:>{width}} | " for number in range(first, last + 1)]
    parts[1::2] = lines
    parts[0] = parts[0][1:]  # no line break before the first row
    return "".join(parts)


# --- search -------------------------------------------------------------------------------

MAX_QUERY_TOKENS = 64


def query_tokens(query: str) -> list[str]:
    """Lowercase; every character that is not alphanumeric or ``_`` becomes a space; split on
    whitespace; de-duplicate (first occurrence wins); at most 64 tokens."""
    lowered = query.lower()
    cleaned = "".join(ch if ch.isalnum() or ch == "_" else " " for ch in lowered)
    tokens: list[str] = []
    for token in cleaned.split():
        if token not in tokens:
            tokens.append(token)
            if len(tokens) == MAX_QUERY_TOKENS:
                break
    return tokens


def token_weight(token: str) -> int:
    """``clamp(len_chars(token), 1, 8)``."""
    return max(1, min(len(token), 8))


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One matched window of a file."""

    path: str
    score: float
    start_line: int
    end_line: int
    snippet: str
    line: int


def search_text(path: str, text: str, tokens: list[str], *, limit: int, context_lines: int
                ) -> tuple[list[SearchHit], bool]:
    """Score each line (sum of the weights of tokens it contains as lowercase substrings over
    the total weight), then pick windows line +/- ``context_lines`` by score desc, line asc,
    dropping windows that overlap one already chosen, up to ``limit``.

    Returns the hits and whether more non-overlapping hits existed beyond ``limit``.
    """
    # Lowercasing the whole text equals lowercasing each line (a line break ends a word for
    # the context-sensitive final sigma too), and a token never contains a line break, so a
    # token absent from the whole text is absent from every line: most files end here.
    lowered_text = text.lower()
    present = [(t, token_weight(t)) for t in tokens if t in lowered_text]
    if not present:
        return [], False
    total_weight = sum(token_weight(t) for t in tokens)
    lines = split_lines(text)
    candidates: list[tuple[float, int]] = []
    for index, lowered in enumerate(lowered_text.split("\n")):
        found = sum(weight for token, weight in present if token in lowered)
        if found:
            candidates.append((found / total_weight, index + 1))
    candidates.sort(key=lambda c: (-c[0], c[1]))
    chosen: list[SearchHit] = []
    for score, number in candidates:
        start = max(1, number - context_lines)
        end = min(len(lines), number + context_lines)
        if any(start <= hit.end_line and hit.start_line <= end for hit in chosen):
            continue
        if len(chosen) == limit:
            return chosen, True
        snippet = number_lines(start, lines[start - 1:end])
        chosen.append(SearchHit(path, score, start, end, snippet, number))
    return chosen, False
