"""A model-driven run's card shows its model calls and token totals, per run and per round;
a run played by hand shows no model line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tavernlab import Lab
from tavernlab.models import Scripted
from tavernlab.notebook._display import run_html, run_text


def _turn(alias: str, arguments: dict[str, Any], tokens: tuple[int, int]) -> dict[str, Any]:
    call = {"id": f"call_{alias}", "type": "function",
            "function": {"name": alias, "arguments": json.dumps(arguments)}}
    return {"choices": [{"message": {"role": "assistant", "content": None,
                                     "tool_calls": [call]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1],
                      "total_tokens": sum(tokens)}}


def test_the_card_shows_model_calls_and_tokens_per_run_and_round(tmp_path: Path) -> None:
    answers = [_turn("workspace_write_file", {"path": "output/main.md", "content": "x"},
                     (10, 5)),
               _turn("workspace_finish", {}, (20, 2))]
    with Lab(tmp_path / "lab") as lab:
        outcome = lab.run_agent("Write.", model=Scripted(answers), presentation="background")
        text = run_text(outcome.run).splitlines()
        assert text[4:6] == ["  model calls: 2   37 tokens (30 in, 7 out)",
                             "    round 1: 15 tokens (10 in, 5 out)   "
                             "round 2: 22 tokens (20 in, 2 out)"]
        html = run_html(outcome.run)
        assert "2: 37 tokens (30 in, 7 out)" in html and "round 2" in html
        by_hand = lab.start_run(chat_id="hand")
        assert "model calls" not in run_text(by_hand)
