"""A call's events share one scope, whose text the log makes once: every line still says
what the scope holds when the line is built, as a log that makes it each time writes it."""

from __future__ import annotations

import json
from pathlib import Path

from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.events import EventLog, EventScope, StatusChange, StatusChanged
from tavernlab.events._encoding import dumped_text


def lines(log: EventLog, scopes: list[EventScope | None]) -> list[str]:
    out = []
    for scope in scopes:
        _, data = log.build(StatusChanged, StatusChange(status="calling_model"), scope=scope)
        out.append(data["rest"].decode())
    return out


def test_a_scope_mutated_between_events_is_written_as_it_stands(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", "run_x", clock=FixedClock(),
                   ids=SequentialIds("s"))
    scope, other = EventScope(invocation_id="inv_a"), EventScope(invocation_id="inv_a")
    texts = []
    texts += lines(log, [scope, scope, None, scope, other, scope])
    scope.related_invocation_ids.append("inv_r")
    texts += lines(log, [scope, scope])
    scope.related_invocation_ids.clear()
    scope.invocation_id = "inv_" + "b"  # a new string object
    texts += lines(log, [scope, scope])
    scopes = [json.loads("{" + text)["eventScope"] if "eventScope" in text else None
              for text in texts]
    assert [s and s["invocationId"] for s in scopes] == [
        "inv_a", "inv_a", None, "inv_a", "inv_a", "inv_a", "inv_a", "inv_a", "inv_b", "inv_b"]
    assert [s and s["relatedInvocationIds"] for s in scopes][6:8] == [["inv_r"], ["inv_r"]]
    for text in texts:
        if "eventScope" in text:
            assert text.endswith("}\n")
    fresh = EventScope(invocation_id="inv_b")
    assert f', "eventScope": {dumped_text(fresh)}}}\n' in texts[8]
