"""The acceptance cases run through each kind of provider: ``scripted``, and the real
``openai`` and ``anthropic`` clients against a local server speaking their wire format
(:func:`model_servers.provider_for`). :class:`Sent` reads what a request held, whatever the
wire format, so one test states one case for the three."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from model_servers import provider_for

KINDS = ("scripted", "openai", "anthropic")


class Recording:
    """A provider that also notes the model sessions the loop closes."""

    def __init__(self, provider: Any) -> None:
        self._provider = provider
        self.closed_sessions: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    @property
    def provider_format(self) -> str:
        return str(self._provider.provider_format)

    @property
    def model_id(self) -> str:
        return str(self._provider.model_id)

    def describe(self) -> dict[str, Any]:
        return dict(self._provider.describe())

    def generate(self, request: Any, **options: Any) -> Any:
        return self._provider.generate(request, **options)

    def close_session(self, session_id: str) -> None:
        self.closed_sessions.append(session_id)
        self._provider.close_session(session_id)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content
                       if isinstance(b, dict) and b.get("type") == "text")
    return ""


@dataclass
class Sent:
    """One request as the provider sent it."""

    kind: str
    body: dict[str, Any]
    stream: bool | None

    @property
    def system(self) -> str:
        """The system prompt's text."""
        if self.kind == "anthropic":
            return _text(self.body.get("system"))
        first = self.body["messages"][0]
        assert first["role"] == "system"
        if self.kind == "scripted":
            return "".join(p.get("text", "") for p in first["parts"] if p["type"] == "text")
        return _text(first["content"])

    @property
    def tools(self) -> list[str]:
        """The aliases of the advertised tools, in order."""
        tools = self.body.get("tools") or []
        if self.kind == "scripted":
            return [t["modelAlias"] for t in tools]
        if self.kind == "openai":
            return [t["function"]["name"] for t in tools]
        return [t["name"] for t in tools]

    def texts(self, role: str) -> list[str]:
        """The text of every message of ``role`` (``user``, ``assistant``)."""
        found = []
        for message in self.body["messages"]:
            if message["role"] != role:
                continue
            if self.kind == "scripted":
                found.append("".join(p.get("text", "") for p in message["parts"]
                                     if p["type"] == "text"))
            else:
                found.append(_text(message.get("content")))
        return found

    @property
    def last_user_text(self) -> str:
        """The text of the request's last user turn (a nudge, a notice)."""
        return [t for t in self.texts("user") if t][-1]

    @property
    def tool_texts(self) -> list[str]:
        """What the model read for each tool result, in order."""
        found = []
        for message in self.body["messages"]:
            if self.kind == "scripted" and message["role"] == "tool":
                for part in message["parts"]:
                    result = part["result"]
                    found.append("## Tool error\n\n" + result["content"].strip()
                                 if result["isError"] else result["content"])
            elif self.kind == "openai" and message["role"] == "tool":
                found.append(message["content"])
            elif self.kind == "anthropic" and isinstance(message.get("content"), list):
                for block in message["content"]:
                    if block.get("type") == "tool_result":
                        found.append(_text(block["content"]))
        return found


class Model:
    """A provider of one kind serving scripted turns, and what it was sent."""

    def __init__(self, kind: str, turns: Sequence[Mapping[str, Any]],
                 stack: contextlib.ExitStack) -> None:
        self.kind = kind
        raw, self._bodies = provider_for(kind, turns, stack)
        self._raw = raw
        self.provider = Recording(raw)

    @property
    def sent(self) -> list[Sent]:
        """Every request, in order."""
        bodies = self._bodies()
        if self.kind == "scripted":
            flags: list[bool | None] = [r.stream for r in self._raw.requests]
        else:
            flags = [b.get("stream") for b in bodies]
        return [Sent(self.kind, body, flag) for body, flag in zip(bodies, flags, strict=True)]

    @property
    def closed_sessions(self) -> list[str]:
        """The sessions the loop closed."""
        return self.provider.closed_sessions
