"""The tool definitions each provider sends: what a model is shown of the tools it may call.

* ``openai_compatible`` (and ``scripted``, ``recorded``, which speak upstream's OpenAI-shaped
  fixture format): ``{"type": "function", "function": {"name": <alias>, "description",
  "parameters": <schema>}}``;
* ``claude_messages``: ``{"name": <alias>, "description", "input_schema": <schema>}`` with
  ``$schema`` and ``$id`` removed at every depth;
* ``canonical``: the :class:`ModelTool` objects as JSON (camelCase).

A tool without a description is sent without the ``description`` key.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tavernlab.models._canonical import ModelTool

_STRIPPED_SCHEMA_KEYS = ("$schema", "$id")
_OPENAI_FORMATS = ("openai_compatible", "scripted", "recorded")


def strip_schema(schema: Any) -> Any:
    """``schema`` without ``$schema`` and ``$id`` (at any depth), which Claude refuses."""
    if isinstance(schema, dict):
        return {k: strip_schema(v) for k, v in schema.items() if k not in _STRIPPED_SCHEMA_KEYS}
    if isinstance(schema, list):
        return [strip_schema(v) for v in schema]
    return schema


def openai_tool(tool: ModelTool) -> dict[str, Any]:
    """A tool in the Chat Completions function form."""
    function: dict[str, Any] = {"name": tool.model_alias}
    if tool.description is not None:
        function["description"] = tool.description
    function["parameters"] = tool.input_schema
    return {"type": "function", "function": function}


def claude_tool(tool: ModelTool) -> dict[str, Any]:
    """A tool in the Messages form."""
    out: dict[str, Any] = {"name": tool.model_alias}
    if tool.description is not None:
        out["description"] = tool.description
    out["input_schema"] = strip_schema(tool.input_schema)
    return out


def tool_definitions(tools: Iterable[ModelTool], provider_format: str) -> list[dict[str, Any]]:
    """The tools as the provider of ``provider_format`` sends them (see the module's text);
    an unknown format is a ``ValueError``."""
    tools = list(tools)
    if provider_format in _OPENAI_FORMATS:
        return [openai_tool(tool) for tool in tools]
    if provider_format == "claude_messages":
        return [claude_tool(tool) for tool in tools]
    if provider_format == "canonical":
        return [tool.model_dump(by_alias=True, mode="json") for tool in tools]
    raise ValueError(f"unknown provider format {provider_format!r}; expected one of "
                     "openai_compatible, claude_messages, scripted, recorded, canonical")
