"""Benchmark: the workspace word count before and after windowing (not a test).

Prints, measured in one run:

1. the median wall time (ms) of counting the words of 64 Ki and 1 Mi characters of mixed
   English/CJK text (with kana, hangul, code and full-width punctuation) and of ASCII prose,
   old vs new, and the ratio (target: new >= 5x faster). Cyrillic prose, a slow kind of text
   for the new count (every word is a run of wide alphanumerics), is shown for contrast;
2. the peak memory traced (tracemalloc) while counting one 5,000,000-character word, old vs
   new (the old pattern keeps backtracking state for every character of a run).

The old implementation is the tests' frozen oracle (``tests/text_oracle.py``). Both must
agree on every text measured.

Usage: ``.venv/bin/python bench/text_metrics.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from tavernlab.workspace.text import count_words

# the frozen old implementation, shared with the tests that use it as their oracle
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from text_oracle import old_count_words

# --- corpora ---------------------------------------------------------------------------------

ENGLISH = [
    "the", "quick", "brown", "fox", "reads", "agent", "workspace", "notes", "while", "42",
    "tool", "calls", "wait", "for", "a", "reply", "and", "every", "file", "is", "checked",
]
CYRILLIC = [  # "word", "text", "day", "world", "fir", "pike"
    "\u0441\u043b\u043e\u0432\u043e", "\u0442\u0435\u043a\u0441\u0442",
    "\u0434\u0435\u043d\u044c", "\u043c\u0438\u0440", "\u0451\u043b\u043a\u0430",
    "\u0449\u0443\u043a\u0430",
]


def sentence(rng: random.Random, words: list[str]) -> str:
    """A capitalised sentence of 6-16 words with a comma, a full stop and a newline."""
    picked = rng.choices(words, k=rng.randint(6, 16))
    picked[len(picked) // 2] += ","
    return " ".join(picked).capitalize() + ".\n"


def mixed_text(size: int, seed: int = 1) -> str:
    """English sentences, Chinese with full-width punctuation, kana, hangul and code."""
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        roll = rng.random()
        if roll < 0.45:
            part = sentence(rng, ENGLISH)
        elif roll < 0.8:
            part = "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(rng.randint(4, 20)))
            part += rng.choice("\uff0c\u3002\uff01\uff1f\u3001")
        elif roll < 0.88:
            part = "".join(chr(rng.randint(0x3041, 0x30FA)) for _ in range(rng.randint(2, 9)))
            part += "\u3002"
        elif roll < 0.94:
            part = " ".join("".join(chr(rng.randint(0xAC00, 0xD7A3)) for _ in range(3))
                            for _ in range(4)) + ". "
        else:
            name, value = rng.choice(ENGLISH), rng.random()
            part = f"run_{rng.randint(0, 999)} = fetch(\"{name}\", {value:.3f})\n"
        parts.append(part)
        length += len(part)
    return "".join(parts)[:size]


def prose(size: int, words: list[str], seed: int = 2) -> str:
    """Sentences drawn from ``words``, cut to ``size`` characters."""
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        parts.append(sentence(rng, words))
        length += len(parts[-1])
    return "".join(parts)[:size]


# --- measurement -----------------------------------------------------------------------------


def median_ms(count: Callable[[str], int], text: str, repeats: int) -> float:
    """Median wall time of ``count(text)`` in milliseconds, after one warm-up call."""
    count(text)
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        count(text)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def peak_mib(count: Callable[[str], int], text: str) -> float:
    """Peak traced allocation (MiB) while counting the words of an already built ``text``."""
    tracemalloc.start()
    try:
        count(text)
        return tracemalloc.get_traced_memory()[1] / (1024 * 1024)
    finally:
        tracemalloc.stop()


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per case (default 7)")
    args = parser.parse_args()
    corpora: dict[str, Callable[[int], str]] = {
        "mixed English/CJK": mixed_text,
        "ASCII prose": lambda size: prose(size, ENGLISH),
        "Cyrillic prose": lambda size: prose(size, CYRILLIC),
    }
    print("count_words, median ms over", args.repeats, "calls")
    print(f"  {'text':<20} {'chars':>9} {'words':>8} {'old':>9} {'new':>8}  ratio")
    for name, make in corpora.items():
        for size in (64 * 1024, 1024 * 1024):
            text = make(size)
            words = count_words(text)
            if words != old_count_words(text):
                raise SystemExit(f"old and new disagree on {name} ({size} chars)")
            old = median_ms(old_count_words, text, args.repeats)
            new = median_ms(count_words, text, args.repeats)
            print(f"  {name:<20} {size:>9,} {words:>8,} {old:>9.2f} {new:>8.2f}  "
                  f"{old / new:5.1f}x")
    word = "a" * 5_000_000
    print("one 5,000,000-character word, peak traced memory (MiB)")
    print(f"  old {peak_mib(old_count_words, word):9.1f}")
    print(f"  new {peak_mib(count_words, word):9.3f}")


if __name__ == "__main__":
    main()
