"""The building blocks every view is made of: the one size formatter and the one table of
colours (shared by the text views, the notebook's widgets and their snapshots, and the static
run viewer), and the HTML pieces: escaping, folds, tables, badges, cards.

One rule runs through all of them: nothing is hidden. Text longer than :data:`FOLD_LINES`
lines or :data:`FOLD_CHARS` characters is put, whole, behind a ``<details>`` whose summary
says how much is inside; it is never cut. Styles are inline (a saved notebook shown on GitHub
or nbviewer keeps its colours; a ``<style>`` block would be stripped) and kept few, so the
output reads well in a light or dark JupyterLab theme.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import Any

#: Longest text shown open; longer text is folded (whole) behind a ``<details>``.
FOLD_LINES = 20
FOLD_CHARS = 2000
#: The colour of each tone: every view takes its colours from here (a badge's tone, a call's
#: or a phase's status, a tree node's access); the widgets' stylesheet falls back to the same.
COLOURS = {"ok": "#2e7d32", "error": "#c62828", "warn": "#ef6c00", "cancelled": "#9e6a00",
           "info": "#1565c0", "running": "#1565c0", "muted": "#757575",
           "read_only": "#546e7a", "hidden": "#8d6e63"}
#: The colour of a call's, a bar's or a phase's status.
STATUS_COLOURS = {status: COLOURS[status] for status in ("ok", "error", "cancelled", "running")}
#: The colour of a tree node's access level.
ACCESS_COLOURS = {"writable": COLOURS["ok"], "read_only": COLOURS["read_only"],
                  "hidden": COLOURS["hidden"]}
#: The units of :func:`format_size` past bytes.
SIZE_UNITS = ("KiB", "MiB", "GiB", "TiB")

_CELL = "padding:2px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #8883"
_PRE = "margin:2px 0;white-space:pre-wrap;word-break:break-word"


def format_size(size: int | None) -> str:
    """A byte count as people read it: ``8 B``, ``1.5 KiB``, ``2.0 MiB``, up to ``TiB``
    (``""`` for no size). Past 1023 bytes the count is shown to a tenth of the largest unit
    it reaches, rounded half to even on the exact quotient (``1280`` is ``1.2 KiB``), as
    Python's ``format`` rounds it; the widgets' script computes the same figures."""
    if size is None:
        return ""
    if size < 1024:
        return f"{size} B"
    power = 1
    while power < len(SIZE_UNITS) and size >= 1024 ** (power + 1):
        power += 1
    scale = 1024 ** power
    tenths, rest = divmod(size * 10, scale)
    if rest * 2 > scale or (rest * 2 == scale and tenths % 2):
        tenths += 1
    return f"{tenths // 10}.{tenths % 10} {SIZE_UNITS[power - 1]}"


def escape(text: object) -> str:
    """HTML-escape ``text`` (quotes included)."""
    return html.escape(str(text), quote=True)


def is_long(text: str) -> bool:
    """Whether ``text`` is folded rather than shown open."""
    return text.count("\n") >= FOLD_LINES or len(text) > FOLD_CHARS


def size_note(text: str) -> str:
    """``12 lines, 480 characters``: how much a fold holds."""
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    return f"{lines} line{'s' if lines != 1 else ''}, {len(text)} characters"


def fold(summary_html: str, body_html: str, *, open_: bool = False) -> str:
    """``<details>`` with ``summary_html`` visible and ``body_html`` inside."""
    state = " open" if open_ else ""
    return f"<details{state}><summary>{summary_html}</summary>{body_html}</details>"


def pre(text: str, *, label: str = "") -> str:
    """Preformatted text, folded whole behind a ``<details>`` when it is long."""
    block = f'<pre style="{_PRE}">{escape(text)}</pre>'
    if not is_long(text):
        return block
    head = f"{escape(label)} ({size_note(text)})" if label else size_note(text)
    return fold(head, block)


def badge(text: str, tone: str = "muted") -> str:
    """A small coloured label (``tone`` is a key of :data:`COLOURS`)."""
    colour = COLOURS.get(tone, COLOURS["muted"])
    return (f'<span style="border:1px solid {colour};color:{colour};border-radius:3px;'
            f'padding:0 4px;font-size:85%">{escape(text)}</span>')


def code(text: str) -> str:
    """Inline monospace text."""
    return f"<code>{escape(text)}</code>"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table; ``rows`` hold HTML cells (escape plain text with :func:`escape`)."""
    head = "".join(f'<th style="{_CELL}">{escape(h)}</th>' for h in headers)
    body = "".join("<tr>" + "".join(f'<td style="{_CELL}">{cell}</td>' for cell in row)
                   + "</tr>" for row in rows)
    return (f'<table style="border-collapse:collapse;margin:4px 0"><thead><tr>{head}</tr>'
            f"</thead><tbody>{body}</tbody></table>")


def card(title_html: str, fields: Sequence[tuple[str, str]], footer_html: str = "") -> str:
    """A titled box of ``label: value`` rows (values are HTML)."""
    rows = "".join(f'<tr><th style="{_CELL};font-weight:normal;color:{COLOURS["muted"]}">'
                   f"{escape(label)}</th><td style=\"{_CELL}\">{value}</td></tr>"
                   for label, value in fields)
    return (f'<div style="border:1px solid #8886;border-radius:4px;padding:4px 8px;'
            f'margin:4px 0;display:inline-block;min-width:24em"><div style="font-weight:bold">'
            f'{title_html}</div><table style="border-collapse:collapse">{rows}</table>'
            f"{footer_html}</div>")


def json_text(value: Any) -> str:
    """``value`` as indented JSON (non-ASCII kept), for text and ``<pre>`` blocks."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def value_html(value: Any) -> str:
    """One value in a cell: a string as text (``<pre>`` when it has several lines), anything
    else as JSON; long values fold."""
    if isinstance(value, str):
        return pre(value) if "\n" in value or is_long(value) else escape(value)
    if value is None or isinstance(value, bool | int | float):
        return code(json.dumps(value))
    return pre(json_text(value))


def indent(text: str, prefix: str = "  ") -> str:
    """Every line of ``text`` behind ``prefix`` (the text forms' nesting)."""
    return "\n".join(prefix + line if line else line for line in text.split("\n"))
