"""A real MCP server for the agent-loop tests, made with the ``mcp`` package.

``python mcp_tool_server.py VARIANT [--http PORT]`` serves over stdio (default) or streamable
HTTP on 127.0.0.1:PORT (path ``/mcp``). The variants:

* ``issues``: ``issue_create(title)`` returns a 60 000-character text (line ``k`` of the text
  is ``k`` repeated, so any slice can be checked), ``echo(text)`` returns its argument and
  ``fail(text)`` returns an error result, ``env(name)`` an
  environment variable's value.
* ``crash``: ``boom()`` ends the process while the call is running; ``after()`` is never
  reached.
* ``hang``: ``hang()`` never answers (it sleeps until cancelled; a ``notifications/cancelled``
  ends it and is noted on stderr).
* ``big``: ``big()`` returns a 10 MiB text.
* ``collide``: tools whose names collide with builtins (``workspace_write_file``) and with
  each other once normalized (``a.b``, ``a_b``, ``a b``), and one name over 64 bytes.
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer

#: The text ``issue_create`` returns: 60 000 characters.
ISSUE_CHARS = 60_000
BIG_BYTES = 10 * 1024 * 1024


def issue_text() -> str:
    """60 000 characters in lines of varying length."""
    pieces: list[str] = []
    total = 0
    k = 0
    while total < ISSUE_CHARS:
        line = (str(k % 10) * (k % 4000 + 1)) + "\n"
        pieces.append(line)
        total += len(line)
        k += 1
    return "".join(pieces)[:ISSUE_CHARS]


def big_text() -> str:
    """10 MiB of ASCII text in 1000-character lines."""
    line = "y" * 999 + "\n"
    return line * (BIG_BYTES // 1000) + "z" * (BIG_BYTES % 1000)


def build(variant: str) -> MCPServer:
    """The server of ``variant``."""
    server = MCPServer(f"tavernlab-test-{variant}")
    if variant == "issues":
        @server.tool(description="Create an issue (server text).", structured_output=False)
        def issue_create(title: str) -> str:
            return issue_text()

        @server.tool(description="Echo the text back.", structured_output=False)
        def echo(text: str) -> str:
            return f"echo: {text}"

        @server.tool(description="The value of an environment variable.",
                     structured_output=False)
        def env(name: str) -> str:
            return os.environ.get(name, "<unset>")

        @server.tool(description="Always fails.", structured_output=False)
        def fail(text: str) -> str:
            raise ValueError(f"refused: {text}")
    elif variant == "crash":
        @server.tool(description="Crashes the server mid-call.", structured_output=False)
        def boom() -> str:
            sys.stderr.flush()
            os._exit(3)

        @server.tool(description="Never reached.", structured_output=False)
        def after() -> str:
            return "after"
    elif variant == "hang":
        @server.tool(description="Never answers.", structured_output=False)
        async def hang() -> str:
            try:
                await anyio.sleep(3600)
            except anyio.get_cancelled_exc_class():
                print("hang: cancelled", file=sys.stderr, flush=True)
                raise
            return "late"
    elif variant == "big":
        @server.tool(description="Returns 10 MiB.", structured_output=False)
        def big() -> str:
            return big_text()
    elif variant == "collide":
        def named(name: str, answer: str) -> None:
            def tool() -> str:
                return answer
            server.add_tool(tool, name=name, description=f"Answers {answer}.",
                            structured_output=False)

        named("workspace_write_file", "external write")
        named("a.b", "dot")
        named("a_b", "underscore")
        named("a b", "space")
        named("n" * 80, "long")
    else:
        raise SystemExit(f"unknown variant {variant}")
    return server


def main(argv: list[str]) -> None:
    """Serve the variant named by ``argv``."""
    variant = argv[0]
    server = build(variant)
    if len(argv) == 3 and argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[2]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
