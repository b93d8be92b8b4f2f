"""What each SDK provider sends: the request bodies the local server received, for a
transcript with tool results, errors, invalid arguments, reasoning and thinking blocks."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import TOOLS, Factory, call, make_request, turn

from tavernlab.cancel import CancelToken
from tavernlab.models import (
    ModelCallError,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativePart,
    ReasoningPart,
    ToolResult,
    ToolResultPart,
)


def answer(provider: Any, request: ModelRequest, stream: bool = False) -> ModelResponse:
    return provider.generate(request, stream=stream, on_delta=None, cancel=CancelToken())


def tool_message(call_id: str, tool_id: str, content: str, *, error: str | None = None
                 ) -> ModelMessage:
    return ModelMessage(role="tool", parts=[ToolResultPart(result=ToolResult(
        call_id=call_id, tool_id=tool_id, content=content, is_error=error is not None,
        error_code=error, structured={"kept": "in the record"}))])


def continued(request: ModelRequest, response: ModelResponse, *extra: ModelMessage
              ) -> ModelRequest:
    return request.model_copy(update={"messages": [*request.messages, response.message,
                                                   *extra]})


FIRST = turn("I will look.",
             call("call_list", "workspace_list_files", "null"),
             call("call_bad", "workspace_write_file", '{"path":'),
             call("call_write", "workspace_write_file", '{"path": "a.md", "content": "é"}'),
             reasoning_content="Plan: list, then write.")


def transcript(first: ModelResponse, request: ModelRequest) -> ModelRequest:
    return continued(
        request, first,
        tool_message("call_list", "builtin:workspace.list_files", "output/\nscratch/\n"),
        tool_message("call_bad", "builtin:workspace.write_file",
                     "  arguments must be a JSON object  \n", error="tool.invalid_arguments"),
        tool_message("call_write", "builtin:workspace.write_file", "Wrote a.md"),
        ModelMessage.of_text("user", "[system reminder] keep going"))


def test_openai_request_encoding(serve: Factory) -> None:
    server, provider = serve("openai", [FIRST, turn("done")],
                             params={"temperature": 0.3, "max_tokens": 256,
                                     "reasoning_effort": "low"})
    request = make_request()
    request.payload = {"model": "ignored-here", "top_p": 0.9, "temperature": 0.5}
    first = answer(provider, request)
    answer(provider, transcript(first, request), stream=True)
    one, two = server.requests
    assert one["model"] == "test-model"
    assert (one["temperature"], one["max_tokens"], one["reasoning_effort"], one["top_p"]) == \
        (0.5, 256, "low", 0.9)  # the request's payload over the provider's params
    assert one["n"] == 1 and one["stream"] is False and "stream_options" not in one
    assert two["stream"] is True and two["stream_options"] == {"include_usage": True}
    assert one["tool_choice"] == "auto"
    assert one["tools"][0] == {"type": "function", "function": {
        "name": "workspace_write_file", "description": "Write a file.",
        "parameters": TOOLS[0].input_schema}}  # OpenAI gets the schema as it is
    assert one["messages"] == [{"role": "system", "content": "You are a writer."},
                               {"role": "user", "content": "Write the answer."}]
    replay = two["messages"][2]
    assert replay == {
        "role": "assistant", "content": "I will look.",
        "tool_calls": [
            {"id": "call_list", "type": "function",
             "function": {"name": "workspace_list_files", "arguments": "{}"}},
            {"id": "call_bad", "type": "function",
             "function": {"name": "workspace_write_file", "arguments": "{}"}},
            {"id": "call_write", "type": "function",
             "function": {"name": "workspace_write_file",
                          "arguments": '{"path":"a.md","content":"é"}'}}],
        "reasoning_content": "Plan: list, then write."}
    assert two["messages"][3:] == [
        {"role": "tool", "tool_call_id": "call_list", "name": "workspace_list_files",
         "content": "output/\nscratch/\n"},
        {"role": "tool", "tool_call_id": "call_bad", "name": "workspace_write_file",
         "content": "## Tool error\n\narguments must be a JSON object"},
        {"role": "tool", "tool_call_id": "call_write", "name": "workspace_write_file",
         "content": "Wrote a.md"},
        {"role": "user", "content": "[system reminder] keep going"}]


def test_openai_replay_without_text_sends_null_content_and_raw_reasoning(
        serve: Factory) -> None:
    server, provider = serve("openai", [
        turn(None, call("call_1", "workspace_list_files", "{}"), reasoning="short thought",
             reasoning_details=[{"type": "reasoning.text", "text": "short thought"}]),
        turn("done")])
    request = make_request()
    first = answer(provider, request, stream=False)
    assert first.message.reasoning == "short thought"  # the `reasoning` field some servers use
    answer(provider, continued(request, first, tool_message(
        "call_1", "builtin:workspace.list_files", "x")))
    replay = server.requests[1]["messages"][2]
    assert replay["content"] is None
    assert replay["reasoning_content"] == "short thought"
    assert replay["reasoning"] == "short thought"
    assert replay["reasoning_details"] == [{"type": "reasoning.text", "text": "short thought"}]


def test_openai_streamed_answer_equals_the_json_one(serve: Factory) -> None:
    _, provider = serve("openai", [{**FIRST, "id": "chatcmpl-same"}] * 2)
    plain = answer(provider, make_request(), stream=False)
    streamed = answer(provider, make_request(), stream=True)
    assert streamed.message == plain.message
    assert streamed.tool_calls == plain.tool_calls
    assert streamed.provider_metadata == plain.provider_metadata


def test_claude_request_encoding(serve: Factory) -> None:
    server, provider = serve("anthropic", [FIRST, turn("done")],
                             params={"temperature": 0.2})
    request = make_request()
    first = answer(provider, request)
    answer(provider, transcript(first, request), stream=True)
    one, two = server.requests
    assert one["max_tokens"] == 4096  # the default: the Messages API requires one
    assert one["temperature"] == 0.2 and one["model"] == "test-model"
    assert one["system"] == [{"type": "text", "text": "You are a writer."}]
    assert one["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "Write the answer."}]}]
    assert one["tool_choice"] == {"type": "auto"}
    assert one["tools"][0] == {
        "name": "workspace_write_file", "description": "Write a file.",
        "input_schema": {"type": "object",
                         "properties": {"path": {"type": "string"},
                                        "content": {"type": "string"}},
                         "required": ["path", "content"]}}  # no $schema, no $id
    assistant = two["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "Plan: list, then write.", "signature": "sig-turn-1"},
        {"type": "text", "text": "I will look."},
        {"type": "tool_use", "name": "workspace_list_files", "input": {}, "id": "call_list"},
        {"type": "tool_use", "name": "workspace_write_file", "input": {}, "id": "call_bad"},
        {"type": "tool_use", "name": "workspace_write_file",
         "input": {"path": "a.md", "content": "é"}, "id": "call_write"}]
    assert two["messages"][2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call_list", "content": "output/\nscratch/\n"},
        {"type": "tool_result", "tool_use_id": "call_bad",
         "content": "## Tool error\n\narguments must be a JSON object"},
        {"type": "tool_result", "tool_use_id": "call_write", "content": "Wrote a.md"},
        {"type": "text", "text": "[system reminder] keep going"}]}
    assert len(two["messages"]) == 3


def test_claude_thinking_round_trip(serve: Factory) -> None:
    server, provider = serve("anthropic", [
        turn("Listing.", call("call_1", "workspace_list_files", "{}"),
             reasoning_content="Secret plan.", thinking_signature="EqQBCkYIARgCKkC-signed"),
        turn("done")])
    request = make_request()
    first = answer(provider, request, stream=True)
    reasoning = [p for p in first.message.parts if isinstance(p, ReasoningPart)]
    assert [(p.text, p.provider_metadata["signature"]) for p in reasoning] == \
        [("Secret plan.", "EqQBCkYIARgCKkC-signed")]
    native = first.message.native
    assert native == [NativePart(provider="claude_messages", value=[
        {"type": "thinking", "thinking": "Secret plan.", "signature": "EqQBCkYIARgCKkC-signed"},
        {"type": "text", "text": "Listing."},
        {"type": "tool_use", "id": "call_1", "name": "workspace_list_files", "input": {}}])]
    assert first.provider_state["nativeContinuation"] == {"provider": "claude_messages",
                                                          "partCount": 3}
    # the stored form (model-responses/) reads back and still carries the signature
    stored = ModelResponse.model_validate_json(first.model_dump_json(by_alias=True))
    answer(provider, continued(request, stored, tool_message(
        "call_1", "builtin:workspace.list_files", "none")), stream=False)
    sent = server.requests[1]["messages"][1]["content"]
    assert sent[0] == {"type": "thinking", "thinking": "Secret plan.",
                       "signature": "EqQBCkYIARgCKkC-signed"}


def test_claude_without_native_parts_rebuilds_the_blocks(serve: Factory) -> None:
    server, provider = serve("anthropic", [turn("done")])
    foreign = ModelResponse.model_validate({
        "message": {"role": "assistant", "parts": [
            {"type": "text", "text": "From another provider."},
            {"type": "toolCall", "call": {"callId": "c1", "toolId": "builtin:workspace.list_files",
                                          "arguments": {"depth": 1},
                                          "providerMetadata": {"modelAlias":
                                                               "workspace_list_files"}}}]}})
    request = make_request()
    answer(provider, continued(request, foreign, tool_message(
        "c1", "builtin:workspace.list_files", "ok")))
    assert server.requests[0]["messages"][1:] == [
        {"role": "assistant", "content": [
            {"type": "text", "text": "From another provider."},
            {"type": "tool_use", "id": "c1", "name": "workspace_list_files",
             "input": {"depth": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
                                      "content": "ok"}]}]


def test_claude_usage_in_canonical_names(serve: Factory) -> None:
    _, provider = serve("anthropic", [turn("a", usage={
        "input_tokens": 10, "output_tokens": 7, "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 5})] * 2)
    for stream in (False, True):
        usage = answer(provider, make_request(), stream=stream).usage
        assert (usage.input_tokens, usage.output_tokens, usage.total_tokens,
                usage.cached_input_tokens) == (115, 7, 122, 100)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_stop_reasons(serve: Factory, wire: str, stream: bool) -> None:
    refused = {"choices": [{"message": {"content": "no"}, "finish_reason": "refusal"}]}
    cut = {"choices": [{"message": {"content": "half"}, "finish_reason": "length"}]}
    _, provider = serve(wire, [refused, cut])
    with pytest.raises(ModelCallError) as caught:
        answer(provider, make_request(), stream=stream)
    assert str(caught.value) == \
        "model.provider_refusal: provider refused to complete the Agent turn"
    with pytest.raises(ModelCallError) as caught:
        answer(provider, make_request(), stream=stream)
    reason = "length" if wire == "openai" else "max_tokens"
    assert str(caught.value) == ("model.output_truncated: provider stopped before completing "
                                 f"the Agent turn ({reason})")
    assert caught.value.kind == "validation" and not caught.value.retryable
