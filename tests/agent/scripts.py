"""Model turns in upstream's fixture shape, and readers of a model-driven run's records."""

from __future__ import annotations

import json
from typing import Any

from tavernlab import Run
from tavernlab.workspace.records import read_json


def call(call_id: str, alias: str, arguments: Any = None) -> dict[str, Any]:
    """One tool call; ``arguments`` a dict (sent as JSON text) or the raw text the model
    sends."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return {"id": call_id, "type": "function", "function": {"name": alias, "arguments": raw}}


def turn(text: str | None, *calls: dict[str, Any], usage: tuple[int, int] = (10, 5)
         ) -> dict[str, Any]:
    """One assistant response."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = list(calls)
    return {"choices": [{"message": message,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                      "total_tokens": usage[0] + usage[1]}}


def failure(**spec: Any) -> dict[str, Any]:
    """A scripted failed attempt."""
    return {"error": spec}


def write(call_id: str, path: str, content: str, mode: str | None = None) -> dict[str, Any]:
    """``workspace_write_file``."""
    args = {"path": path, "content": content}
    if mode is not None:
        args["mode"] = mode
    return call(call_id, "workspace_write_file", args)


def finish(call_id: str = "call_finish") -> dict[str, Any]:
    """``workspace_finish {}``."""
    return call(call_id, "workspace_finish", {})


def default_agent_responses() -> list[dict[str, Any]]:
    """Upstream's default responses: write the artifact, then finish."""
    return [turn("I will write the artifact.",
                 write("call_write", "output/main.md", "hello from real repo")),
            turn(None, finish())]


def payloads(run: Run, kind: str) -> list[dict[str, Any]]:
    """The payloads of ``kind`` events, as written in ``events.jsonl``."""
    found = []
    for line in (run.dir / "events.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["type"] == kind:
            found.append(event["payload"])
    return found


def events(run: Run) -> list[dict[str, Any]]:
    """Every line of ``events.jsonl``."""
    return [json.loads(line) for line in
            (run.dir / "events.jsonl").read_text(encoding="utf-8").splitlines()]


def by_call(run: Run, kind: str, call_id: str) -> list[dict[str, Any]]:
    """The payloads of ``kind`` for one call id."""
    return [p for p in payloads(run, kind) if p.get("callId") == call_id]


def stored(run: Run, relative: str) -> Any:
    """A JSON record of the run (relative to its directory)."""
    return read_json(run.dir / relative)
