"""``worktree-agent run`` — the ``worktree-agent`` workflow from a terminal.

Provision a git worktree, run a coding agent in it as a daemon session (``agent_start`` on the
agentproto daemon's MCP endpoint: ``AGENTPROTO_MCP_URL``, else
``http://127.0.0.1:18790/mcp``), gate the result, ask a human to approve the cleanup, then
clean up (or leave the worktree in place when the gate fails or the cleanup is rejected). The
output ``{cwd, branch, gate, cleanup}`` is printed as JSON indented by two spaces.

Usage errors print one message (with the usage) on stderr and exit 1. Approval: ``--yes``
approves without asking (and says so on stderr); without a terminal (``/dev/tty`` cannot be
opened) nothing is approved and the worktree stays; otherwise the question is asked on
``/dev/tty`` (not on stdin/stdout, which may carry the workflow's own output) and ``y`` or
``yes`` (any case) approves. The flags and these rules are
:mod:`tavernlab.worktree._agent_args`, which the notebook's ``%worktree agent`` shares.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable, Sequence

from tavernlab.worktree import USAGE, CliUsageError, ParsedCli, parse_args
from tavernlab.worktree import make_approve as _make_approve

__all__ = ["USAGE", "CliUsageError", "ParsedCli", "ask_tty", "has_tty", "main", "make_approve",
           "parse_args"]


def has_tty() -> bool:
    """Whether ``/dev/tty`` can be opened for reading and writing (a terminal is attached)."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def ask_tty(prompt: str) -> str:
    """Ask ``prompt`` on ``/dev/tty`` and return the answer line."""
    with open("/dev/tty", "r+", encoding="utf-8") as tty:
        tty.write(prompt)
        tty.flush()
        return tty.readline()


def make_approve(yes: bool, *, tty: Callable[[], bool] = has_tty,
                 ask: Callable[[str], str] = ask_tty) -> Callable[[str], bool]:
    """The workflow's approval step on a terminal (see the module doc)."""
    return _make_approve(yes, tty=tty, ask=ask)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``worktree-agent``; returns the exit status (0, or 1 for any failure)."""
    try:
        parsed = parse_args(sys.argv[1:] if argv is None else argv)
    except CliUsageError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    try:
        from tavernlab.worktree import DaemonAgentHost, run_worktree_agent

        with DaemonAgentHost.connect() as host:
            output = run_worktree_agent(parsed.input, host, make_approve(parsed.yes))
        sys.stdout.write(json.dumps(output, indent=2) + "\n")
        return 0
    except Exception:  # upstream prints the stack of any other error and exits 1
        sys.stderr.write(traceback.format_exc())
        return 1


if __name__ == "__main__":  # pragma: no cover - `python -m tavernlab.cli._worktree_agent`
    sys.exit(main())
