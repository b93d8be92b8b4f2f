"""A malformed provider answer ends a model-driven run with upstream's code and a clear
message, through the real clients, and leaves the run readable with nothing half-written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.agent.scripts import payloads, turn, write

from tavernlab import Lab

MALFORMED = [
    ("truncate", "network.body_interrupted"),
    ("invalid_json", "model.upstream_invalid_response"),
    ("no_id", "model.invalid_tool_call"),
    ("unknown_alias", "model.unknown_tool_call"),
    ("error_body", "agent.validation_error"),
    ("oversize", "model.upstream_invalid_response"),
]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize(("how", "code"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_answer_ends_the_run_with_its_code(lab: Lab, model_for: Any, stream: bool,
                                                       how: str, code: str) -> None:
    bad = turn("Writing.", write("call_write", "output/main.md", "never"))
    bad["misbehave"] = how
    model = model_for([bad])
    outcome = lab.run_agent("Write.", model=model.provider, presentation="background",
                            stream=stream,
                            profile={"run": {"modelRetry": {"maxRetries": 0, "intervalMs": 0}}})
    run = outcome.run
    assert outcome.status == "failed" and run.status == "failed"
    assert outcome.failure is not None and outcome.failure["code"] == code
    assert outcome.failure["message"]
    assert payloads(run, "tool_call_requested") == []
    assert not (run.workspace_dir / "output" / "main.md").exists()
    assert not (run.dir / "model-responses").exists()
    assert [e.type for e in run.events(journal=False)][-1] == "run_failed"
    for line in (run.dir / "events.jsonl").read_text(encoding="utf-8").splitlines():
        json.loads(line)
    assert json.loads((run.dir / "run.json").read_text(encoding="utf-8"))["status"] == "failed"
