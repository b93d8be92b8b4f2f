"""What every provider is: the :class:`ModelProvider` protocol and the streaming deltas.

A provider answers one :class:`~tavernlab.models.ModelRequest` at a time with the complete
:class:`~tavernlab.models.ModelResponse`. While it streams it calls ``on_delta`` with each
:class:`Delta` as it arrives (for the live view only: the loop always executes the final
complete response). It watches ``cancel`` and stops with
:class:`~tavernlab.models.ModelCancelled` when it is set, and it never retries by itself:
failures are raised as :class:`~tavernlab.models.ModelCallError` classified the way upstream
does, and the loop's retry policy decides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from tavernlab.cancel import CancelToken
from tavernlab.models._canonical import ModelRequest, ModelResponse


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the assistant's text."""

    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning."""

    text: str
    kind: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a tool call's arguments (only for advertised aliases)."""

    tool_call_index: int
    tool_id: str
    arguments_fragment: str
    kind: Literal["toolCall"] = "toolCall"


Delta = TextDelta | ReasoningDelta | ToolCallDelta
DeltaCallback = Callable[[Delta], None]

#: Default request timeout (upstream's 600 s; a Profile's ``run.modelTimeoutMs`` overrides it).
DEFAULT_TIMEOUT_S = 600.0


@runtime_checkable
class ModelProvider(Protocol):
    """A model behind one wire format.

    ``provider_format`` is upstream's adapter key (``openai_compatible``, ``claude_messages``,
    ``scripted``, ``recorded``); ``model_id`` the model's name as configured.
    """

    @property
    def provider_format(self) -> str:
        """Upstream's adapter key."""
        ...

    @property
    def model_id(self) -> str:
        """The configured model name."""
        ...

    def describe(self) -> dict[str, Any]:
        """The binding as records show it: ``{provider, model, baseUrl?, apiKeyEnv?, params?}``
        (the name of the credential's variable, never its value)."""
        ...

    def generate(self, request: ModelRequest, *, stream: bool,
                 on_delta: DeltaCallback | None, cancel: CancelToken,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> ModelResponse:
        """Answer ``request``; raise ``ModelCallError`` (classified) or ``ModelCancelled``."""
        ...

    def close_session(self, session_id: str) -> None:
        """Forget any state kept for ``session_id`` (``"<runId>:<invocationId>"``)."""
        ...


def next_provider_state(request: ModelRequest, response: ModelResponse, *, source: str,
                        provider_format: str, **extra: Any) -> dict[str, Any]:
    """The provider state after a call: the request's ``sessionId`` (and ``runId``,
    ``invocationId``) plus ``{chatCompletionSource, providerFormat, messageCursor,
    lastResponseId}`` and any adapter-specific keys (``nativeContinuation`` …)."""
    state: dict[str, Any] = {key: request.provider_state[key]
             for key in ("sessionId", "runId", "invocationId", "transport")
             if key in request.provider_state}
    state.update(chatCompletionSource=source, providerFormat=provider_format,
                 messageCursor=len(request.messages), lastResponseId=response.response_id)
    state.update(extra)
    return state
