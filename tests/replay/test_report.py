"""The report's text, JSON and HTML forms (pure renderers, no kernel)."""

from __future__ import annotations

from tavernlab.replay import Divergence, ReplayReport, SkillVersions, report_html
from tavernlab.replay._compare import text_diff
from tavernlab.replay._report import side_by_side

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


def test_a_model_runs_report_shows_its_turns_its_divergence_and_the_live_run() -> None:
    from tavernlab.replay import LiveContinuation, RecordedModelCall

    request_diff = text_diff("content: hi\n", "content: bye\n", "request/messages/5")
    diverged = Divergence(2, "model request of round 3 (inv_root, call c2)", "model_request",
                          "message 5 (tool result of c2)", diff=request_diff,
                          invocation="inv_root", round=3, call="c2")
    result = Divergence(1, "builtin:workspace.shell c2", "result", "content", diff=DIFF)
    turns = [RecordedModelCall("inv_root", 1, "resp_1", "m", 100, 7, True),
             RecordedModelCall("inv_root", 2, None, None, None, None, True),
             RecordedModelCall("inv_root", 3, "resp_3", "m", 200, 11, False)]
    live = LiveContinuation("run_2", "completed", None, 3, 3, "inv_root")
    report = ReplayReport("b.tavernrun", "run_1", 6, [result, diverged], model_turns=turns,
                          model_divergence=diverged, live=live)
    assert report.first is diverged
    assert str(report).splitlines() == [
        "diverged: 2 divergences in run_1, first: round 3 model request (inv_root, call c2): "
        "model_request message 5 (tool result of c2)",
        "--- recorded/request/messages/5", "+++ replayed/request/messages/5",
        "@@ -1 +1 @@", "-content: hi", "+content: bye",
        "model turns:",
        "  round 1 (inv_root): resp_1 (m), 100 in + 7 out tokens, served",
        "  round 2 (inv_root): no id (unknown model), ? in + ? out tokens, served",
        "  round 3 (inv_root): resp_3 (m), 200 in + 11 out tokens, not served",
        "live run run_2: completed after 3 rounds (live from round 3 of inv_root)"]
    data = report.to_json()
    assert data["modelTurns"][2] == {"invocationId": "inv_root", "round": 3,
                                     "responseId": "resp_3", "model": "m", "inputTokens": 200,
                                     "outputTokens": 11, "served": False}
    assert (data["modelDivergence"]["round"], data["modelDivergence"]["call"]) == (3, "c2")
    assert data["live"] == {"runId": "run_2", "status": "completed", "failure": None,
                            "rounds": 3, "fromRound": 3, "invocationId": "inv_root"}
    html = report._repr_html_()
    assert ('<tr class="del"><td>3</td><td>inv_root</td><td>resp_3</td><td>m</td>'
            "<td>200</td><td>11</td><td>not served</td>"
            "<td>diverged: message 5 (tool result of c2)</td></tr>") in html
    assert "<summary>request diff</summary>" in html
    assert "live run run_2: completed" in html
    # a divergence at a round the recording never reached still gets its row
    beyond = Divergence(3, "model request of round 4 (inv_root)", "model_request",
                        "a model request the recording never made", invocation="inv_root",
                        round=4)
    late = ReplayReport("b.tavernrun", "run_1", 6, [beyond], model_turns=turns,
                        model_divergence=beyond)
    assert ('<tr class="del"><td>4</td><td>inv_root</td><td colspan="6">diverged: a model '
            "request the recording never made</td></tr>") in late._repr_html_()
