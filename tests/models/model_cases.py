"""The provider tests' building blocks: a canonical request with two advertised tools and
fixture-shaped turns and calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from model_servers import ModelServer

from tavernlab.models import ModelMessage, ModelRequest, ModelTool

TOOLS = [
    ModelTool(tool_id="builtin:workspace.write_file", model_alias="workspace_write_file",
              description="Write a file.",
              input_schema={"$schema": "https://json-schema.org/draft/2020-12/schema",
                            "$id": "write", "type": "object",
                            "properties": {"path": {"type": "string"},
                                           "content": {"type": "string"}},
                            "required": ["path", "content"]}),
    ModelTool(tool_id="builtin:workspace.list_files", model_alias="workspace_list_files",
              description="List files.", input_schema={"type": "object", "properties": {}}),
]


def make_request(*messages: ModelMessage, invocation: str = "inv_root") -> ModelRequest:
    """A request with a system and a user message (or ``messages``) and :data:`TOOLS`."""
    return ModelRequest(
        messages=list(messages) or [ModelMessage.of_text("system", "You are a writer."),
                                    ModelMessage.of_text("user", "Write the answer.")],
        tools=list(TOOLS), provider_state={"sessionId": f"run_x:{invocation}",
                                           "runId": "run_x", "invocationId": invocation})


def call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """A fixture tool call (``arguments`` a JSON text, or anything the model may send)."""
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}


def turn(content: str | None = None, *calls: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A fixture turn: the assistant's text and calls (``reasoning_content`` … in ``extra``;
    ``delayMs``/``misbehave``/``usage`` go on the turn)."""
    outer = {k: extra.pop(k) for k in ("delayMs", "misbehave", "usage") if k in extra}
    message: dict[str, Any] = {"role": "assistant", "content": content, **extra}
    if calls:
        message["tool_calls"] = list(calls)
    return {"choices": [{"message": message}], **outer}


#: ``serve(wire, turns, **provider_kwargs) -> (server, provider)`` (the ``serve`` fixture).
Factory = Callable[..., tuple[ModelServer, Any]]
