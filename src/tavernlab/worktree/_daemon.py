"""The daemon agent host: the ``worktree-agent`` workflow's coding step as an agentproto
daemon session, reached over MCP.

Every agent step becomes a daemon session (``agent_start``) rather than a bare subprocess. The
daemon's MCP endpoint is ``AGENTPROTO_MCP_URL``, else ``http://127.0.0.1:18790/mcp``; when it
cannot be reached the host fails loudly (no fallback to a local agent). Tool results come back
as one text content item holding JSON, which the host parses; an ``isError`` result raises.

* ``spawn(adapter, {cwd, workspaceSlug, stepId})`` calls ``agent_start`` with ``{adapter,
  cwd, workspaceSlug, label: stepId}`` (keys only when given) and remembers label → session
  id.
* ``send_and_wait(id, prompt)`` reads the daemon's event cursor *before* sending, sends the
  prompt (``agent_prompt``), then long-polls ``session_monitor {sessionIds: [id], event:
  "any", timeoutMs: 49000, since: cursor}``, polling again (with the same cursor) while the
  answer is a clean timeout ``{timedOut: true, sessionIds}``.

Upstream detail unknown: which daemon tool answers the event cursor (upstream's client calls
it ``currentEventsCursor``). tavernlab calls ``session_events_cursor`` and reads ``{cursor}``
from its answer.
"""

from __future__ import annotations

import json
import os
from typing import Any

from tavernlab.mcp_client import McpConnectError, McpConnection
from tavernlab.worktree._errors import DaemonToolError, DaemonUnreachableError

DEFAULT_MCP_URL = "http://127.0.0.1:18790/mcp"
#: ``session_monitor``'s largest accepted long-poll window.
MAX_POLL_MS = 49_000
#: ``agent_start`` on a cold daemon can take long; its answer is awaited this many seconds.
START_TIMEOUT_S = 180.0
CURSOR_TOOL = "session_events_cursor"


def resolve_mcp_url(url: str | None = None) -> str:
    """The daemon's MCP URL: ``url``, else ``AGENTPROTO_MCP_URL``, else the default."""
    return url or os.environ.get("AGENTPROTO_MCP_URL") or DEFAULT_MCP_URL


class DaemonAgentHost:
    """An agent host whose sessions run on the agentproto daemon (see the module doc)."""

    def __init__(self, connection: McpConnection, url: str) -> None:
        self._connection = connection
        self.url = url
        self._session_by_step: dict[str, str] = {}

    @classmethod
    def connect(cls, url: str | None = None) -> DaemonAgentHost:
        """Connect to the daemon; raises :class:`DaemonUnreachableError` with upstream's text."""
        resolved = resolve_mcp_url(url)
        try:
            connection = McpConnection(resolved, client_name="worktree-agent")
        except McpConnectError as exc:
            raise DaemonUnreachableError(
                f"worktree-agent: could not reach the agentproto daemon's MCP endpoint at "
                f"{resolved}. Start the daemon (`agentproto daemon start`), or point at a "
                f"running one via AGENTPROTO_MCP_URL, before running this command.\n"
                f"({exc})") from exc
        return cls(connection, resolved)

    def spawn(self, adapter: str, options: dict[str, Any]) -> str:
        """Start a daemon session for ``adapter`` in ``options["cwd"]``; returns its id."""
        args: dict[str, Any] = {"adapter": adapter}
        if options.get("cwd") is not None:
            args["cwd"] = options["cwd"]
        if options.get("workspaceSlug") is not None:
            args["workspaceSlug"] = options["workspaceSlug"]
        if options.get("stepId") is not None:
            args["label"] = options["stepId"]
        descriptor = self._call("agent_start", args, timeout=START_TIMEOUT_S)
        session_id = descriptor.get("id") if isinstance(descriptor, dict) else None
        if not isinstance(session_id, str) or not session_id:
            raise DaemonToolError(f"Tool `agent_start` returned no session id: {descriptor!r}")
        if options.get("stepId"):
            self._session_by_step[str(options["stepId"])] = session_id
        return session_id

    def send_and_wait(self, handle: Any, prompt: str) -> Any:
        """Send ``prompt`` to session ``handle`` and wait until its turn settles; returns the
        daemon's matching event."""
        session_id = str(handle)
        cursor = self.current_events_cursor()
        self._call("agent_prompt", {"sessionId": session_id, "prompt": prompt})
        while True:
            result = self._call("session_monitor", {
                "sessionIds": [session_id], "event": "any", "timeoutMs": MAX_POLL_MS,
                "since": cursor}, timeout=MAX_POLL_MS / 1000 + 30)
            if not (isinstance(result, dict) and result.get("timedOut")):
                return result

    def resolve_by_label(self, step_id: str) -> str | None:
        """The session started for ``step_id``, if any."""
        return self._session_by_step.get(step_id)

    def current_events_cursor(self) -> int:
        """The daemon's event cursor now (a later wait with ``since`` sees every turn end
        that happens after this call)."""
        answer = self._call(CURSOR_TOOL, {})
        cursor = answer.get("cursor") if isinstance(answer, dict) else answer
        if not isinstance(cursor, int) or isinstance(cursor, bool):
            raise DaemonToolError(f"Tool `{CURSOR_TOOL}` returned no cursor: {answer!r}")
        return cursor

    def output(self, session_id: str, last_n: int | None = None) -> str:
        """The session's latest output lines (``agent_output``)."""
        args: dict[str, Any] = {"sessionId": session_id}
        if last_n is not None:
            args["lastN"] = last_n
        answer = self._call("agent_output", args)
        lines = answer.get("lines") if isinstance(answer, dict) else None
        return "\n".join(str(line) for line in lines or [])

    def kill(self, session_id: str) -> None:
        """Stop the session (``agent_kill``)."""
        self._call("agent_kill", {"sessionId": session_id})

    def close(self) -> None:
        """Close the MCP client."""
        self._connection.close()

    def __enter__(self) -> DaemonAgentHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, name: str, args: dict[str, Any], *, timeout: float = 60.0) -> Any:
        result = self._connection.call_tool(name, args, timeout=timeout)
        content = getattr(result, "content", None) or []
        text = getattr(content[0], "text", None) if content else None
        if not text:
            raise DaemonToolError(f"No content from tool `{name}`")
        if getattr(result, "is_error", False) or getattr(result, "isError", False):
            raise DaemonToolError(f"Tool `{name}` returned error: {text}")
        try:
            return json.loads(text)
        except ValueError as exc:
            raise DaemonToolError(f"Tool `{name}` returned text that is not JSON: "
                                  f"{text[:200]}") from exc
