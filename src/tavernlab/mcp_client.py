"""A synchronous connection to one MCP server, over the official ``mcp`` client.

The ``mcp`` package is asynchronous (anyio); tavernlab's callers (the agent loop's external
tools, the ``worktree-agent`` daemon host) are synchronous and run on ordinary threads. An
:class:`McpConnection` owns a private event-loop thread (anyio's blocking portal) with one
connected ``mcp.Client`` in it, and offers blocking ``list_tools`` / ``call_tool`` with a
timeout and a :class:`~tavernlab.cancel.CancelToken`: cancelling a started call cancels its
task in the client (which tells the server the request was cancelled). ``close()`` closes the
client (for a stdio server: ends the process the client started) and stops the thread, so no
thread or process outlives the connection.

The server is named by a URL (streamable HTTP) or a :class:`StdioServer` (a command the
client starts and talks to over its stdin/stdout).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tavernlab.cancel import CancelToken


@dataclass(frozen=True)
class StdioServer:
    """An MCP server started as a subprocess: ``command``, its ``args``, extra ``env`` and the
    working directory (``None``: the caller's)."""

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None


class McpConnectError(RuntimeError):
    """The server could not be reached or did not complete the MCP handshake."""


class McpCallTimeout(TimeoutError):
    """A call got no answer within its timeout (it may or may not have run on the server)."""


class McpCallCancelled(RuntimeError):
    """A started call was cancelled through its token."""


class McpConnection:
    """One connected MCP client, usable from any thread."""

    def __init__(self, server: str | StdioServer, *, client_name: str = "tavernlab") -> None:
        from anyio.from_thread import start_blocking_portal
        from mcp import Client, StdioServerParameters
        from mcp_types import Implementation

        self.server = server
        target: Any
        if isinstance(server, StdioServer):
            env = {**os.environ, **server.env} if server.env else None
            target = StdioServerParameters(command=server.command, args=list(server.args),
                                           env=env, cwd=server.cwd)
        else:
            target = server
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        self._client_cm: Any = None
        try:
            client = Client(target, client_info=Implementation(name=client_name,
                                                               version="0.1.0"))
            self._client_cm = self._portal.wrap_async_context_manager(client)
            self._client = self._client_cm.__enter__()
        except BaseException as exc:
            self._client_cm = None
            self._portal_cm.__exit__(None, None, None)
            raise McpConnectError(_describe(exc)) from exc
        self._closed = False

    def list_tools(self, *, timeout: float = 30.0) -> list[Any]:
        """Every tool the server lists (``mcp_types.Tool``), following pagination."""
        async def collect() -> list[Any]:
            tools: list[Any] = []
            cursor: str | None = None
            while True:
                page = await self._client.list_tools(cursor=cursor) if cursor else \
                    await self._client.list_tools()
                tools.extend(page.tools)
                cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
                if not cursor:
                    return tools

        return self._run(collect, timeout=timeout, cancel=None)  # type: ignore[no-any-return]

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None, *,
                  timeout: float | None = None, cancel: CancelToken | None = None) -> Any:
        """Call ``name``; returns the ``CallToolResult``.

        Raises :class:`McpCallTimeout` when no answer came within ``timeout`` and
        :class:`McpCallCancelled` when ``cancel`` fired first; in both cases the call's task is
        cancelled in the client. Any failure of the transport is raised as it came.
        """
        args = dict(arguments or {})

        async def call() -> Any:
            return await self._client.call_tool(name, args)

        return self._run(call, timeout=timeout, cancel=cancel)

    def _run(self, func: Any, *, timeout: float | None, cancel: CancelToken | None) -> Any:
        if self._closed:
            raise McpConnectError("the MCP connection is closed")
        future = self._portal.start_task_soon(func)

        def stop() -> None:
            future.cancel()

        unregister = cancel.on_cancel(stop) if cancel is not None else None
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpCallTimeout(f"no answer within {timeout:g} s") from None
        except concurrent.futures.CancelledError:
            raise McpCallCancelled("the call was cancelled") from None
        finally:
            if unregister is not None:
                unregister()

    def close(self) -> None:
        """Close the client and stop its thread (idempotent)."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        try:
            if self._client_cm is not None:
                with contextlib.suppress(Exception):
                    self._client_cm.__exit__(None, None, None)
        finally:
            with contextlib.suppress(Exception):
                self._portal_cm.__exit__(None, None, None)

    def __enter__(self) -> McpConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _describe(exc: BaseException) -> str:
    """One line for a connection failure (exception groups unwrapped to their first cause)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if str(exc) else text
