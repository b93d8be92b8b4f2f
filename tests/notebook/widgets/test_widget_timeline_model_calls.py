"""The timeline of a model-driven run: each model call is a bar of kind ``model``, first in its
round above the round's tool calls, with its attempts, retries, time and tokens; selecting
it shows the request summary and the response; the snapshots list it like any bar."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tavernlab import Lab
from tavernlab.models import Scripted
from tavernlab.notebook.widgets import Timeline

Opened = Callable[[Any], Any]


def _call(call_id: str, alias: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": alias, "arguments": json.dumps(arguments)}}


def _turn(text: str | None, *calls: dict[str, Any], tokens: tuple[int, int]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "tool_calls": list(calls)}
    return {"choices": [{"message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1],
                      "total_tokens": sum(tokens)}}


ANSWERS = [
    {"error": {"status": 503, "message": "busy"}},
    _turn("Writing it.", _call("call_write", "workspace_write_file",
                              {"path": "output/main.md", "content": "42\n"}),
          _call("call_read", "workspace_read_file", {"path": "output/main.md"}),
          tokens=(10, 5)),
    _turn(None, _call("call_finish", "workspace_finish", {}), tokens=(20, 2)),
]
PROFILE = {"run": {"modelRetry": {"maxRetries": 2, "intervalMs": 0}}}


@pytest.fixture
def lab(tmp_path: Path) -> Any:
    with Lab(tmp_path / "lab") as opened:
        yield opened


def rows(timeline: Timeline) -> list[tuple[Any, ...]]:
    return [("round", r["round"], r["bars"], r["usage"]) if r["type"] == "round"
            else (r["kind"], r["id"], r["label"], r["status"]) for r in timeline.window["rows"]]


def test_each_model_call_is_the_first_bar_of_its_round(lab: Lab, opened: Opened) -> None:
    outcome = lab.run_agent("Write 42.", model=Scripted(ANSWERS, model="demo-model"),
                            presentation="background", profile=PROFILE)
    assert outcome.status == "completed"
    timeline = opened(Timeline(outcome.run))
    assert rows(timeline) == [
        ("round", 1, 3, {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}),
        ("model", "model-1", "demo-model · 2 attempts · 15 tokens", "ok"),
        ("tool", "call_write", "workspace.write_file", "ok"),
        ("tool", "call_read", "workspace.read_file", "ok"),
        ("round", 2, 2, {"inputTokens": 20, "outputTokens": 2, "totalTokens": 22}),
        ("model", "model-2", "demo-model · 22 tokens", "ok"),
        ("finish", "call_finish", "workspace.finish", "ok"),
    ]
    assert timeline.window["counts"]["kinds"]["model"] == 2
    completed = [e.payload for e in outcome.run.events() if e.type == "model_completed"]
    first = timeline.window["rows"][1]
    assert first["elapsed_ms"] == completed[0].elapsed_ms
    timeline.kinds = ["model"]
    timeline.settle()
    assert [r[1] for r in rows(timeline)] == [1, "model-1", 2, "model-2"]


def test_a_selected_model_call_shows_its_request_and_response(lab: Lab,
                                                              opened: Opened) -> None:
    outcome = lab.run_agent("Write 42.", model=Scripted(ANSWERS, model="demo-model"),
                            presentation="background", profile=PROFILE)
    timeline = opened(Timeline(outcome.run, selected="model-1"))
    timeline.settle()
    detail = timeline.detail
    assert (detail["kind"], detail["status"], detail["round"]) == ("model", "ok", 1)
    request = json.loads(detail["arguments"])
    assert request["request"]["model"] == "demo-model"
    assert request["request"]["messageCount"] == 2
    assert (request["attempts"], request["retries"], request["maxRetries"]) == (2, 1, 2)
    assert [(f["attempt"], f["willRetry"]) for f in request["failures"]] == [(1, True)]
    assert "busy" in request["failures"][0]["message"]
    assert request["usage"] == {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
    assert detail["result"] == ('Writing it.\n'
                                '→ workspace_write_file {"path": "output/main.md", '
                                '"content": "42\\n"}\n'
                                '→ workspace_read_file {"path": "output/main.md"}')
    assert json.loads(detail["structured"])["round"] == 1
    timeline.selected = "call_write"
    timeline.settle()
    assert json.loads(timeline.detail["arguments"]) == {"path": "output/main.md",
                                                        "content": "42\n"}


def test_a_model_call_that_fails_for_good_is_an_error_bar(lab: Lab, opened: Opened) -> None:
    answers = [{"error": {"status": 401, "message": "bad key"}}]
    outcome = lab.run_agent("Write.", model=Scripted(answers), presentation="background")
    assert outcome.status == "failed"
    timeline = opened(Timeline(outcome.run))
    bar = timeline.window["rows"][1]
    assert (bar["kind"], bar["status"], bar["error_code"]) == ("model", "error",
                                                               "agent.unauthorized")


def test_the_snapshots_list_model_bars(lab: Lab, opened: Opened) -> None:
    outcome = lab.run_agent("Write 42.", model=Scripted(ANSWERS, model="demo-model"),
                            presentation="background", profile=PROFILE)
    timeline = opened(Timeline(outcome.run))
    text = timeline._repr_mimebundle_()[0]["text/plain"]
    lines = text.splitlines()
    assert lines[0] == f"Timeline of {outcome.run.id}: 5 bars in 2 rounds, 37 tokens"
    assert lines[1].startswith("Round 1  (3 bars, ") and lines[1].endswith(", 15 tokens)")
    assert lines[2].split()[:8] == ["model", "demo-model", "·", "2", "attempts", "·", "15",
                                    "tokens"]


def test_a_commit_of_the_agent_loop_is_a_commit_bar_that_ends_ok(lab: Lab,
                                                                 opened: Opened) -> None:
    answers = [_turn(None, _call("call_write", "workspace_write_file",
                                 {"path": "output/main.md", "content": "42\n"}),
                     _call("call_commit", "workspace_commit", {"path": "output/main.md"}),
                     tokens=(1, 1)),
               _turn(None, _call("call_finish", "workspace_finish", {}), tokens=(1, 1))]
    outcome = lab.run_agent("Write 42.", model=Scripted(answers), presentation="foreground")
    assert outcome.status == "completed"
    timeline = opened(Timeline(outcome.run))
    commits = [r for r in timeline.window["rows"] if r["type"] == "bar"
               and r["kind"] == "commit"]
    assert [(c["label"], c["status"]) for c in commits] == [("commit output/main.md", "ok")]
    timeline.selected = commits[0]["id"]
    timeline.settle()
    assert timeline.detail["result"] == "saved as message #0"
