"""Fixtures of the provider tests: a canonical request with two advertised tools, a local
model server per wire format, and the check that a test leaves no thread behind."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from model_servers import TEST_KEY, TEST_KEY_ENV, ModelServer

import tavernlab.models as models
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


@pytest.fixture(autouse=True)
def no_thread_left() -> Iterator[None]:
    """Every thread a test starts has ended when it ends."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5
    while True:
        extra = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not extra or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert not extra, f"threads left behind: {extra}"


@pytest.fixture
def test_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """The dummy API key, in ``TAVERNLAB_TEST_KEY``."""
    monkeypatch.setenv(TEST_KEY_ENV, TEST_KEY)
    return TEST_KEY


Factory = Callable[..., tuple[ModelServer, Any]]


@pytest.fixture
def serve(test_key: str) -> Iterator[Factory]:
    """``serve(wire, turns, **provider_kwargs) -> (server, provider)``; both closed at the
    end of the test."""
    opened: list[tuple[ModelServer, Any]] = []

    def factory(wire: str, turns: list[dict[str, Any]], **kwargs: Any) -> tuple[ModelServer, Any]:
        server = ModelServer(wire, turns).__enter__()
        kind = models.OpenAICompatible if wire == "openai" else models.ClaudeMessages
        kwargs.setdefault("api_key_env", TEST_KEY_ENV)
        provider = kind("test-model", base_url=server.base_url, **kwargs)
        opened.append((server, provider))
        return server, provider

    yield factory
    for server, provider in opened:
        provider.close()
        server.close()
