"""The OpenAI-compatible provider: Chat Completions through the official ``openai`` client, to
any ``base_url`` (OpenAI, OpenRouter, DeepSeek, Groq, vLLM, llama.cpp's server, Ollama, LM
Studio).

The request is upstream's encoding of the canonical request: the messages (tool results as
``tool`` messages, the assistant's earlier turns replayed with their calls and reasoning), the
tools in the function form, ``tool_choice``, ``stream``, ``n: 1`` and the generation
parameters. The answer -- one JSON body, or SSE chunks assembled into the same message -- is
read by this module itself (bounded at 8 MiB, cancellable mid-read) and decoded with
upstream's rules.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from tavernlab.cancel import CancelToken
from tavernlab.models._canonical import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelTool,
    ToolInvocation,
    ToolResultPart,
)
from tavernlab.models._decode import decode_openai_message
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
from tavernlab.models._tools import openai_tool

PROVIDER_NAME = "OpenAI-compatible"
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def compact_json(value: Any) -> str:
    """JSON without spaces, non-ASCII kept (what upstream sends as a call's arguments)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _alias_for(call_id: str, tool_id: str, aliases: Mapping[str, str],
               tools: list[ModelTool]) -> str:
    if call_id in aliases:
        return aliases[call_id]
    for tool in tools:
        if tool.tool_id == tool_id:
            return tool.model_alias
    return tool_id.split(":", 1)[-1].replace(".", "_")


def _encode_call(call: ToolInvocation, tools: list[ModelTool]) -> dict[str, Any]:
    alias = call.model_alias or _alias_for(call.call_id, call.tool_id, {}, tools)
    encoded: dict[str, Any] = {
        "id": call.call_id, "type": "function",
        "function": {"name": alias, "arguments": compact_json(call.arguments)
                     if isinstance(call.arguments, dict) else "{}"}}
    signature = call.provider_metadata.get("signature")
    if signature is not None:
        encoded["signature"] = signature
    raw = call.provider_metadata.get("raw")
    if isinstance(raw, dict) and raw.get("extra_content") is not None:
        encoded["extra_content"] = raw["extra_content"]
    return encoded


def encode_messages(messages: list[ModelMessage], tools: list[ModelTool]) -> list[dict[str, Any]]:
    """The canonical transcript as Chat Completions messages."""
    aliases: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            calls = message.tool_calls
            for call in calls:
                aliases[call.call_id] = call.model_alias or _alias_for(
                    call.call_id, call.tool_id, aliases, tools)
            encoded: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if calls:
                encoded["tool_calls"] = [_encode_call(call, tools) for call in calls]
            if message.reasoning:
                encoded["reasoning_content"] = message.reasoning
            raw = message.provider_metadata.get("message")
            if isinstance(raw, dict):
                for key in ("reasoning", "reasoning_details"):
                    if raw.get(key) is not None:
                        encoded[key] = raw[key]
            out.append(encoded)
        elif message.role == "tool":
            for part in message.parts:
                if isinstance(part, ToolResultPart):
                    result = part.result
                    content = ("## Tool error\n\n" + result.content.strip()
                               if result.is_error else result.content)
                    out.append({"role": "tool", "tool_call_id": result.call_id,
                                "name": _alias_for(result.call_id, result.tool_id, aliases,
                                                   tools),
                                "content": content})
        else:
            out.append({"role": message.role, "content": message.text})
    return out


def request_body(model: str, params: Mapping[str, Any], request: ModelRequest,
                 stream: bool) -> dict[str, Any]:
    """The JSON body of the Chat Completions request for ``request``.

    The provider's ``params`` come first, the request's ``payload`` (less ``model``) over
    them; the model is always the provider's own."""
    body: dict[str, Any] = dict(params)
    body.update({k: v for k, v in request.payload.items() if k != "model" and v is not None})
    body["model"] = model
    body["messages"] = encode_messages(request.messages, request.tools)
    if request.tools:
        body["tools"] = [openai_tool(tool) for tool in request.tools]
        body["tool_choice"] = request.tool_choice
    body["stream"] = stream
    body["n"] = 1
    if stream:
        body.setdefault("stream_options", {"include_usage": True})
    else:
        body.pop("stream_options", None)
    return body


class _Assembly:
    """The streamed chunks put back together into one Chat Completions message."""

    def __init__(self, request: ModelRequest, on_delta: DeltaCallback | None) -> None:
        self._request = request
        self._on_delta = on_delta
        self.id: str | None = None
        self.model: str | None = None
        self.created: Any = None
        self.usage: Any = None
        self.finish_reason: Any = None
        self.role = "assistant"
        self.content: list[str] = []
        self.reasoning: dict[str, list[str]] = {}
        self.calls: dict[int, dict[str, Any]] = {}
        self.extra: dict[str, Any] = {}

    def _emit(self, delta: Any) -> None:
        if self._on_delta is not None:
            self._on_delta(delta)

    def add(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            raise invalid_response(f"{PROVIDER_NAME} sent a stream chunk that is not an object")
        self.id = self.id or chunk.get("id")
        self.model = self.model or chunk.get("model")
        self.created = self.created if self.created is not None else chunk.get("created")
        if chunk.get("usage") is not None:
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason") is not None:
                self.finish_reason = choice["finish_reason"]
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                continue
            self._add_delta(delta)

    def _add_delta(self, delta: dict[str, Any]) -> None:
        if isinstance(delta.get("role"), str):
            self.role = delta["role"]
        for key in ("reasoning_content", "reasoning"):
            text = delta.get(key)
            if isinstance(text, str) and text:
                self.reasoning.setdefault(key, []).append(text)
                self._emit(ReasoningDelta(text))
        text = delta.get("content")
        if isinstance(text, str) and text:
            self.content.append(text)
            self._emit(TextDelta(text))
        if delta.get("refusal") is not None:
            self.extra["refusal"] = (self.extra.get("refusal") or "") + str(delta["refusal"])
        for raw in delta.get("tool_calls") or []:
            if not isinstance(raw, dict):
                continue
            index = raw.get("index")
            if not isinstance(index, int):  # servers that leave it out: a new id starts a call
                index = len(self.calls) if raw.get("id") or not self.calls else max(self.calls)
            call = self.calls.setdefault(index, {"type": "function",
                                                      "function": {"name": "", "arguments": ""}})
            if raw.get("id"):
                call["id"] = raw["id"]
            if raw.get("type"):
                call["type"] = raw["type"]
            function = raw.get("function") or {}
            if isinstance(function.get("name"), str):
                call["function"]["name"] += function["name"]
            fragment = function.get("arguments")
            if isinstance(fragment, str) and fragment:
                call["function"]["arguments"] += fragment
                tool = self._request.tool_for_alias(call["function"]["name"].strip())
                if tool is not None:
                    self._emit(ToolCallDelta(index, tool.tool_id, fragment))
            for key in ("signature", "extra_content"):
                if raw.get(key) is not None:
                    call[key] = raw[key]

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": self.role,
                                   "content": "".join(self.content) if self.content else None}
        if self.calls:
            message["tool_calls"] = [_ordered_call(self.calls[i]) for i in sorted(self.calls)]
        for key, pieces in self.reasoning.items():
            message[key] = "".join(pieces)
        message.update(self.extra)
        return message

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"id": self.id, "object": "chat.completion",
                                "created": self.created, "model": self.model,
                                "choices": [{"index": 0, "message": self.message(),
                                             "finish_reason": self.finish_reason}]}
        if self.usage is not None:
            body["usage"] = self.usage
        return body


def _ordered_call(call: dict[str, Any]) -> dict[str, Any]:
    """A streamed call with its keys in the order of a JSON answer (``id, type, function``)."""
    first: dict[str, Any] = {k: call[k] for k in ("id", "type", "function") if k in call}
    return {**first, **{k: v for k, v in call.items() if k not in first}}


class OpenAICompatible(SdkProvider):
    """A model behind a Chat Completions endpoint, called with the official ``openai``
    client (its own retries off: the loop's retry policy is the only one).

    ``api_key_env`` names the environment variable holding the key; it is read at each call
    and never shown (``describe()`` and errors name the variable only); when it is not set
    the call fails with ``model.credentials_missing`` (not retried) naming the variable.
    ``api_key_env=None`` is for local servers that need no key. ``params`` are generation parameters
    (``temperature``, ``max_tokens``, ``reasoning_effort`` …) sent as they are.
    """

    provider_format = "openai_compatible"

    def __init__(self, model: str, *, base_url: str | None = None,
                 api_key_env: str | None = "OPENAI_API_KEY",
                 params: Mapping[str, Any] | None = None) -> None:
        super().__init__(model, base_url=base_url, api_key_env=api_key_env, params=params)

    @property
    def source(self) -> str:
        """Upstream's ``chatCompletionSource``: ``openai`` for OpenAI's own endpoint,
        ``openrouter`` for OpenRouter, ``custom`` for any other server."""
        url = (self._base_url or DEFAULT_BASE_URL).lower()
        if "openrouter.ai" in url:
            return "openrouter"
        return "openai" if "api.openai.com" in url else "custom"

    def close_session(self, session_id: str) -> None:
        """Nothing is kept per session (Chat Completions is stateless)."""

    def generate(self, request: ModelRequest, *, stream: bool,
                 on_delta: DeltaCallback | None, cancel: CancelToken,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> ModelResponse:
        """One Chat Completions call for ``request`` (streamed when ``stream``)."""
        import openai

        if cancel.cancelled:
            raise ModelCancelled()
        key = read_api_key(self._api_key_env, PROVIDER_NAME)
        body = request_body(self._model, self._params, request, stream)
        endpoint = sanitize_endpoint((self._base_url or os.environ.get("OPENAI_BASE_URL")
                                      or DEFAULT_BASE_URL).rstrip("/")
                                     + "/chat/completions")
        extra = {k: v for k, v in body.items() if k not in ("model", "messages", "stream")}

        def open_response(http: Any) -> Any:
            client = openai.OpenAI(api_key=key, base_url=self._base_url, max_retries=0,
                                   timeout=timeout_s, http_client=http)
            return client.chat.completions.with_streaming_response.create(
                model=body["model"], messages=body["messages"], stream=stream,
                extra_body=extra, timeout=timeout_s)

        def read(reader: BodyReader, status: int) -> dict[str, Any]:
            return (self._read_stream(reader, request, on_delta, endpoint) if stream
                    else self._read_json(reader, status))

        raw = exchange(self._pool, cancel, key=key, provider=PROVIDER_NAME, endpoint=endpoint,
                       timeout_s=timeout_s, errors=SdkErrors(openai.APIStatusError,
                                                             openai.APITimeoutError,
                                                             openai.APIConnectionError),
                       open_response=open_response, read=read)
        return self._decode(raw, request)

    @staticmethod
    def _read_json(reader: BodyReader, status: int) -> dict[str, Any]:
        body = parse_json_body(reader.read_all(), PROVIDER_NAME, status)
        failure = provider_error(PROVIDER_NAME, body)
        if failure is not None:
            raise failure
        if not isinstance(body, dict) or not isinstance(body.get("choices"), list) \
                or not body["choices"]:
            raise invalid_response(f"{PROVIDER_NAME} returned a body without choices")
        return body

    @staticmethod
    def _read_stream(reader: BodyReader, request: ModelRequest,
                     on_delta: DeltaCallback | None, endpoint: str) -> dict[str, Any]:
        assembly = _Assembly(request, on_delta)
        done = False
        for event in sse_events(reader.chunks(),
                                lambda: transport_error("network.body_interrupted", endpoint)):
            if event.data.strip() == "[DONE]":
                done = True
                break
            chunk = json_event(event, PROVIDER_NAME)
            failure = provider_error(PROVIDER_NAME, chunk)
            if failure is not None:
                raise failure
            assembly.add(chunk)
        if not done and assembly.finish_reason is None:
            raise transport_error("network.body_interrupted", endpoint)
        return assembly.body()

    def _decode(self, raw: dict[str, Any], request: ModelRequest) -> ModelResponse:
        choice = raw["choices"][0] if isinstance(raw["choices"][0], dict) else {}
        response = decode_openai_message(
            choice.get("message"), choice.get("finish_reason"), request,
            response_id=raw.get("id"), model=raw.get("model") or self._model,
            usage=raw.get("usage"), provider_format=self.provider_format, source=self.source,
            raw_response=raw)
        response.provider_state = next_provider_state(
            request, response, source=self.source, provider_format=self.provider_format)
        return response
