"""The Claude Messages provider: Anthropic's Messages API (``tool_use`` / ``tool_result``, SSE
streaming) through the official ``anthropic`` client.

System messages become ``system``; tools are ``{name, description, input_schema}`` with
``$schema`` and ``$id`` removed; the answer's content blocks -- thinking blocks with their
signatures included -- are kept whole as a :class:`NativePart` (``provider:
"claude_messages"``) next to the canonical reasoning, text and tool-call parts, and sent back
verbatim in the next request, as the API requires for a thinking model that called a tool.
Stop reasons ``max_tokens`` / ``refusal`` end the call the way upstream's decoder does; usage
lands in ``providerMetadata.usage`` in the canonical names.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from typing import Any

from tavernlab.cancel import CancelToken
from tavernlab.models._canonical import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from tavernlab.models._decode import check_stop_reason, decode_tool_calls
from tavernlab.models._errors import ModelCancelled, invalid_response
from tavernlab.models._http import (
    BodyReader,
    SdkErrors,
    SdkProvider,
    exchange,
    json_event,
    parse_json_body,
    provider_error,
    read_api_key,
    sanitize_endpoint,
    sse_events,
    transport_error,
)
from tavernlab.models._provider import (
    DEFAULT_TIMEOUT_S,
    DeltaCallback,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    next_provider_state,
)
from tavernlab.models._tools import claude_tool

PROVIDER = "claude_messages"
PROVIDER_NAME = "Claude"
DEFAULT_BASE_URL = "https://api.anthropic.com"
#: ``max_tokens`` when the params give none (the Messages API requires one).
DEFAULT_MAX_TOKENS = 4096


def claude_tool_choice(choice: Any) -> dict[str, Any]:
    """Chat Completions' ``tool_choice`` in the Messages form."""
    if choice == "none":
        return {"type": "none"}
    if choice == "required":
        return {"type": "any"}
    if isinstance(choice, dict):
        function = choice.get("function")
        if choice.get("type") == "function" and isinstance(function, dict):
            return {"type": "tool", "name": function.get("name")}
        return dict(choice)
    return {"type": "auto"}


def _native_blocks(message: ModelMessage) -> list[dict[str, Any]] | None:
    for part in message.native:
        if part.provider == PROVIDER and isinstance(part.value, list):
            blocks = copy.deepcopy(part.value)
            for block in blocks:  # invalid arguments are replayed as {} (never as raw text)
                if isinstance(block, dict) and block.get("type") == "tool_use" \
                        and not isinstance(block.get("input"), dict):
                    block["input"] = {}
            return blocks
    return None


def _assistant_blocks(message: ModelMessage) -> list[dict[str, Any]]:
    native = _native_blocks(message)
    if native is not None:
        return native
    blocks: list[dict[str, Any]] = []
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        blocks.append({"type": "tool_use", "id": call.call_id,
                       "name": call.model_alias or call.tool_id.split(":", 1)[-1].replace(".", "_"),
                       "input": call.arguments if isinstance(call.arguments, dict) else {}})
    return blocks


def encode_messages(messages: list[ModelMessage]) -> tuple[list[dict[str, Any]],
                                                           list[dict[str, Any]]]:
    """``(system, messages)`` of the Messages request for the canonical transcript.

    Consecutive messages of one role are merged (tool results and a following reminder form
    one ``user`` turn, as the API wants)."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        if message.role in ("system", "developer"):
            if message.text:
                system.append({"type": "text", "text": message.text})
        elif message.role == "assistant":
            push("assistant", _assistant_blocks(message))
        elif message.role == "tool":
            blocks = []
            for part in message.parts:
                if isinstance(part, ToolResultPart):
                    result = part.result
                    content = ("## Tool error\n\n" + result.content.strip()
                               if result.is_error else result.content)
                    blocks.append({"type": "tool_result", "tool_use_id": result.call_id,
                                   "content": content})
            push("user", blocks)
        else:
            push("user", [{"type": "text", "text": message.text}] if message.text else [])
    return system, out


def request_body(model: str, params: Mapping[str, Any], request: ModelRequest,
                 stream: bool) -> dict[str, Any]:
    """The JSON body of the Messages request for ``request`` (the provider's ``params``
    first, the request's ``payload`` over them; ``max_tokens`` defaults to
    :data:`DEFAULT_MAX_TOKENS`)."""
    body: dict[str, Any] = dict(params)
    body.update({k: v for k, v in request.payload.items() if k != "model" and v is not None})
    body.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    body["model"] = model
    system, messages = encode_messages(request.messages)
    if system:
        body["system"] = system
    body["messages"] = messages
    if request.tools:
        body["tools"] = [claude_tool(tool) for tool in request.tools]
        body["tool_choice"] = claude_tool_choice(request.tool_choice)
    body["stream"] = stream
    return body


def claude_usage(raw: Any) -> dict[str, Any] | None:
    """Messages' ``usage`` in the canonical names: ``inputTokens`` counts every prompt token
    (uncached, read from the cache and written to it), ``cachedInputTokens`` those read from
    the cache."""
    if not isinstance(raw, dict):
        return None

    def number(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) else 0

    prompt = number("input_tokens") + number("cache_read_input_tokens") \
        + number("cache_creation_input_tokens")
    output = raw.get("output_tokens")
    return Usage(
        input_tokens=prompt, output_tokens=output if isinstance(output, int) else None,
        total_tokens=prompt + (output if isinstance(output, int) else 0),
        cached_input_tokens=raw.get("cache_read_input_tokens"),
    ).model_dump(by_alias=True)


class _Assembly:
    """The streamed events put back together into one Messages body."""

    def __init__(self, request: ModelRequest, on_delta: DeltaCallback | None,
                 endpoint: str) -> None:
        self._request = request
        self._on_delta = on_delta
        self._endpoint = endpoint
        self.message: dict[str, Any] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self.usage: dict[str, Any] = {}
        self.stopped = False

    def _emit(self, delta: Any) -> None:
        if self._on_delta is not None:
            self._on_delta(delta)

    def add(self, name: str, data: Any) -> None:
        if not isinstance(data, dict):
            raise invalid_response(f"{PROVIDER_NAME} sent a stream event that is not an object")
        kind = data.get("type") or name
        if kind == "error":
            failure = provider_error(PROVIDER_NAME, data)
            raise failure or invalid_response(f"{PROVIDER_NAME} sent an error event")
        if kind == "message_start":
            self.message = dict(data.get("message") or {})
            self.usage.update(self.message.get("usage") or {})
        elif kind == "content_block_start":
            index = int(data.get("index", len(self.blocks)))
            block = dict(data.get("content_block") or {})
            if block.get("type") == "tool_use":
                block["input"] = {}
                self._json[index] = []
            self.blocks[index] = block
        elif kind == "content_block_delta":
            self._delta(int(data.get("index", 0)), data.get("delta") or {})
        elif kind == "content_block_stop":
            index = int(data.get("index", 0))
            if index in self._json:
                text = "".join(self._json.pop(index))
                block = self.blocks.get(index, {})
                if text.strip():
                    try:
                        block["input"] = json.loads(text)
                    except ValueError:
                        block["input"] = text
                    if not isinstance(block["input"], dict):
                        block["input"] = text
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            for key in ("stop_reason", "stop_sequence", "stop_details"):
                if key in delta:
                    self.message[key] = delta[key]
            self.usage.update({k: v for k, v in (data.get("usage") or {}).items()
                               if v is not None})
        elif kind == "message_stop":
            self.stopped = True

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind == "text_delta":
            text = str(delta.get("text", ""))
            block["text"] = block.get("text", "") + text
            if text:
                self._emit(TextDelta(text))
        elif kind == "thinking_delta":
            text = str(delta.get("thinking", ""))
            block["thinking"] = block.get("thinking", "") + text
            if text:
                self._emit(ReasoningDelta(text))
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + str(delta.get("signature", ""))
        elif kind == "input_json_delta":
            fragment = str(delta.get("partial_json", ""))
            self._json.setdefault(index, []).append(fragment)
            tool = self._request.tool_for_alias(str(block.get("name", "")).strip())
            if tool is not None and fragment:
                position = sum(1 for i, b in self.blocks.items()
                               if i < index and b.get("type") == "tool_use")
                self._emit(ToolCallDelta(position, tool.tool_id, fragment))

    def body(self) -> dict[str, Any]:
        if not self.stopped:
            raise transport_error("network.body_interrupted", self._endpoint)
        body = dict(self.message)
        body["content"] = [self.blocks[i] for i in sorted(self.blocks)]
        body["usage"] = self.usage
        return body


class ClaudeMessages(SdkProvider):
    """A Claude model behind the Messages API, called with the official ``anthropic`` client
    (its own retries off).

    ``api_key_env`` names the environment variable holding the key (read at each call, never
    shown; unset, the call fails with ``model.credentials_missing`` naming it).
    ``api_key_env=None`` is for servers that need no key. ``params`` are Messages parameters
    (``max_tokens`` -- 4096 when not given --, ``temperature``, ``thinking`` …) sent as they
    are.
    """

    provider_format = PROVIDER
    source = "claude"

    def __init__(self, model: str, *, base_url: str | None = None,
                 api_key_env: str | None = "ANTHROPIC_API_KEY",
                 params: Mapping[str, Any] | None = None) -> None:
        super().__init__(model, base_url=base_url, api_key_env=api_key_env, params=params)

    def close_session(self, session_id: str) -> None:
        """Nothing is kept per session (the transcript carries the native blocks)."""

    def generate(self, request: ModelRequest, *, stream: bool,
                 on_delta: DeltaCallback | None, cancel: CancelToken,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> ModelResponse:
        """One Messages call for ``request`` (streamed when ``stream``)."""
        import anthropic

        if cancel.cancelled:
            raise ModelCancelled()
        key = read_api_key(self._api_key_env, PROVIDER_NAME)
        body = request_body(self._model, self._params, request, stream)
        endpoint = sanitize_endpoint((self._base_url or os.environ.get("ANTHROPIC_BASE_URL")
                                      or DEFAULT_BASE_URL).rstrip("/")
                                     + "/v1/messages")
        extra = {k: v for k, v in body.items()
                 if k not in ("model", "messages", "stream", "max_tokens")}

        def open_response(http: Any) -> Any:
            client = anthropic.Anthropic(api_key=key, base_url=self._base_url, max_retries=0,
                                         timeout=timeout_s, http_client=http)
            return client.messages.with_streaming_response.create(
                model=body["model"], messages=body["messages"],
                max_tokens=body["max_tokens"], stream=stream, extra_body=extra,
                timeout=timeout_s)

        def read(reader: BodyReader, status: int) -> dict[str, Any]:
            return (self._read_stream(reader, request, on_delta, endpoint) if stream
                    else self._read_json(reader, status))

        raw = exchange(self._pool, cancel, key=key, provider=PROVIDER_NAME, endpoint=endpoint,
                       timeout_s=timeout_s, errors=SdkErrors(anthropic.APIStatusError,
                                                             anthropic.APITimeoutError,
                                                             anthropic.APIConnectionError),
                       open_response=open_response, read=read)
        return self._decode(raw, request)

    @staticmethod
    def _read_json(reader: BodyReader, status: int) -> dict[str, Any]:
        body = parse_json_body(reader.read_all(), PROVIDER_NAME, status)
        failure = provider_error(PROVIDER_NAME, body)
        if failure is not None:
            raise failure
        if not isinstance(body, dict) or not isinstance(body.get("content"), list):
            raise invalid_response(f"{PROVIDER_NAME} returned a body without content blocks")
        return body

    @staticmethod
    def _read_stream(reader: BodyReader, request: ModelRequest,
                     on_delta: DeltaCallback | None, endpoint: str) -> dict[str, Any]:
        assembly = _Assembly(request, on_delta, endpoint)
        for event in sse_events(reader.chunks(),
                                lambda: transport_error("network.body_interrupted", endpoint)):
            assembly.add(event.event, json_event(event, PROVIDER_NAME))
            if assembly.stopped:
                break
        return assembly.body()

    def _decode(self, raw: dict[str, Any], request: ModelRequest) -> ModelResponse:
        stop = raw.get("stop_reason")
        details = raw.get("stop_details")
        explanation = details.get("explanation") if isinstance(details, dict) else None
        check_stop_reason(stop, explanation if isinstance(explanation, str) else None)
        blocks = [b for b in raw["content"] if isinstance(b, dict)]
        raw_calls = []
        for block in blocks:
            if block.get("type") == "tool_use":
                call: dict[str, Any] = {"type": "function",
                                        "function": {"name": block.get("name"),
                                                     "arguments": block.get("input")}}
                if block.get("id") is not None:
                    call["id"] = block.get("id")
                raw_calls.append(call)
        calls = decode_tool_calls(raw_calls, request)
        parts: list[Part] = []
        reasoning: list[str] = []
        for block in blocks:
            if block.get("type") == "thinking":
                text = str(block.get("thinking", ""))
                reasoning.append(text)
                parts.append(ReasoningPart(text=text, provider_metadata={
                    "provider": PROVIDER, "signature": block.get("signature")}))
            elif block.get("type") == "redacted_thinking":
                parts.append(ReasoningPart(text=None, provider_metadata={
                    "provider": PROVIDER, "redacted": True}))
        text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        if text:
            parts.append(TextPart(text=text))
        if blocks:
            parts.append(NativePart(provider=PROVIDER, value=copy.deepcopy(blocks)))
        parts.extend(ToolCallPart(call=call) for call in calls)
        # The calls come from the same blocks the native part keeps, so a tool-calling answer
        # always carries its native metadata (upstream's `model.native_metadata_lost` cannot
        # arise from this adapter).
        native_parts = 1 if blocks else 0
        response_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        model = raw.get("model") if isinstance(raw.get("model"), str) else self._model
        normalized: dict[str, Any] = {"role": "assistant", "content": text or None}
        if raw_calls:
            normalized["tool_calls"] = raw_calls
        if reasoning:
            normalized["reasoning_content"] = "\n\n".join(reasoning)
        normalized["native"] = {PROVIDER: copy.deepcopy(blocks)}
        message = ModelMessage(role="assistant", parts=parts, provider_metadata={
            "message": normalized, "responseId": response_id, "model": model})
        response = ModelResponse(
            message=message, tool_calls=calls, text=text,
            provider_metadata={"id": response_id, "model": model,
                               "usage": claude_usage(raw.get("usage")),
                               "chatCompletionSource": self.source,
                               "providerFormat": self.provider_format},
            raw_response=copy.deepcopy(raw))
        response.provider_state = next_provider_state(
            request, response, source=self.source, provider_format=self.provider_format,
            nativeContinuation={"provider": PROVIDER, "partCount": native_parts})
        return response
