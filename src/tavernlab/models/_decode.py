"""Decoding an OpenAI-shaped assistant message into the canonical response.

The OpenAI-compatible provider and the scripted one share this: the model's message is
``{role, content, tool_calls:[{id, type, function:{name, arguments}}], reasoning_content?}``
and its ``finish_reason``. The rules are upstream's:

* every call needs a non-blank ``id`` and ``function.name`` (``model.invalid_tool_call``);
* the name must be an advertised alias (``model.unknown_tool_call: model returned
  unadvertised tool alias `<name>```); the whole response is rejected before any call runs;
* arguments (``function.arguments`` or ``function.args``): absent, ``null``, blank or the text
  ``"null"`` → ``{}``; a JSON object (or a string holding one) → that object; anything else is
  *invalid*: kept verbatim (as text) for the record and answered with
  ``tool.invalid_arguments`` by the loop;
* ``finish_reason`` ``refusal`` → ``model.provider_refusal``; ``length``, ``max_tokens``,
  ``model_context_window_exceeded`` → ``model.output_truncated`` (neither is retried).
"""

from __future__ import annotations

import json
from typing import Any

from tavernlab.models._canonical import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolInvocation,
    Usage,
)
from tavernlab.models._errors import contract_error

TRUNCATION_REASONS = frozenset({"length", "max_tokens", "model_context_window_exceeded"})


def decode_arguments(raw: Any) -> dict[str, Any] | str:
    """The call's arguments as an object, or the verbatim text when they are not one."""
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        if not raw.strip() or raw.strip() == "null":
            return {}
        try:
            value = json.loads(raw)
        except ValueError:
            return raw
        return value if isinstance(value, dict) else raw
    return json.dumps(raw, ensure_ascii=False)


def check_stop_reason(reason: Any, explanation: str | None = None) -> None:
    """Refuse a response the provider stopped early or refused."""
    if reason == "refusal":
        raise contract_error("model.provider_refusal",
                             explanation or "provider refused to complete the Agent turn")
    if reason in TRUNCATION_REASONS:
        raise contract_error("model.output_truncated",
                             f"provider stopped before completing the Agent turn ({reason})")


def decode_tool_calls(raw_calls: Any, request: ModelRequest) -> list[ToolInvocation]:
    """The canonical calls of an OpenAI-shaped ``tool_calls`` list, in order."""
    if raw_calls is None:
        return []
    if not isinstance(raw_calls, list):
        raise contract_error("model.invalid_tool_call", "tool_calls must be a list")
    calls: list[ToolInvocation] = []
    for index, raw in enumerate(raw_calls):
        if not isinstance(raw, dict):
            raise contract_error("model.invalid_tool_call", f"tool call {index} is not an object")
        function = raw.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise contract_error("model.invalid_tool_call",
                                 f"tool call {index} is missing function.name")
        call_id = raw.get("id")
        if not isinstance(call_id, str) or not call_id.strip():
            raise contract_error("model.invalid_tool_call", f"tool call {index} is missing id")
        alias = name.strip()
        tool = request.tool_for_alias(alias)
        if tool is None:
            raise contract_error("model.unknown_tool_call",
                                 f"model returned unadvertised tool alias `{alias}`")
        assert isinstance(function, dict)
        raw_args = function.get("arguments", function.get("args"))
        calls.append(ToolInvocation(
            call_id=call_id.strip(), tool_id=tool.tool_id,
            arguments=decode_arguments(raw_args),
            provider_metadata={"modelAlias": alias, "signature": raw.get("signature"),
                               "raw": raw}))
    return calls


def openai_usage(raw: Any) -> dict[str, Any] | None:
    """Chat Completions' ``usage`` in the canonical names (``None`` when absent)."""
    if not isinstance(raw, dict):
        return None
    prompt = raw.get("prompt_tokens_details") or {}
    completion = raw.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=raw.get("prompt_tokens"), output_tokens=raw.get("completion_tokens"),
        total_tokens=raw.get("total_tokens"),
        cached_input_tokens=prompt.get("cached_tokens") if isinstance(prompt, dict) else None,
        reasoning_tokens=(completion.get("reasoning_tokens")
                          if isinstance(completion, dict) else None),
    ).model_dump(by_alias=True)


def decode_openai_message(message: Any, finish_reason: Any, request: ModelRequest, *,
                          response_id: str | None, model: str | None, usage: Any,
                          provider_format: str, source: str,
                          raw_response: Any) -> ModelResponse:
    """The canonical response of one OpenAI-shaped choice."""
    if not isinstance(message, dict):
        raise contract_error("model.invalid_tool_call", "response has no assistant message")
    check_stop_reason(finish_reason, message.get("refusal") if isinstance(
        message.get("refusal"), str) else None)
    calls = decode_tool_calls(message.get("tool_calls"), request)
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    reasoning = message.get("reasoning_content")
    if not isinstance(reasoning, str) or not reasoning:
        reasoning = message.get("reasoning")  # the field OpenRouter, Ollama … send
    parts: list[Part] = []
    if isinstance(reasoning, str) and reasoning:
        parts.append(ReasoningPart(text=reasoning))
    if text:
        parts.append(TextPart(text=text))
    parts.extend(ToolCallPart(call=call) for call in calls)
    assistant = ModelMessage(role="assistant", parts=parts, provider_metadata={
        "message": message, "responseId": response_id, "model": model})
    return ModelResponse(
        message=assistant, tool_calls=calls, text=text,
        provider_metadata={"id": response_id, "model": model, "usage": openai_usage(usage),
                           "chatCompletionSource": source, "providerFormat": provider_format},
        raw_response=raw_response)
