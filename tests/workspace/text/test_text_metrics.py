"""The word metric against the implementation it replaced.

``old_count_words`` (``tests/text_oracle.py``) is the old regular expression, kept verbatim:
the windowed :func:`count_words` must agree with it on every input, which the spec examples,
a hypothesis property over hostile Unicode, and an exhaustive pass over every code point
check. The memory tests pin the constant-memory promise that the old pattern broke on one long word.
"""

from __future__ import annotations

import random
import tracemalloc
from bisect import bisect_left
from itertools import compress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from text_oracle import WORD as ORACLE_WORD
from text_oracle import old_count_words

from tavernlab.workspace.text import _text as text_module
from tavernlab.workspace.text import count_words, count_words_around, text_metrics
from tavernlab.workspace.text._text import count_chars

# --- examples -------------------------------------------------------------------------------

SNIPPET = "1 | red\n2 | silver moon rising\n3 | blue"


@pytest.mark.parametrize(("text", "chars", "words"), [
    ("hello world", 11, 2),     # Acceptance 7.2.1
    ("你好世界", 4, 4),           # 7.2.2
    ("foo-bar 42", 10, 3),      # 7.2.3
    ("abc中文", 5, 3),           # 7.2.4
    ("h\u00e9llo", 5, 1),       # 7.2.5
    (SNIPPET, 39, 8),           # 7.4.4: the search hit's snippet, line prefixes included
    ("", 0, 0),
    ("snake_case", 10, 2),
    ("e\u0301", 2, 1),          # a combining mark is not alphanumeric: it ends a run
    ("\u00bd\u00b2x", 3, 1),    # numeric Latin-1 characters are alphanumeric
    ("\U00020000\U00020001", 2, 2),   # CJK extension B, astral
    ("\U0001d400\U0001d401", 2, 1),   # mathematical letters, astral and not CJK
    ("\ud840\udc00", 2, 0),     # two lone surrogates are two characters, not an ideograph
    ("a\U0001f600b", 3, 2),     # an emoji separates
    ("\u3005\u4eba", 2, 2),     # the iteration mark is alphanumeric but not in the CJK ranges
])
def test_examples(text: str, chars: int, words: int) -> None:
    assert old_count_words(text) == words
    assert (count_chars(text), count_words(text)) == (chars, words)
    assert text_metrics(text) == (chars, words)


# --- property: agreement on hostile Unicode -------------------------------------------------

_CJK_EDGES = [code for low, high in [
    (0x1100, 0x11ff), (0x2e80, 0x2fdf), (0x3040, 0x30ff), (0x3130, 0x318f), (0x31f0, 0x31ff),
    (0x3400, 0x4dbf), (0x4e00, 0x9fff), (0xa960, 0xa97f), (0xac00, 0xd7ff), (0xf900, 0xfaff),
    (0xff66, 0xffdc), (0x20000, 0x3134f),
] for code in (low - 1, low, high, high + 1)]


def _span(low: int, high: int) -> st.SearchStrategy[str]:
    return st.characters(min_codepoint=low, max_codepoint=high, codec="utf-8")


_CHARACTER = st.one_of(
    st.sampled_from("aZ09_ -.,;!?\n\t'\"()"),
    _span(0x21, 0x7e),                      # ASCII letters, digits, punctuation
    _span(0xa0, 0x24f),                     # Latin-1 and Latin extended (incl. numerics)
    _span(0x300, 0x36f),                    # combining marks
    _span(0x370, 0x4ff),                    # Greek, Cyrillic
    _span(0x660, 0x669),                    # Arabic-Indic digits
    _span(0x1100, 0x11ff),                  # Hangul Jamo
    _span(0x2000, 0x2bff),                  # punctuation, symbols, arrows, superscripts
    _span(0x2e80, 0x33ff),                  # radicals, CJK punctuation, kana, bopomofo
    _span(0x3400, 0x9fff),                  # CJK ideographs
    _span(0xa960, 0xa97f),
    _span(0xac00, 0xd7ff),                  # Hangul syllables and Jamo
    _span(0xf900, 0xfaff),
    _span(0xff00, 0xffef),                  # full-width and half-width forms
    _span(0x1d400, 0x1d7ff),                # mathematical alphanumerics
    _span(0x1f000, 0x1faff),                # emoji, enclosed alphanumerics
    _span(0x20000, 0x323af),                # CJK extensions B-H and just beyond
    st.sampled_from([chr(code) for code in _CJK_EDGES]),
    st.characters(codec="utf-8"),           # anything but a lone surrogate
)
_TEXT = st.text(_CHARACTER, max_size=120)


@settings(max_examples=400, deadline=None)
@given(_TEXT, st.integers(min_value=1, max_value=9), st.sampled_from([0, 10**9]))
def test_agrees_with_the_oracle(text: str, window: int, share: int) -> None:
    """Any text, whole and cut into tiny windows (runs crossing window edges count once), with
    wide run characters taken as few or as many."""
    words = old_count_words(text)
    assert count_words(text) == words
    assert text_metrics(text) == (len(text), words)
    assert text_module._count_words(text, window) == words
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text_module, "_DENSE_SHARE", share)
        assert text_module._count_words(text, window + 20) == words


@settings(max_examples=25, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=6), st.sampled_from(["", " ", "a", "\u4e2d"]))
def test_agrees_across_real_windows(pieces: list[str], glue: str) -> None:
    """Texts longer than a real window, so the production window size is crossed too."""
    text = glue.join(pieces)
    text = text * (text_module._WINDOW * 2 // max(len(text), 1) + 1)
    assert count_words(text) == old_count_words(text)


def _mixed(size: int, seed: int = 7) -> str:
    """English sentences, Chinese with full-width punctuation, kana, hangul, code, emoji."""
    rng = random.Random(seed)
    english = ["the", "quick", "brown", "fox", "reads", "agent", "notes", "at", "42"]
    parts: list[str] = []
    length = 0
    while length < size:
        roll = rng.random()
        if roll < 0.45:
            part = " ".join(rng.choices(english, k=rng.randint(4, 14))) + ". "
        elif roll < 0.8:
            part = "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(rng.randint(4, 20)))
            part += rng.choice("\uff0c\u3002\uff01\uff1f\u3001")
        elif roll < 0.88:
            part = "".join(chr(rng.randint(0x3041, 0x30FA)) for _ in range(rng.randint(2, 9)))
        elif roll < 0.94:
            part = " ".join("".join(chr(rng.randint(0xAC00, 0xD7A3)) for _ in range(3))
                            for _ in range(3)) + ". "
        else:
            part = f"var_{rng.randint(0, 999)} = {rng.random():.3f}; \U0001f600 h\u00e9 \u0436\n"
        parts.append(part)
        length += len(part)
    return "".join(parts)[:size]


@pytest.mark.parametrize("window", [1, 2, 5, 4096, text_module._WINDOW])
def test_mixed_corpus(window: int) -> None:
    text = _mixed(100_000)
    assert text_module._count_words(text, window) == old_count_words(text)


@settings(max_examples=400, deadline=None)
@given(st.text(st.sampled_from("\n a_4\r\u00e9\u4e2d\uac00\u0436\U0001f600\U00020000\u2028"),
               max_size=80), st.data())
def test_words_around_a_window_agree_with_the_oracle(text: str, data: st.DataObject) -> None:
    """The file's words and the window's, counted in one pass, are the oracle's."""
    start = data.draw(st.integers(min_value=0, max_value=len(text)))
    end = data.draw(st.integers(min_value=start, max_value=len(text)))
    assert count_words_around(text, start, end) == (old_count_words(text),
                                                    old_count_words(text[start:end]))


# --- exhaustive: every code point, alone and next to an ``a`` -------------------------------


def _oracle_per_segment(probe: str, width: int) -> bytes:
    """The oracle's word count of each ``width``-character segment of ``probe``.

    The segments end in a space and no match crosses a space, so the count of matches that
    start in a segment is exactly the oracle's count for that segment on its own.
    """
    counts = bytearray(len(probe) // width)
    for match in ORACLE_WORD.finditer(probe):
        counts[match.start() // width] += 1
    return bytes(counts)


_GROUP = 1000  # segments between two contexts: far fewer characters than a window holds


def _probe(chars: str, prefix: str, suffix: str, context: str = "") -> str:
    """``prefix + c + suffix`` for each character ``c``, joined by spaces (built in C), with
    ``context`` after every 1000 segments, so that every window of the count has one."""
    between = suffix + " " + prefix
    return " ".join(prefix + between.join(chars[start:start + _GROUP]) + suffix + context
                    for start in range(0, len(chars), _GROUP))


def _expected(chars: str, each: int, extra: int) -> int:
    """The words of a :func:`_probe`: ``each`` per segment, ``extra`` per context."""
    return each * len(chars) + extra * -(-len(chars) // _GROUP)


def _oracle_classes() -> dict[tuple[int, int, int], str]:
    """Every code point (surrogates too), grouped by the oracle's counts for ``c``, ``ac``
    and ``ca``."""
    every = "".join(map(chr, range(0x110000)))
    alone = _oracle_per_segment(_probe(every, "", "") + " ", 2)
    after = _oracle_per_segment(_probe(every, "a", "") + " ", 3)
    before = _oracle_per_segment(_probe(every, "", "a") + " ", 3)
    # one byte per code point: alone + 4 * after + 16 * before (no lane overflows)
    lanes = [int.from_bytes(counts, "little") for counts in (alone, after, before)]
    keys = (lanes[0] + 4 * lanes[1] + 16 * lanes[2]).to_bytes(len(every), "little")
    groups = {}
    for key in set(keys):
        mask = keys.translate(bytes(int(code == key) for code in range(256)))
        groups[(key % 4, key // 4 % 4, key // 16)] = "".join(compress(every, mask))
    return groups


def _first_disagreement(chars: str, prefix: str, suffix: str, context: tuple[str, int],
                        each: int) -> str:
    """Halve ``chars`` down to one code point whose probe segment is not counted ``each``."""
    while len(chars) > 1:
        half = chars[:len(chars) // 2]
        counted = count_words(_probe(half, prefix, suffix, context[0]))
        chars = half if counted != _expected(half, each, context[1]) else chars[len(half):]
    return f"U+{ord(chars):04X}"


def test_every_code_point_is_classified_like_the_oracle(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each code point, alone (``c``) and beside an ASCII letter (``ac``, ``ca``), counts as
    the oracle counts it, in every kind of window: ASCII, Latin-1, and wide with or without
    ideographs (``\u4e2d``) and wide alphanumerics (``\u03c9``), the last with wide run
    characters taken as few and as many.

    Segments joined by spaces are counted independently, and within one oracle class every
    segment has the same count, at an end of its possible range (0 or 1 for ``c``, 1 or 2
    for ``ac``/``ca``), so a total of ``count * segments`` means every segment agrees.
    """
    classes = _oracle_classes()
    # the oracle knows three kinds of character: other, run character, CJK
    assert set(classes) == {(0, 1, 1), (1, 1, 1), (1, 2, 2)}
    # what decides whether a run crosses a window edge (edges themselves: the property test)
    assert all(text_module._starts_run(char) for char in classes[(1, 1, 1)])
    assert not any(text_module._starts_run(char)
                   for char in classes[(0, 1, 1)] + classes[(1, 2, 2)])
    shapes = [("", ""), ("a", ""), ("", "a")]
    default = text_module._DENSE_SHARE
    contexts = [(("", 0), default), ((" \u4e2d", 1), default), ((" \u03c9", 1), default)] + [
        ((" \u4e2d\u03c9", 2), share) for share in (default, 0, 10**9)]
    for key, chars in classes.items():
        for low, high in [(0, 0x80), (0x80, 0x100), (0x100, 0x110000)]:
            block = chars[bisect_left(chars, chr(low)):bisect_left(chars, chr(high - 1)) + 1]
            for index, (prefix, suffix) in enumerate(shapes):
                for context, share in contexts:
                    monkeypatch.setattr(text_module, "_DENSE_SHARE", share)
                    counted = count_words(_probe(block, prefix, suffix, context[0]))
                    if counted != _expected(block, key[index], context[1]):
                        bad = _first_disagreement(block, prefix, suffix, context, key[index])
                        pytest.fail(f"{bad} in {prefix}<c>{suffix} is not counted {key[index]}"
                                    f" beside {context[0]!r} (dense share {share})")


# --- memory ---------------------------------------------------------------------------------

_MIB = 1024 * 1024


def _traced_count(text: str) -> tuple[int, int]:
    """The words of an already built ``text`` and the peak memory traced while counting."""
    tracemalloc.start()
    try:
        words = count_words(text)
        return words, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("unit", ["a", "\u00e9", "\u0436", "\u0436\U0001d400"])
def test_one_long_word_in_constant_memory(unit: str) -> None:
    """A 20,000,000-character single word (ASCII, Latin-1, Cyrillic, Cyrillic and astral
    letters): the old pattern needed about 60 bytes per character of it."""
    words, peak = _traced_count(unit * (20_000_000 // len(unit)))
    assert words == 1
    assert peak < 8 * _MIB


def test_long_ideograph_run_in_constant_memory() -> None:
    words, peak = _traced_count("\u4e2d" * 20_000_000)
    assert words == 20_000_000
    assert peak < 8 * _MIB


def test_mixed_text_in_constant_memory() -> None:
    """20 Mi characters of the mixed corpus (emoji make it a 4-byte-per-character string)."""
    chunk = _mixed(_MIB)
    joins = text_module._starts_run(chunk[-1]) and text_module._starts_run(chunk[0])
    words, peak = _traced_count(chunk * 20)
    assert words == 20 * old_count_words(chunk) - 19 * joins
    assert peak < 8 * _MIB


@pytest.mark.parametrize(("unit", "words"), [
    ("\u4e2d\uff0c", 300_000),       # ideographs and full-width commas
    ("z\u0436\U0001d400", 1),         # ASCII, Cyrillic and astral letters in one word
])
def test_a_regex_match_every_other_character_stays_small(unit: str, words: int) -> None:
    """The windows' worst case: the regular expressions match every other character."""
    counted, peak = _traced_count(unit * (600_000 // len(unit)))
    assert counted == words
    assert peak < 8 * _MIB


# --- the tools measure each content once, with the same results ---------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=30), st.integers(min_value=1, max_value=5),
       st.one_of(st.none(), st.integers(min_value=1, max_value=8)))
def test_read_file_metrics_agree_with_the_oracle(tmp_path_factory: pytest.TempPathFactory,
                                                 lines: list[str], start: int,
                                                 count: int | None) -> None:
    """``workspace.read_file`` reports the file's and the selection's metrics (header and
    ``structured``) through :class:`TextMeasures`, once per content: they equal the oracle's
    for full and partial reads of random Unicode text."""
    from tavernlab.host import Lab

    text = "\n".join(lines)
    run = Lab(tmp_path_factory.mktemp("lab")).start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "scratch/t.md", "content": text})
    args: dict[str, object] = {"path": "scratch/t.md", "start_line": min(start, len(lines))}
    if count is not None:
        args["line_count"] = count
    result = run.call_tool("workspace.read_file", args)
    assert not result.is_error, result.content
    data = result.structured
    first = int(data["startLine"])
    selected = "\n".join(text.split("\n")[first - 1:int(data["endLine"])])
    if data["lineTruncated"]:
        selected = selected[:int(data["chars"])]
    assert (data["totalChars"], data["totalWords"]) == (len(text), old_count_words(text))
    assert (data["chars"], data["words"]) == (len(selected), old_count_words(selected))
    assert result.content.splitlines()[0].split(" (preview)")[0].endswith(
        f"chars {data['chars']} of {data['totalChars']}, words {data['words']} of "
        f"{data['totalWords']}")
    written = run.call_tool("workspace.write_file", {"path": "scratch/t.md", "content": text,
                                                     "mode": "append"})
    assert written.structured["words"] == old_count_words(text + text)


def test_text_measures_count_each_content_once() -> None:
    measures = text_module.TextMeasures()
    calls: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text_module, "text_metrics",
                      lambda text: calls.append(text) or (len(text), count_words(text)))
        assert measures.of("hello world", "digest") == (11, 2, 1)
        assert measures.of("something else entirely", "digest") == (11, 2, 1)  # same digest
        assert measures.of("abc中文") == (5, 3, 1)
        assert measures.of("abc中文") == (5, 3, 1)
        assert measures.of("a\nb\n", "lines") == (4, 2, 3)
        assert measures.of("", "empty") == (0, 0, 0)
        assert measures.known("digest") == (11, 2, 1) and measures.known("other") is None
    assert calls == ["hello world", "abc中文", "a\nb\n", ""]
