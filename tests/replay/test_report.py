"""The report's text, JSON and HTML forms (pure renderers, no kernel)."""

from __future__ import annotations

from tavernlab.replay import Divergence, ReplayReport, SkillVersions
from tavernlab.replay.compare import text_diff
from tavernlab.replay.report import report_html, side_by_side

DIFF = text_diff("a\nsame\n<old>\n", "a\nsame\n<new>\nextra\n", "output/x.md")


def test_text_diff_is_a_unified_diff() -> None:
    assert DIFF == ("--- recorded/output/x.md\n+++ replayed/output/x.md\n@@ -1,3 +1,4 @@\n"
                    " a\n same\n-<old>\n+<new>\n+extra\n")


def test_side_by_side_pairs_removed_and_added_lines() -> None:
    html = side_by_side(DIFF)
    assert html.startswith("<table><tr><th>recorded</th><th>replayed</th></tr>")
    assert ('<tr><td class="del"><pre>&lt;old&gt;</pre></td>'
            '<td class="add"><pre>&lt;new&gt;</pre></td></tr>') in html
    assert '<tr><td class=""><pre></pre></td><td class="add"><pre>extra</pre></td></tr>' in html
    assert '<tr><td class=""><pre>same</pre></td><td class=""><pre>same</pre></td></tr>' in html


def test_report_forms() -> None:
    divergence = Divergence(3, "workspace.shell call_4", "result", "content", diff=DIFF)
    report = ReplayReport("b.tavernrun", "run_1", 5, [divergence],
                          [SkillVersions("dice", "a" * 64, "b" * 64, "/new/dice")])
    assert not report.identical and report.first is divergence
    assert str(report).splitlines()[:3] == [
        "diverged: 1 divergence in run_1, first: action 3 (workspace.shell call_4): result "
        "content",
        "skill dice: aaaaaaaaaaaa -> bbbbbbbbbbbb (/new/dice)",
        "--- recorded/output/x.md"]
    data = report.to_json()
    assert data["identical"] is False and data["divergences"][0]["index"] == 3
    assert data["skills"] == [{"name": "dice", "recordedHash": "a" * 64,
                               "replayedHash": "b" * 64, "source": "/new/dice"}]
    html = report._repr_html_()
    assert html == report_html(report)
    assert "<b>diverged</b>" in html and "<details><summary>diff</summary>" in html
    assert "diverged: diverged" not in html and "</b>: 1 divergence in " in html
    assert "<td>changed</td>" in html
    same = ReplayReport("b.tavernrun", "run_1", 5)
    assert str(same) == "identical: 5 actions of run_1 replayed byte for byte"
    assert "<b>identical</b>" in same._repr_html_()
    setup = Divergence(-1, "start of the run", "setup", "run id", "run_a", "run_b")
    assert setup.summary() == ("run start (start of the run): setup run id: recorded run_a, "
                               "replayed run_b")
