"""The page: one self-contained HTML file showing a run with no kernel and no network.

At the top, the notebook's own file tree and timeline views: their ES module and styles are
inlined, and a small model in the page stands in for the kernel (it answers the views from
the run's data embedded as JSON: every node, every bar, each bar's detail and each file's
preview), so expanding, filtering, folding rounds, selecting a bar or a file work as in the
notebook. Below, one section per round, readable without script: the model call of the round
when the run has one (``model-responses/round-NNN.json`` in the run directory), then each
call with its arguments, result and changed files (the timeline's own detail). Last, a
replay report when one is given. Nothing is cut: long content folds.
"""

from __future__ import annotations

import contextlib
import json
from html import escape
from pathlib import Path
from typing import Any

import tavernlab.layout as layout
from tavernlab.notebook.widgets import (
    TIMELINE_TYPES,
    Bar,
    TimelineState,
    TreeState,
    describe,
    node_preview,
    plural,
)
from tavernlab.paths import WorkspacePath
from tavernlab.replay import ReplayReport, report_html
from tavernlab.view._source import RunFiles
from tavernlab.views import STATUS_COLOURS, fold, pre
from tavernlab.workspace.scope import build_tree

STATIC = Path(__file__).resolve().parents[1] / "notebook" / "widgets" / "static"
#: Where a run keeps the model's answer of each round (written by the agent loop).
MODEL_RESPONSES = layout.MODEL_RESPONSES
#: Lines of a file preview shown at first (the views' own "more" shows the rest).
PREVIEW_LINES = 200

_PAGE_CSS = """
body{margin:0;padding:16px 24px;font-family:system-ui,-apple-system,'Segoe UI',sans-serif;
  font-size:13px;color:#1f2328;background:#fff}
h1{font-size:18px;margin:0 0 4px} h2{font-size:15px;margin:22px 0 8px}
h3{font-size:13px;margin:14px 0 6px}
.tl-view-head{color:#57606a;margin-bottom:12px}
.tl-view-widgets{display:flex;gap:10px;align-items:flex-start}
.tl-view-widgets>div{min-width:0} #tl-tree{flex:1 1 44%} #tl-timeline{flex:1 1 56%}
.tl-view-call{border:1px solid #d0d7de;border-radius:6px;padding:6px 10px;margin:6px 0}
.tl-view-call-head{font-weight:600} .tl-view-meta{color:#57606a;font-weight:400}
""" + "".join(f".tl-view-{status}{{color:{colour}}}\n"
             for status, colour in STATUS_COLOURS.items())

#: The stand-in for the kernel: a model per view that answers from the embedded data.
SHIM = Path(__file__).with_name("page.js")


def _script_text(text: str) -> str:
    """``text`` safe inside a ``<script>`` element (no ``</`` can close it)."""
    return text.replace("</", "<\\/")


def _tree(files: RunFiles, *, hidden: bool) -> TreeState:
    def access_of(path: str, directory: bool) -> Any:
        return files.scope.policy.access(WorkspacePath.parse(path), directory=directory)
    return TreeState(build_tree(files.scope, "", include_hidden=hidden), access_of,
                     include_hidden=hidden)


def _previews(files: RunFiles, state: TreeState) -> dict[str, Any]:
    return {row["path"]: node_preview(files.scope, files.fs, state.get(row["path"]), row["path"],
                                      10 ** 9, state.count_below(row["path"]))
            for row in state.rows() if row["kind"] != "directory"}


def _timeline(files: RunFiles) -> tuple[TimelineState, list[dict[str, Any]]]:
    state = TimelineState()
    state.apply_all(r for r in files.records if r.type in TIMELINE_TYPES)
    window = state.window(0, 10 ** 9)
    groups: list[dict[str, Any]] = []
    for row in window["rows"]:
        if row["type"] == "round":
            groups.append({"round": row, "bars": []})
        else:
            groups[-1]["bars"].append(row)
    return state, groups


def _model_turn(files: RunFiles, number: int) -> str:
    path = files.dir / layout.model_response_path(None, number)
    if not path.is_file():
        return ""
    text = path.read_text(encoding="utf-8", errors="replace")
    with contextlib.suppress(ValueError):
        text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    return (f'<div class="tl-view-call tl-view-model"><div class="tl-view-call-head">model call'
            f' <span class="tl-view-meta">{escape(path.name)}</span></div>'
            f'{pre(text, label="response")}</div>')


def _call(bar: Bar, detail: dict[str, Any]) -> str:
    files = detail.get("files") or []
    changed = "".join(
        f"<li>{escape(f.get('change', ''))} <code>"
        f"{escape((f['fromPath'] + ' → ') if f.get('fromPath') else '')}{escape(f['path'])}"
        f"</code></li>" for f in files)
    duration = "running" if bar.end_ms is None else f"{bar.elapsed_ms} ms"
    error = f" · {escape(bar.error_code)}" if bar.error_code else ""
    parts = [f'<div class="tl-view-call" data-bar="{escape(bar.id)}">'
             f'<div class="tl-view-call-head">{escape(bar.kind)} {escape(bar.label)} '
             f'<span class="tl-view-{bar.status}">{escape(bar.status)}</span> '
             f'<span class="tl-view-meta">{escape(duration)}{error}</span></div>',
             fold("arguments", pre(str(detail.get("arguments", "")))),
             fold("result", pre(str(detail.get("result", "")))),
             fold(f"files changed ({len(files)})", f"<ul>{changed}</ul>" if files else
                  "<div>none</div>"), "</div>"]
    return "".join(parts)


def _rounds(files: RunFiles, state: TimelineState) -> str:
    details = {bar_id: describe(bar, files.dir, files.workspace_dir)
               for bar_id, bar in state.bars.items()}
    out = []
    for number in sorted(state.rounds):
        group = state.rounds[number]
        calls = "".join(_call(bar, details[bar.id]) for bar in group.bars)
        out.append(f'<section class="tl-view-round" data-round="{number}"><h3>Round {number}'
                   f' <span class="tl-view-meta">({plural(len(group.bars), "call")})</span>'
                   f"</h3>{_model_turn(files, number)}{calls}</section>")
    return "".join(out) or "<p>No rounds yet.</p>"


def report_from_json(document: dict[str, Any]) -> ReplayReport:
    """A :class:`ReplayReport` read back from what ``tavernlab replay --json`` prints."""
    from tavernlab.replay import Divergence, SkillVersions

    return ReplayReport(
        bundle=document["bundle"], run_id=document["runId"], actions=document["actions"],
        divergences=[Divergence(**d) for d in document.get("divergences", [])],
        skills=[SkillVersions(s["name"], s["recordedHash"], s["replayedHash"],
                              s.get("source", "bundle")) for s in document.get("skills", [])],
        lab=document.get("lab"), elapsed_s=float(document.get("elapsedSeconds", 0.0)))


def build_page(files: RunFiles, report: ReplayReport | None = None) -> str:
    """The self-contained page of ``files`` (and of ``report``, when given)."""
    visible, hidden = _tree(files, hidden=False), _tree(files, hidden=True)
    state, groups = _timeline(files)
    details = {bar_id: describe(bar, files.dir, files.workspace_dir)
               for bar_id, bar in state.bars.items()}
    last = max((r.timestamp for r in files.records), default=None)
    data = {
        "nodes": visible.rows(), "hidden_nodes": hidden.rows(),
        "previews": {**_previews(files, hidden), **_previews(files, visible)},
        "preview_lines": PREVIEW_LINES, "rounds": groups, "counts": state.counts(),
        "kinds": ["tool", "shell", "js", "commit", "finish"],
        "statuses": ["ok", "error", "cancelled", "running"], "details": details,
        "now_ms": 0 if last is None else int(last.timestamp() * 1000),
    }
    head = (f"{plural(len(state.bars), 'call')} in {plural(len(state.rounds), 'round')}"
            + (f" · {files.status}" if files.status else ""))
    replay = "" if report is None else f"<h2>Replay</h2>{report_html(report)}"
    css = (STATIC / "widgets.css").read_text(encoding="utf-8")
    esm = (STATIC / "widgets.js").read_text(encoding="utf-8")
    shim = SHIM.read_text(encoding="utf-8")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Run {escape(files.id)}</title><style>{css}{_PAGE_CSS}</style></head><body>"
        f"<h1>Run <code>{escape(files.id)}</code></h1>"
        f'<div class="tl-view-head">{escape(head)}</div>'
        '<div class="tl-view-widgets"><div id="tl-tree"></div><div id="tl-timeline"></div>'
        f"</div><h2>Rounds</h2>{_rounds(files, state)}{replay}"
        '<script type="application/json" id="tl-view-data">'
        f"{_script_text(json.dumps(data, ensure_ascii=False))}</script>"
        f'<script type="text/plain" id="tl-view-esm">{_script_text(esm)}</script>'
        f'<script type="module">{_script_text(shim)}</script></body></html>\n')
