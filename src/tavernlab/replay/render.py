"""HTML for a replay report: pure functions, no notebook import (floor 5, beside the data).

:func:`report_html` is what ``ReplayReport._repr_html_`` returns, so a report shows itself in
any notebook front end without the notebook layer; the notebook layer may register it as a
display formatter too. The status comes first, then the skills of both sides (a changed
hash is marked), then one row per divergence with the recording and the replay **side by
side** (:func:`side_by_side`, built from the divergence's unified diff) in a ``<details>``
that folds long content; nothing is cut.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tavernlab.replay.report import Divergence, ReplayReport

_STYLE = ("<style>.tl-replay table{border-collapse:collapse}"
          ".tl-replay td,.tl-replay th{border:1px solid #ddd;padding:2px 6px;"
          "vertical-align:top;text-align:left}"
          ".tl-replay .del{background:#fdd}.tl-replay .add{background:#dfd}"
          ".tl-replay pre{margin:0;white-space:pre-wrap}</style>")


def side_by_side(diff: str) -> str:
    """A two-column table (recorded | replayed) from a unified diff: removed lines on the
    left, added lines on the right, context on both."""
    rows: list[tuple[str, str, str, str]] = []
    left: list[str] = []
    right: list[str] = []

    def flush() -> None:
        for index in range(max(len(left), len(right))):
            a = left[index] if index < len(left) else ""
            b = right[index] if index < len(right) else ""
            rows.append((a, "del" if index < len(left) else "",
                         b, "add" if index < len(right) else ""))
        left.clear()
        right.clear()

    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            flush()
            rows.append((line, "", line, ""))
        elif line.startswith("-"):
            left.append(line[1:])
        elif line.startswith("+"):
            right.append(line[1:])
        else:
            flush()
            rows.append((line[1:], "", line[1:], ""))
    flush()
    body = "".join(f'<tr><td class="{ca}"><pre>{escape(a)}</pre></td>'
                   f'<td class="{cb}"><pre>{escape(b)}</pre></td></tr>'
                   for a, ca, b, cb in rows)
    return f"<table><tr><th>recorded</th><th>replayed</th></tr>{body}</table>"


def divergence_html(divergence: Divergence) -> str:
    """The table rows of a divergence: its cells, then its diff folded in a row below, side
    by side."""
    d = divergence
    cells = [str(d.index), d.action, d.kind, d.subject, d.expected or "", d.actual or ""]
    row = "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>"
    if d.diff:
        row += (f'<tr><td colspan="6"><details><summary>diff</summary>'
                f"{side_by_side(d.diff)}</details></td></tr>")
    return row


def report_html(report: ReplayReport) -> str:
    """The whole report as HTML."""
    status = "identical" if report.identical else "diverged"
    parts = [_STYLE, '<div class="tl-replay">',
             f"<p><b>{status}</b>: {escape(report.headline())}</p>"]
    if report.skills:
        skills = "".join(
            f"<tr><td>{escape(s.name)}</td><td><code>{escape(s.recorded_hash)}</code></td>"
            f"<td><code>{escape(s.replayed_hash)}</code></td><td>{escape(s.source)}</td>"
            f"<td>{'changed' if s.changed else 'same'}</td></tr>" for s in report.skills)
        parts.append("<table><tr><th>skill</th><th>recorded hash</th><th>replayed hash</th>"
                     f"<th>replayed from</th><th></th></tr>{skills}</table>")
    if report.divergences:
        rows = "".join(divergence_html(d) for d in report.divergences)
        parts.append("<table><tr><th>action</th><th>label</th><th>kind</th><th>subject</th>"
                     f"<th>recorded</th><th>replayed</th></tr>{rows}</table>")
    parts.append("</div>")
    return "".join(parts)
