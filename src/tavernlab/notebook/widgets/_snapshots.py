"""Static snapshots of the widgets: plain text and self-contained HTML.

A widget's mimebundle carries these beside the live view, so a saved notebook shows the tree
(a nested list with sizes and access badges) and the timeline (a swimlane of bars per round)
on GitHub, in nbviewer and wherever no kernel runs. The HTML uses inline styles only. A
snapshot of a very large run lists its first :data:`SNAPSHOT_LIMIT` rows and then says, in
so many words, how many it left out (the live widget shows them all).
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

from tavernlab.notebook.widgets._timeline_state import Bar, Round
from tavernlab.views import STATUS_COLOURS
from tavernlab.views import tree_html as views_tree_tree_html
from tavernlab.views import tree_text as views_tree_tree_text
from tavernlab.workspace.roots import Access
from tavernlab.workspace.scope import TreeNode

#: Rows a static snapshot lists before it says how many more there are.
SNAPSHOT_LIMIT = 500

_FONT = ("font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;"
         "text-align:left")
_MONO = "font-family:ui-monospace,SFMono-Regular,Menlo,monospace"


def format_duration(ms: int | None) -> str:
    """``12 ms``, ``1.25 s``, ``2 min 5 s`` (``"running"`` for no duration)."""
    if ms is None:
        return "running"
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.2f} s"
    return f"{ms // 60_000} min {(ms % 60_000) // 1000} s"


def plural(count: int, word: str) -> str:
    """``1 bar``, ``2 bars``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def _left_out(total: int, shown: int, what: str) -> str:
    return f"… {total - shown} more {what} not in this snapshot (the live widget shows all)"


# -- the tree ---------------------------------------------------------------------------------


def tree_node(rows: list[dict[str, Any]]) -> TreeNode:
    """The widget's rows (depth first, each with its ``depth``) as the tree they list, below
    an unnamed root, so the snapshot is drawn by the one tree renderer of the views."""
    root = TreeNode("", "", "directory", None, Access("read_only", False), [])
    parents = [root]
    for row in rows:
        del parents[row["depth"] + 1:]
        node = TreeNode(row["name"], row.get("path", row["name"]), row["kind"],
                        row["size"] if row["kind"] == "file" else None,
                        Access(row["access"], bool(row["creates"])),
                        [] if row["kind"] == "directory" else None, row.get("reason"))
        children = parents[-1].children
        assert children is not None
        children.append(node)
        parents.append(node)
    return root


def tree_text(title: str, rows: list[dict[str, Any]]) -> str:
    """The tree as :func:`tavernlab.views.tree_text` draws it, under ``title``: at most
    :data:`SNAPSHOT_LIMIT` nodes, then a line saying how many were left out."""
    return views_tree_tree_text(tree_node(rows), title=title, limit=SNAPSHOT_LIMIT,
                                left_out=lambda shown: _left_out(len(rows), shown, "nodes"))


def tree_html(title: str, rows: list[dict[str, Any]]) -> str:
    """The tree as :func:`tavernlab.views.tree_html` draws it, under ``title`` (the same
    limit and note as :func:`tree_text`)."""
    html = views_tree_tree_html(tree_node(rows), title=title, limit=SNAPSHOT_LIMIT,
                                left_out=lambda shown: _left_out(len(rows), shown, "nodes"))
    return f'<div style="{_FONT}">{html}</div>'


# -- the timeline -----------------------------------------------------------------------------


def _geometry(bar: Bar, span: tuple[int, int | None]) -> tuple[float, float]:
    """``(left, width)`` of a bar in its round's span, as fractions."""
    start, end = span
    last = end if end is not None else max(bar.end_ms or bar.start_ms, start)
    width_ms = max(last - start, 1)
    left = (bar.start_ms - start) / width_ms
    width = ((bar.end_ms or last) - bar.start_ms) / width_ms
    return min(max(left, 0.0), 1.0), min(max(width, 0.01), 1.0 - min(max(left, 0.0), 0.99))


def _round_title(group: Round, shown: int) -> str:
    start, end = group.span
    length = "running" if end is None else format_duration(end - start)
    tokens = sum(int((bar.facts.get("usage") or {}).get("totalTokens") or 0)
                 for bar in group.bars if bar.kind == "model")
    used = f", {tokens} tokens" if tokens else ""
    return f"Round {group.number}  ({plural(shown, 'bar')}, {length}{used})"


def timeline_text(title: str, rows: Iterable[Bar | Round]) -> str:
    """One line per round and per bar, with a 20-column bar in the round's time span."""
    listed = list(rows)
    lines, spans = [title], {}
    for row in listed[:SNAPSHOT_LIMIT]:
        if isinstance(row, Round):
            spans[row.number] = row.span
            lines.append(_round_title(row, len(row.bars)))
            continue
        left, width = _geometry(row, spans[row.round])
        track = " " * round(left * 20) + "█" * max(1, round(width * 20))
        lines.append(f"  {row.kind:<7}{row.label[:40]:<41}{row.status:<10}"
                     f"{format_duration(row.elapsed_ms):>10}  |{track:<21}|")
    if len(listed) > SNAPSHOT_LIMIT:
        lines.append(_left_out(len(listed), SNAPSHOT_LIMIT, "rows"))
    return "\n".join(lines)


def timeline_html(title: str, rows: Iterable[Bar | Round]) -> str:
    """A swimlane: per round a header, then per bar its kind, label, a bar placed in the
    round's span in its status colour, its duration and status."""
    listed = list(rows)
    parts = [f'<div style="{_FONT}"><div style="font-weight:600;margin-bottom:4px">'
             f'{escape(title)}</div><table style="border-collapse:collapse;width:100%;{_FONT}">']
    spans: dict[int, tuple[int, int | None]] = {}
    for row in listed[:SNAPSHOT_LIMIT]:
        if isinstance(row, Round):
            spans[row.number] = row.span
            parts.append(f'<tr><td colspan="5" style="padding:6px 4px 2px;font-weight:600;'
                         f'text-align:left;border-bottom:1px solid #ddd">'
                         f'{escape(_round_title(row, len(row.bars)))}</td></tr>')
            continue
        left, width = _geometry(row, spans[row.round])
        colour = STATUS_COLOURS[row.status]
        parts.append(
            f'<tr><td style="padding:2px 4px;color:#555;text-align:left">{escape(row.kind)}</td>'
            f'<td style="padding:2px 4px;{_MONO};font-size:12px;white-space:nowrap;'
            f'text-align:left">'
            f'{escape(row.label)}</td>'
            f'<td style="padding:2px 4px;width:40%"><div style="position:relative;height:10px;'
            f'background:#f1f1f1;border-radius:3px"><div style="position:absolute;'
            f'left:{left * 100:.1f}%;width:{width * 100:.1f}%;top:0;bottom:0;'
            f'background:{colour};border-radius:3px"></div></div></td>'
            f'<td style="padding:2px 4px;text-align:right;white-space:nowrap">'
            f'{escape(format_duration(row.elapsed_ms))}</td>'
            f'<td style="padding:2px 4px;color:{colour};text-align:left">{escape(row.status)}'
            f'</td></tr>')
    parts.append("</table>")
    if len(listed) > SNAPSHOT_LIMIT:
        note = _left_out(len(listed), SNAPSHOT_LIMIT, "rows")
        parts.append(f'<div style="color:#777">{escape(note)}</div>')
    parts.append("</div>")
    return "".join(parts)
