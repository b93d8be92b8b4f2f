"""The scripted model: a list of answers in upstream's fixture shape, served in order.

Each entry is either a Chat Completions body (what upstream's contract tests script)::

    {"choices": [{"message": {"role": "assistant", "content": "I will write the artifact.",
                              "tool_calls": [{"id": "call_write", "type": "function",
                                              "function": {"name": "workspace_write_file",
                                                           "arguments": "{...}"}}]},
                  "finish_reason": "tool_calls"}],
     "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

or a scripted failure ``{"error": {...}}``: ``{"status": 429, "message": …}`` (an HTTP
status, classified as a provider's would be), ``{"network": "network.timeout", "message": …}``
(a transport failure) or ``{"code": "model.invalid_tool_call", "message": …}`` (a contract
error, never retried). An entry may add ``"delayMs"``: the pause before each streamed piece,
so that a live view and cancellation can be seen and tested. Deterministic: the same script
gives the same answers, so a scripted run replays byte for byte.

With ``stream=True`` the text (and ``reasoning_content``) is delivered in pieces through
``on_delta`` before the complete answer is returned, as a streaming provider would.
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tavernlab.cancel import CancelToken
from tavernlab.models._canonical import ModelRequest, ModelResponse
from tavernlab.models._decode import decode_openai_message
from tavernlab.models._errors import (
    ModelCallError,
    ModelCancelled,
    contract_error,
    network_error,
    status_error,
)
from tavernlab.models._provider import (
    DEFAULT_TIMEOUT_S,
    DeltaCallback,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    next_provider_state,
)

_PIECE = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True, slots=True)
class ScriptedRequest:
    """One request the scripted model received (tests read these)."""

    request: ModelRequest
    stream: bool


class Scripted:
    """A model that answers with ``responses``, one per request, in order."""

    provider_format = "scripted"
    source = "scripted"

    def __init__(self, responses: Iterable[Mapping[str, Any]], *, model: str = "scripted"
                 ) -> None:
        self._responses = [copy.deepcopy(dict(r)) for r in responses]
        for index, entry in enumerate(self._responses):
            if "choices" not in entry and "error" not in entry:
                raise ValueError(f"scripted response {index} has neither `choices` nor `error`")
        self._model = model
        self._lock = threading.Lock()
        self._next = 0
        self.requests: list[ScriptedRequest] = []
        self.closed_sessions: list[str] = []

    @property
    def model_id(self) -> str:
        """The scripted model's name (``scripted`` unless given)."""
        return self._model

    @property
    def remaining(self) -> int:
        """How many scripted answers are left."""
        return len(self._responses) - self._next

    def describe(self) -> dict[str, Any]:
        """``{provider: "scripted", model, responses: <count>}``."""
        return {"provider": "scripted", "model": self._model, "responses": len(self._responses)}

    def close_session(self, session_id: str) -> None:
        """Note that the loop closed ``session_id``."""
        self.closed_sessions.append(session_id)

    def generate(self, request: ModelRequest, *, stream: bool,
                 on_delta: DeltaCallback | None, cancel: CancelToken,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> ModelResponse:
        """The next scripted answer (or its scripted failure)."""
        with self._lock:
            self.requests.append(ScriptedRequest(request.model_copy(deep=True), stream))
            if self._next >= len(self._responses):
                raise ModelCallError(
                    "agent.internal_error",
                    f"scripted model has no response left for request {self._next + 1} "
                    f"({len(self._responses)} scripted)", kind="internal")
            entry = self._responses[self._next]
            self._next += 1
        if cancel.cancelled:
            raise ModelCancelled()
        delay = float(entry.get("delayMs", 0)) / 1000.0
        if "error" in entry:
            self._pause(delay, cancel)
            raise _scripted_error(entry["error"])
        choice = (entry.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        if stream:
            self._stream(message, request, delay, on_delta, cancel)
        else:
            self._pause(delay, cancel)
        response = decode_openai_message(
            copy.deepcopy(message), choice.get("finish_reason"), request,
            response_id=entry.get("id"), model=entry.get("model", self._model),
            usage=entry.get("usage"), provider_format=self.provider_format, source=self.source,
            raw_response=copy.deepcopy(entry))
        response.provider_state = next_provider_state(
            request, response, source=self.source, provider_format=self.provider_format)
        return response

    def _stream(self, message: Mapping[str, Any], request: ModelRequest, delay: float,
                on_delta: DeltaCallback | None, cancel: CancelToken) -> None:
        pieces: list[Any] = []
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str):
            pieces += [ReasoningDelta(p) for p in _PIECE.findall(reasoning)]
        content = message.get("content")
        if isinstance(content, str):
            pieces += [TextDelta(p) for p in _PIECE.findall(content)]
        for index, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") if isinstance(call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            tool = request.tool_for_alias(name.strip()) if isinstance(name, str) else None
            args = function.get("arguments") if isinstance(function, dict) else None
            if tool is not None and isinstance(args, str):
                pieces.append(ToolCallDelta(index, tool.tool_id, args))
        for piece in pieces:
            self._pause(delay, cancel)
            if on_delta is not None:
                on_delta(piece)
        self._pause(0, cancel)

    @staticmethod
    def _pause(delay: float, cancel: CancelToken) -> None:
        if (delay > 0 and cancel.wait(delay)) or cancel.cancelled:
            raise ModelCancelled()

    def __repr__(self) -> str:
        return f"<Scripted {self._next}/{len(self._responses)} answers served>"


def _scripted_error(spec: Any) -> ModelCallError:
    if not isinstance(spec, Mapping):
        raise ValueError("a scripted `error` must be an object")
    message = str(spec.get("message", "scripted failure"))
    if "status" in spec:
        return status_error(int(spec["status"]), message)
    if "network" in spec:
        return network_error(str(spec["network"]), message)
    if "code" in spec:
        return contract_error(str(spec["code"]), message)
    raise ValueError("a scripted `error` needs `status`, `network` or `code`")
