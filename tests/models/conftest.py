"""Fixtures of the provider tests: the dummy key, a local model server per wire format with
its provider, and the check that a test leaves no thread behind."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from model_cases import Factory
from model_servers import TEST_KEY, TEST_KEY_ENV, ModelServer

import tavernlab.models as models


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
