"""The loop tests' helper: provider_for gives the same answers through each kind."""

from __future__ import annotations

import contextlib
import os

import pytest
from conftest import call, make_request, turn
from model_servers import TEST_KEY, TEST_KEY_ENV, provider_for

from tavernlab.cancel import CancelToken

TURNS = [turn("I will write the artifact.",
              call("call_write", "workspace_write_file",
                   '{"path":"output/main.md","content":"hello from real repo"}')),
         turn(None, call("call_finish", "workspace_list_files", "{}"))]


@pytest.mark.parametrize("kind", ["scripted", "openai", "anthropic"])
def test_provider_for_serves_the_turns_and_shows_the_requests(kind: str) -> None:
    before = os.environ.get(TEST_KEY_ENV)
    with contextlib.ExitStack() as stack:
        provider, requests = provider_for(kind, TURNS, stack)
        if kind != "scripted":
            assert os.environ[TEST_KEY_ENV] == TEST_KEY
        first = provider.generate(make_request(), stream=True, on_delta=None,
                                  cancel=CancelToken())
        second = provider.generate(make_request(), stream=False, on_delta=None,
                                   cancel=CancelToken())
        bodies = requests()
    assert os.environ.get(TEST_KEY_ENV) == before  # restored with the stack
    assert first.text == "I will write the artifact."
    assert [(c.call_id, c.tool_id, c.arguments) for c in first.tool_calls] == [
        ("call_write", "builtin:workspace.write_file",
         {"path": "output/main.md", "content": "hello from real repo"})]
    assert [c.call_id for c in second.tool_calls] == ["call_finish"]
    assert len(bodies) == 2
    if kind == "scripted":
        assert bodies[0]["messages"][1]["parts"][0]["text"] == "Write the answer."
        assert bodies[0]["tools"][0]["modelAlias"] == "workspace_write_file"
    elif kind == "openai":
        assert [b["stream"] for b in bodies] == [True, False]
        assert bodies[0]["messages"][1] == {"role": "user", "content": "Write the answer."}
    else:
        assert bodies[0]["system"] == [{"type": "text", "text": "You are a writer."}]
