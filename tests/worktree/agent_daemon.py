"""A stand-in agentproto daemon for the ``worktree-agent`` tests: a real MCP server (the
``mcp`` package's ``MCPServer`` over streamable HTTP on 127.0.0.1) whose sessions run a
scripted coding agent.

Run as ``python agent_daemon.py PORT LOG MODE``. Tools: ``agent_start``, ``agent_prompt``,
``session_events_cursor``, ``session_monitor`` (long-poll, clean timeouts as ``{timedOut:
true, sessionIds}``), ``agent_output`` and ``agent_kill``. Each tool call is appended to LOG
as one JSON line ``{tool, args}``. On a prompt the scripted agent writes ``agent.txt`` (the
prompt's text) in the session's ``cwd`` and, in MODE ``commit``, commits it; in MODE
``dirty`` it leaves the file uncommitted; MODE ``slow`` commits after 1.5 s, so that a
``session_monitor`` with a short window answers a clean timeout first. The monitor's window is
capped at 500 ms, so a test sees the re-poll after a timeout quickly.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

PORT, LOG, MODE = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
MAX_WINDOW_S = 0.5

server = MCPServer("agentproto-daemon-stand-in")
lock = threading.Condition()
sessions: dict[str, dict[str, Any]] = {}
events: list[dict[str, Any]] = []  # {seq, sessionId, event}


def log(tool: str, args: dict[str, Any]) -> None:
    with LOG.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"tool": tool, "args": args}) + "\n")


def emit(session_id: str, event: str) -> None:
    with lock:
        events.append({"seq": len(events) + 1, "sessionId": session_id, "event": event})
        lock.notify_all()


def run_agent(session_id: str, prompt: str) -> None:
    cwd = sessions[session_id]["cwd"]
    if MODE == "slow":
        time.sleep(1.5)
    Path(cwd, "agent.txt").write_text(prompt, encoding="utf-8")
    sessions[session_id]["lines"].append(f"wrote agent.txt ({len(prompt)} chars)")
    if MODE in ("commit", "slow"):
        subprocess.run(["git", "add", "agent.txt"], cwd=cwd, check=True)
        subprocess.run(["git", "commit", "-q", "-m", "agent"], cwd=cwd, check=True)
    emit(session_id, "turn-end")


@server.tool()
def agent_start(adapter: str, cwd: str | None = None, workspaceSlug: str | None = None,
                label: str | None = None) -> str:
    args = {k: v for k, v in {"adapter": adapter, "cwd": cwd, "workspaceSlug": workspaceSlug,
                              "label": label}.items() if v is not None}
    log("agent_start", args)
    session_id = f"sess_{len(sessions) + 1}"
    sessions[session_id] = {"cwd": cwd, "lines": []}
    return json.dumps({"id": session_id, **args})


@server.tool()
def session_events_cursor() -> str:
    log("session_events_cursor", {})
    with lock:
        return json.dumps({"cursor": len(events)})


@server.tool()
def agent_prompt(sessionId: str, prompt: str, interrupt: bool | None = None) -> str:
    log("agent_prompt", {"sessionId": sessionId, "prompt": prompt})
    threading.Thread(target=run_agent, args=(sessionId, prompt), daemon=True).start()
    return json.dumps({"ok": True})


@server.tool()
def session_monitor(sessionIds: list[str], timeoutMs: int = 1000, event: str = "any",
                    since: int = 0) -> str:
    log("session_monitor", {"sessionIds": sessionIds, "timeoutMs": timeoutMs, "event": event,
                            "since": since})
    deadline = time.monotonic() + min(timeoutMs / 1000, MAX_WINDOW_S)
    with lock:
        while True:
            for item in events:
                if item["seq"] > since and item["sessionId"] in sessionIds:
                    return json.dumps(item)
            left = deadline - time.monotonic()
            if left <= 0:
                return json.dumps({"timedOut": True, "sessionIds": sessionIds})
            lock.wait(left)


@server.tool()
def agent_output(sessionId: str, lastN: int | None = None) -> str:
    lines = sessions[sessionId]["lines"]
    return json.dumps({"lines": lines[-lastN:] if lastN else lines})


@server.tool()
def agent_kill(sessionId: str) -> str:
    log("agent_kill", {"sessionId": sessionId})
    return json.dumps({"ok": True})


if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=PORT, log_level="error")
