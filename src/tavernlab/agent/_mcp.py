"""External tools over MCP: the servers a Profile names, their tools in the tool snapshot,
and each call routed to its server.

A Profile's ``mcp.servers`` maps a server name to a stdio command (``command``, ``args``,
``env``, ``cwd``) or a streamable-HTTP ``url`` on this machine. The loop connects to a server
the first time an invocation's Profile names it (through
:class:`~tavernlab.mcp_client.McpConnection`, the official ``mcp`` client) and lists its
tools at the start of every invocation; every connection the run opened is closed when the
run ends, which for a stdio server ends its process.

Each listed tool is declared as a :class:`~tavernlab.workspace.tools.ToolSpec`, the same
contract as a builtin's: an external tool (``builtin=False``) whose id is
``mcp/<server>/<tool>`` and whose declared alias is ``mcp__<server>__<tool>`` with both
segments normalized (runs of characters outside ``[A-Za-z0-9-]`` become one ``_``, trimmed),
the whole cut to 64 bytes; the tool snapshot makes it unique with ``__2``, ``__3`` … (a
builtin alias is never replaced). The description and input schema are the server's; the
server's ``toolDescriptions`` in the Profile replace them, and
``tools.toolDescriptions[<tool id>]`` wins over both (the declaration holds the result). Its
annotations are the server's. Arguments are limited to the names the schema's ``properties``
declare.

A call goes through the loop's one dispatch path like any builtin's (arguments file, events,
budgets, stored result, externalization of a long result). The server's answer is rendered
as Markdown text (text blocks, then ``## Details`` with the structured content when there is
any; an empty answer reads ``The tool completed without returning content.``); an error
result is a recoverable ``mcp.tool_error``. A call whose outcome cannot be known (the server
went away while it ran, or sent no answer within ``mcp.callTimeoutMs``, default 120 s) fails
the run with ``mcp.call_outcome_unknown``; cancelling the run cancels a started call at the
server.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import threading
from typing import Any

from tavernlab.agent._failure import LoopError
from tavernlab.errors import ToolError
from tavernlab.mcp_client import (
    McpCallCancelled,
    McpCallTimeout,
    McpConnectError,
    McpConnection,
    StdioServer,
)
from tavernlab.workspace.roots import McpServerSettings, Profile
from tavernlab.workspace.tools import Arguments, ToolResult, ToolSpec

#: The prefix of every MCP tool id.
MCP_PREFIX = "mcp/"
#: The longest model alias, in bytes.
MAX_ALIAS_BYTES = 64
EMPTY_RESULT = "The tool completed without returning content."
#: The JSON-RPC code the ``mcp`` client reports when the connection closed under a request.
CONNECTION_CLOSED = -32000

_SEGMENT = re.compile(r"[^A-Za-z0-9-]+")
_ALIAS = re.compile(r"[^A-Za-z0-9_-]")


def segment(text: str) -> str:
    """One alias segment: runs outside ``[A-Za-z0-9-]`` as one ``_``, trimmed of ``_``."""
    return _SEGMENT.sub("_", text).strip("_") or "_"


def mcp_alias(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, normalized and cut to 64 bytes (before uniqueness)."""
    alias = _ALIAS.sub("_", f"mcp__{segment(server)}__{segment(tool)}")
    return alias[:MAX_ALIAS_BYTES]


def unique_alias(base: str, taken: set[str]) -> str:
    """``base``, or ``base__2``, ``base__3`` … (cut so the whole stays within 64 bytes), the
    first not in ``taken``."""
    if base not in taken:
        return base
    number = 2
    while True:
        suffix = f"__{number}"
        alias = base[:MAX_ALIAS_BYTES - len(suffix)] + suffix
        if alias not in taken:
            return alias
        number += 1


def tool_id_of(server: str, tool: str) -> str:
    """``mcp/<server>/<tool>``."""
    return f"{MCP_PREFIX}{server}/{tool}"


def _apply_override(description: str, schema: dict[str, Any], override: Any
                    ) -> str:
    if override is None:
        return description
    if override.description is not None:
        description = override.description
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key, text in override.properties.items():
            if isinstance(properties.get(key), dict):
                properties[key]["description"] = text
    return description


def render(result: Any) -> ToolResult:
    """The server's ``CallToolResult`` as the result a model reads."""
    texts: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(str(block.text))
        elif kind in ("image", "audio"):
            texts.append(f"[{kind}: {getattr(block, 'mime_type', '')}, "
                         f"{len(getattr(block, 'data', '') or '')} base64 characters]")
        elif kind == "resource_link":
            texts.append(f"[resource: {block.uri}]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            texts.append(text if isinstance(text, str) else f"[resource: {resource.uri}]")
    body = "\n\n".join(texts)
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        details = json.dumps(structured, indent=2, ensure_ascii=False)
        body = (body + "\n\n" if body else "") + f"## Details\n\n```json\n{details}\n```"
    if not body.strip():
        body = EMPTY_RESULT
    is_error = bool(getattr(result, "is_error", False))
    return ToolResult(content=body, structured=structured, is_error=is_error,
                      error_code="mcp.tool_error" if is_error else None)


class McpTools:
    """The MCP servers of one run: connected on first use, listed per invocation, closed
    with the run (safe to close from any thread, idempotent)."""

    def __init__(self) -> None:
        self._connections: dict[str, tuple[str, McpConnection]] = {}
        self._lock = threading.Lock()
        self._closed = False

    @property
    def connected(self) -> list[str]:
        """The servers connected now, by name."""
        return sorted(self._connections)

    def _connection(self, name: str, settings: McpServerSettings) -> McpConnection:
        key = json.dumps(settings.model_dump(mode="json"), sort_keys=True)
        with self._lock:
            if self._closed:
                raise LoopError("mcp.server_unavailable", "the run's MCP connections are "
                                "closed", kind="internal")
            known = self._connections.get(name)
            if known is not None and known[0] == key:
                return known[1]
        target: str | StdioServer
        if settings.url is not None:
            target = settings.url
        else:
            assert settings.command is not None
            env = dict(settings.env)
            missing = [name for name in settings.env_from if name not in os.environ]
            if missing:
                raise LoopError("mcp.server_unavailable", f"MCP server `{name}` needs the "
                                f"environment variable {missing[0]}, which is not set")
            env.update((key, os.environ[key]) for key in settings.env_from)
            target = StdioServer(settings.command, tuple(settings.args), env, settings.cwd)
        try:
            connection = McpConnection(target)
        except McpConnectError as exc:
            raise LoopError("mcp.server_unavailable",
                            f"MCP server `{name}` could not be reached: {exc}") from exc
        with self._lock:
            if self._closed:
                connection.close()
                raise LoopError("mcp.server_unavailable", "the run's MCP connections are "
                                "closed", kind="internal")
            previous = self._connections.get(name)
            self._connections[name] = (key, connection)
        if previous is not None:
            previous[1].close()
        return connection

    def tools_for(self, profile: Profile) -> list[ToolSpec]:
        """The tools of every server ``profile`` names, declared as external tool specs
        (overrides applied), in server then listing order, minus the ones ``tools.deny``
        names (by tool id, or ``mcp/<server>`` for all of a server's)."""
        settings = profile.mcp
        connect_s = settings.connect_timeout_ms / 1000.0
        call_s = settings.call_timeout_ms / 1000.0
        denied = set(profile.tools.deny)
        found: list[ToolSpec] = []
        for server, server_settings in settings.servers.items():
            if f"{MCP_PREFIX}{server}" in denied:
                continue
            connection = self._connection(server, server_settings)
            try:
                listed = connection.list_tools(timeout=connect_s)
            except Exception as exc:
                raise LoopError("mcp.server_unavailable", f"MCP server `{server}` did not "
                                f"list its tools: {type(exc).__name__}: {exc}") from exc
            for tool in listed:
                tool_id = tool_id_of(server, tool.name)
                if tool_id in denied:
                    continue
                schema = copy.deepcopy(dict(tool.input_schema or {"type": "object"}))
                description = _apply_override(tool.description or "", schema,
                                              server_settings.tool_descriptions.get(tool.name))
                description = _apply_override(description, schema,
                                              profile.tools.tool_descriptions.get(tool_id))
                properties = schema.get("properties")
                names = tuple(properties) if isinstance(properties, dict) else ()
                found.append(ToolSpec(
                    id=tool_id, handler=self._handler(connection, server, tool.name, call_s),
                    mutating=False, description=description, arguments=names,
                    title=getattr(tool, "title", None) or tool.name, input_schema=schema,
                    annotations=_annotations(tool), alias=mcp_alias(server, tool.name),
                    builtin=False))
        return found

    @staticmethod
    def _handler(connection: McpConnection, server: str, name: str, timeout_s: float) -> Any:
        tool_id = tool_id_of(server, name)

        def handler(ctx: Any, args: Arguments) -> ToolResult:
            try:
                answer = connection.call_tool(name, dict(args.raw), timeout=timeout_s,
                                              cancel=ctx.token)
            except McpCallCancelled:
                raise ToolError("tool.cancelled", "The MCP tool call was cancelled before "
                                "the server answered.") from None
            except McpCallTimeout:
                raise LoopError("mcp.call_outcome_unknown", f"MCP tool `{tool_id}` sent no "
                                f"answer within {timeout_s:g} s; whether it ran is unknown",
                                kind="internal") from None
            except McpConnectError as exc:  # closed before the request was sent
                raise LoopError("mcp.server_unavailable", f"MCP server `{server}` is not "
                                f"connected: {exc}", kind="internal") from exc
            except Exception as exc:
                code = getattr(exc, "code", None)
                if isinstance(code, int) and code != CONNECTION_CLOSED \
                        and hasattr(exc, "error"):
                    raise ToolError("mcp.tool_error", f"MCP server `{server}` refused the "
                                    f"call: {exc.error.message}") from exc
                raise LoopError("mcp.call_outcome_unknown", f"MCP tool `{tool_id}` lost its "
                                f"server while it ran ({type(exc).__name__}: {exc}); whether "
                                "it ran is unknown", kind="internal") from exc
            return render(answer)
        return handler

    def close(self) -> None:
        """Close every connection (a stdio server's process ends with it)."""
        with self._lock:
            self._closed = True
            connections = [c for _, c in self._connections.values()]
            self._connections.clear()
        for connection in connections:
            with contextlib.suppress(Exception):
                connection.close()


def _annotations(tool: Any) -> dict[str, Any]:
    annotations = getattr(tool, "annotations", None)
    if annotations is None:
        return {}
    dumped = annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dict(dumped) if isinstance(dumped, dict) else {}

