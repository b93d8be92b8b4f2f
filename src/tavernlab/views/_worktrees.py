"""Views of worktree results (the tools' upstream output shapes) and of provisioning progress.

The worktree tools return plain JSON-shaped data (``{cwd, branch}``, ``{passed, exitCode,
stdout, stderr}``, ``{services: [...]}``, listings, GC plans), so one renderer draws them all:
a mapping becomes a card of fields, a list of mappings a table, multi-line text a ``<pre>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tavernlab.views._markup import badge, card, escape, indent, json_text, table, value_html
from tavernlab.views._text import describe_event
from tavernlab.worktree import ProgressEvent


def _is_records(value: Any) -> bool:
    return (isinstance(value, Sequence) and not isinstance(value, str) and bool(value)
            and all(isinstance(item, Mapping) for item in value))


def _columns(records: Sequence[Mapping[str, Any]]) -> list[str]:
    columns: list[str] = []
    for record in records:
        columns += [key for key in record if key not in columns]
    return columns


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json_text(value)


def _records_text(records: Sequence[Mapping[str, Any]]) -> str:
    lines = []
    for record in records:
        lines.append("- " + "  ".join(f"{k}={_scalar_text(v)}" for k, v in record.items()))
    return "\n".join(lines)


def worktree_result_text(title: str, data: Any) -> str:
    """``title`` then the data: ``key: value`` lines, one ``- k=v …`` line per record."""
    if _is_records(data):
        return f"{title}\n{indent(_records_text(data))}"
    if not isinstance(data, Mapping):
        return f"{title}\n{indent(_scalar_text(data))}" if data not in (None, [], {}) \
            else f"{title}\n  (nothing)"
    lines = [title]
    for key, value in data.items():
        if _is_records(value):
            lines += [f"  {key}:", indent(_records_text(value), "    ")]
        elif isinstance(value, str) and "\n" in value.rstrip("\n"):
            lines += [f"  {key}:", indent(value.rstrip("\n"), "    ")]
        else:
            lines.append(f"  {key}: {_scalar_text(value)}")
    return "\n".join(lines)


def _cell(key: str, value: Any) -> str:
    if key in ("passed", "ok", "removed", "stopped") and isinstance(value, bool):
        return badge(str(value).lower(), "ok" if value else "error")
    return value_html(value)


def _records_html(records: Sequence[Mapping[str, Any]]) -> str:
    columns = _columns(records)
    return table(columns, [[_cell(c, r[c]) if c in r else "" for c in columns]
                           for r in records])


def worktree_result_html(title: str, data: Any) -> str:
    """A card of the mapping's fields (records as tables), or a table of records."""
    if _is_records(data):
        return card(escape(title), [], _records_html(data))
    if not isinstance(data, Mapping):
        return card(escape(title), [("result", value_html(data))])
    fields = [(str(key), _records_html(value) if _is_records(value) else _cell(key, value))
              for key, value in data.items()]
    return card(escape(title), fields)


def progress_line(slug: str, elapsed_s: float, event: ProgressEvent | None) -> str:
    """``worktree add-search [  1.20s] phase deps`` (``starting`` before the first event)."""
    what = describe_event(event) if event is not None else "starting"
    return f"worktree {slug} [{elapsed_s:6.2f}s] {what}"

