"""The canonical model request and response every provider converts to and from.

These are upstream's agent model types (``AgentModelMessage``, ``AgentModelRequest``,
``AgentModelResponse`` …) with their camelCase JSON shape, so that what the loop stores under
``model-responses/`` and in ``input/`` reads exactly as upstream's records do. A provider turns
a :class:`ModelRequest` into its SDK's call and the answer back into a :class:`ModelResponse`;
it never sees a run.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from tavernlab.ondisk import Model

Role = Literal["system", "developer", "user", "assistant", "tool"]


class ToolInvocation(Model):
    """One tool call the model asked for.

    ``arguments`` is the decoded JSON object, or the raw text the model sent when it was not a
    JSON object (kept verbatim for the ``tool-args/`` record; replayed to the provider as
    ``{}``). ``providerMetadata`` is ``{modelAlias, signature, raw}``.
    """

    call_id: str
    tool_id: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    provider_metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def arguments_valid(self) -> bool:
        """Whether the model's arguments decoded to a JSON object."""
        return isinstance(self.arguments, dict)

    @property
    def model_alias(self) -> str:
        """The function name the model used for this call."""
        return str(self.provider_metadata.get("modelAlias", ""))


class ToolResult(Model):
    """A tool call's outcome as the loop stores it and hands it back to the model."""

    call_id: str
    tool_id: str
    content: str
    structured: Any = None
    is_error: bool = False
    error_code: str | None = None
    resource_refs: list[str] = Field(default_factory=list)

    @property
    def model_text(self) -> str:
        """The text the model receives for this result: the content of a success, and
        ``## Tool error`` then a blank line and the trimmed content for an error
        (``structured``, ``errorCode`` and ``resourceRefs`` stay in the record)."""
        return "## Tool error\n\n" + self.content.strip() if self.is_error else self.content


class TextPart(Model):
    """Plain text of a message."""

    type: Literal["text"] = "text"
    text: str


class ReasoningPart(Model):
    """The model's reasoning (thinking); ``providerMetadata`` keeps native signatures."""

    type: Literal["reasoning"] = "reasoning"
    text: str | None = None
    provider_metadata: dict[str, Any] = Field(default_factory=dict)


class ToolCallPart(Model):
    """A tool call inside an assistant message."""

    type: Literal["toolCall"] = "toolCall"
    call: ToolInvocation


class ToolResultPart(Model):
    """A tool result inside a ``tool`` message."""

    type: Literal["toolResult"] = "toolResult"
    result: ToolResult


class NativePart(Model):
    """A provider-private block (Claude content blocks with thinking signatures, …), kept
    opaque and sent back only to the provider that produced it."""

    type: Literal["native"] = "native"
    provider: str
    value: Any = None


Part = Annotated[TextPart | ReasoningPart | ToolCallPart | ToolResultPart | NativePart,
                 Field(discriminator="type")]


class ModelMessage(Model):
    """One message of the transcript."""

    role: Role
    parts: list[Part] = Field(default_factory=list)
    provider_metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of_text(cls, role: Role, text: str) -> ModelMessage:
        """A message holding one text part."""
        return cls(role=role, parts=[TextPart(text=text)])

    @property
    def text(self) -> str:
        """The message's text parts joined (empty when it has none)."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def reasoning(self) -> str:
        """The message's reasoning parts joined by a blank line."""
        return "\n\n".join(p.text for p in self.parts
                           if isinstance(p, ReasoningPart) and p.text)

    @property
    def tool_calls(self) -> list[ToolInvocation]:
        """The tool calls of an assistant message, in order."""
        return [p.call for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def native(self) -> list[NativePart]:
        """The provider-private parts."""
        return [p for p in self.parts if isinstance(p, NativePart)]


class ModelTool(Model):
    """A tool as the model is shown it: its id, the alias it is called by, the description and
    the JSON Schema of its arguments."""

    tool_id: str
    model_alias: str
    description: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=dict)


class ModelRequest(Model):
    """What the loop asks a provider for.

    ``payload`` holds the generation parameters (``model``, ``temperature``, ``max_tokens``,
    ``reasoning_effort`` …) in the provider-neutral names of the prompt snapshot;
    ``providerState`` is ``{sessionId: "<runId>:<invocationId>", runId, invocationId}`` plus
    what the provider added after earlier calls. ``toolChoice`` is ``"auto"`` in every request
    the loop makes.
    """

    payload: dict[str, Any] = Field(default_factory=dict)
    messages: list[ModelMessage] = Field(default_factory=list)
    tools: list[ModelTool] = Field(default_factory=list)
    tool_choice: Any = "auto"
    provider_state: dict[str, Any] = Field(default_factory=dict)

    def tool_for_alias(self, alias: str) -> ModelTool | None:
        """The advertised tool called ``alias`` (``None`` when the model made it up)."""
        for tool in self.tools:
            if tool.model_alias == alias:
                return tool
        return None


class Usage(Model):
    """Token counts of one model call, as the provider reported them (``None`` = not said)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Usage(**{name: add(getattr(self, name), getattr(other, name))
                        for name in Usage.model_fields})


class ModelResponse(Model):
    """A provider's complete answer.

    ``message`` is the full assistant message (always appended to the transcript);
    ``toolCalls`` its decoded calls; ``text`` its text. ``providerMetadata`` is ``{id, model,
    usage, chatCompletionSource, providerFormat}``; ``message.providerMetadata`` is
    ``{message: <normalized provider message>, responseId, model}``; ``rawResponse`` the
    normalized raw response.
    """

    message: ModelMessage
    tool_calls: list[ToolInvocation] = Field(default_factory=list)
    text: str = ""
    provider_metadata: dict[str, Any] = Field(default_factory=dict)
    raw_response: Any = None
    #: The provider state for the next request (not part of upstream's stored response).
    provider_state: dict[str, Any] = Field(default_factory=dict, exclude=True)

    @property
    def usage(self) -> Usage:
        """The call's token usage (from ``providerMetadata.usage``)."""
        raw = self.provider_metadata.get("usage")
        return Usage.model_validate(raw) if isinstance(raw, dict) else Usage()

    @property
    def response_id(self) -> str | None:
        """The provider's id of this response, when it gave one."""
        value = self.provider_metadata.get("id")
        return value if isinstance(value, str) else None

    @property
    def model(self) -> str | None:
        """The model that answered, as the provider named it."""
        value = self.provider_metadata.get("model")
        return value if isinstance(value, str) else None
