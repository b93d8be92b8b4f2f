"""tavernlab as an MCP server: any MCP client drives a run's model-facing tools.

:func:`build_server` wraps an :class:`~tavernlab.agent.ExternalAgent` in a server of the
official ``mcp`` package: ``tools/list`` answers the aliases, descriptions and input schemas of
the invocation's tool snapshot (what a model driving the run is shown), ``tools/call`` makes
one call as its own round of the loop and answers the text a model receives (``isError`` set
for an error result), and the server's instructions are the invocation's system prompt.
A call the client cancels is cancelled in the run (recorded as a cancelled call; the run
goes on).

:func:`serve_stdio` serves over the process's stdin and stdout until the client closes them;
:class:`HttpServer` serves streamable HTTP on 127.0.0.1 only (path ``/mcp``), in the
foreground (:meth:`HttpServer.serve`) or on a thread of its own (:meth:`HttpServer.start`,
:meth:`HttpServer.stop`), as ``%tavern mcp serve`` does for a notebook's run.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any

from tavernlab.agent import ExternalAgent

#: The only address the HTTP transport binds.
HTTP_HOST = "127.0.0.1"
#: The path of the streamable-HTTP endpoint.
HTTP_PATH = "/mcp"


def build_server(agent: ExternalAgent) -> Any:
    """The ``mcp`` low-level server answering ``tools/list`` and ``tools/call`` for
    ``agent``."""
    import anyio
    import mcp_types as types
    from mcp.server import Server

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[
            types.Tool(name=tool.model_alias, description=tool.description,
                       input_schema=dict(tool.input_schema))
            for tool in agent.tools()])

    async def call_tool(ctx: Any, params: Any) -> Any:
        arguments = params.arguments if params.arguments is not None else {}
        try:
            answer = await anyio.to_thread.run_sync(agent.call, params.name, arguments,
                                                    abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            for token in agent.run._core.inflight.live():  # the client cancelled this call
                token.cancel("cancelled by the MCP client")
            raise
        return types.CallToolResult(content=[types.TextContent(type="text", text=answer.text)],
                                    is_error=answer.is_error)

    return Server("tavernlab", instructions=agent.instructions, on_list_tools=list_tools,
                  on_call_tool=call_tool)


def serve_stdio(agent: ExternalAgent) -> None:
    """Serve ``agent`` over stdin/stdout until the client closes stdin; then stop driving
    the run (a run the server started and nobody finished is cancelled)."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(agent)

    async def main() -> None:
        async with stdio_server() as (read, write):
            relay_send, relay_read = anyio.create_memory_object_stream[Any](0)

            async def relay() -> None:
                async with relay_send:
                    async for item in read:
                        if isinstance(item, Exception):
                            await write.send(_malformed(item))
                        else:
                            await relay_send.send(item)

            async with anyio.create_task_group() as group:
                group.start_soon(relay)
                await server.run(relay_read, write, server.create_initialization_options())
                group.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        agent.close()


def _malformed(error: Exception) -> Any:
    """The JSON-RPC error answering a line that is not a JSON-RPC message (``id`` null):
    ``-32700`` for text that is not JSON, ``-32600`` for JSON that is no message."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    errors = getattr(error, "errors", None)
    kinds = {entry.get("type") for entry in errors()} if callable(errors) else set()
    if "json_invalid" in kinds:
        code, message = types.PARSE_ERROR, "Parse error: the line is not JSON"
    else:
        code, message = types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
        code=code, message=message)))


class HttpServer:
    """Streamable HTTP on ``127.0.0.1:<port>`` (``0``: a free port, see :attr:`port`)."""

    def __init__(self, agent: ExternalAgent, port: int = 0) -> None:
        import uvicorn

        self.agent = agent
        if port == 0:
            with socket.socket() as probe:
                probe.bind((HTTP_HOST, 0))
                port = int(probe.getsockname()[1])
        self.port = port
        app = build_server(agent).streamable_http_app(streamable_http_path=HTTP_PATH,
                                                      host=HTTP_HOST)
        self._server = uvicorn.Server(uvicorn.Config(app, host=HTTP_HOST, port=port,
                                                     log_level="warning", lifespan="on"))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>/mcp``."""
        return f"http://{HTTP_HOST}:{self.port}{HTTP_PATH}"

    def serve(self) -> None:
        """Serve in this thread until interrupted (Ctrl-C), then stop driving the run."""
        try:
            self._server.run()
        finally:
            self.agent.close()

    def start(self) -> HttpServer:
        """Serve on a thread of its own; returns once the server accepts connections."""
        self._thread = threading.Thread(target=self._server.run,
                                        name=f"tavernlab-mcp-{self.port}", daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise OSError(f"the MCP server could not listen on {HTTP_HOST}:{self.port}")
            self._thread.join(0.02)
        return self

    @property
    def running(self) -> bool:
        """Whether the background server is serving."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        """Stop the background server and stop driving the run (idempotent)."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(30)
        with contextlib.suppress(Exception):
            self.agent.close()


__all__ = ["HTTP_HOST", "HTTP_PATH", "HttpServer", "build_server", "serve_stdio"]
