"""``tavernlab mcp serve``: a run's model-facing tools for any MCP client.

``tavernlab mcp serve [--lab DIR] [--run RUN_ID | --chat ID] [--profile FILE] [--http PORT]``
serves over stdin/stdout (the way MCP clients start a server) or, with ``--http PORT``,
streamable HTTP on ``127.0.0.1:PORT/mcp`` only. Without ``--run`` a new Chat run starts in the
chat ``--chat`` (default ``mcp``) with the Profile read from ``--profile`` (a JSON file;
default: the default writer); with ``--run`` the active run ``RUN_ID`` is driven from its
current round. The lab is created when missing. Each ``tools/call`` is its own round; after
``workspace_finish`` further calls get an error naming the finished run. When the client
goes away, a run the server started and nobody finished is cancelled.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tavernlab.cli._common import add_lab_argument, lab_path
from tavernlab.errors import InvalidData, UsageError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tavernlab mcp serve``."""
    parser = subparsers.add_parser("mcp", help="serve a run's tools to MCP clients",
                                   description="tavernlab as an MCP server.")
    commands = parser.add_subparsers(dest="mcp_command", metavar="COMMAND", required=True)
    serve = commands.add_parser(
        "serve", help="serve a run's model-facing tools over stdio or HTTP on 127.0.0.1",
        description="Serve the tools a model driving the run sees (aliases, descriptions, "
        "schemas) to an MCP client, each call recorded as a loop call in its own round.")
    target = serve.add_mutually_exclusive_group()
    target.add_argument("--run", default=None, metavar="RUN_ID", help="drive this active run")
    target.add_argument("--chat", default=None, metavar="ID",
                        help="start a new run in this chat (default: mcp)")
    serve.add_argument("--profile", default=None, metavar="FILE",
                       help="the new run's Profile, a JSON file (default: the default writer)")
    serve.add_argument("--presentation", choices=("foreground", "background"), default=None,
                       help="the new run's presentation (default: the Profile's)")
    serve.add_argument("--http", type=int, default=None, metavar="PORT",
                       help="serve streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio")
    add_lab_argument(serve)
    serve.set_defaults(func=_serve)


def _profile(path: str | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        loaded = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidData(f"cannot read the profile {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise InvalidData(f"the profile {path} is not JSON: {exc}") from exc
    if not isinstance(loaded, dict):
        raise InvalidData(f"the profile {path} must be a JSON object")
    return loaded


def _serve(args: argparse.Namespace) -> int:
    from tavernlab import Lab
    from tavernlab.agent import ExternalAgent
    from tavernlab.mcp_server import HttpServer, serve_stdio

    if args.http is not None and not 0 < args.http < 65536:
        raise UsageError("--http takes a port between 1 and 65535")
    if args.run is not None and (args.profile is not None or args.presentation is not None):
        raise UsageError("--profile and --presentation start a new run; not with --run")
    profile = _profile(args.profile)
    with Lab(lab_path(args)) as lab:
        if args.run is not None:
            agent = ExternalAgent.attach(lab, args.run)
        else:
            agent = ExternalAgent.start(lab, chat_id=args.chat, profile=profile,
                                        presentation=args.presentation)
        print(f"tavernlab mcp: serving run {agent.run.id}"
              + ("" if args.http is None else f" at http://127.0.0.1:{args.http}/mcp"),
              file=sys.stderr, flush=True)
        if args.http is None:
            serve_stdio(agent)
        else:
            HttpServer(agent, args.http).serve()
    return 0


__all__ = ["register"]
