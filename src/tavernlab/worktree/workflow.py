"""The ``worktree-agent`` workflow (spec section 7.1) and its command line (section 7.2).

provision → agent step (any Python callable, handed the worktree) → gate → approval →
cleanup. A failed gate keeps the worktree for inspection; a rejected approval keeps it too.
Cleanup passes no discard flags, so files the agent left uncommitted make it fail with
:class:`WorktreeNotRemovableError` rather than vanish.

Upstream detail unknown for ``writeFiles`` and ``workspaceSlug``: tavernlab accepts both and
passes them to provision and to ``spawn`` respectively.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

from tavernlab.worktree.errors import UsageError
from tavernlab.worktree.tools import call_tool

WORKFLOW_ID = "worktree-agent"
APPROVAL_PROMPT = "Gate passed. Approve worktree cleanup?"

USAGE = """usage: worktree-agent run --repo <path> --slug <id> --task "<prompt>" --gate "<cmd>"
  [--base <ref>] [--adapter <slug>] [--deps-cmd "<cmd>"] [--copy-glob <glob>]...
  [--link <path>]... [--write-file <json>]... [--no-cleanup] [--yes]"""


class AgentHost(Protocol):
    """Where the coding agent runs: ``spawn`` a session in the worktree, then send the task."""

    def spawn(self, adapter: str, options: dict[str, Any]) -> Any:
        """Start an agent session; ``options`` is ``{cwd, workspaceSlug, stepId}``."""
        ...

    def send_and_wait(self, handle: Any, prompt: str) -> Any:
        """Send the prompt to the session and wait for it to finish."""
        ...


@dataclass
class CallableAgentHost:
    """An :class:`AgentHost` around a plain Python callable ``agent(cwd, task)``.

    It records every ``spawn`` call so a notebook (or a test) can see what the workflow asked.
    """

    agent: Callable[[str, str], Any]

    def __post_init__(self) -> None:
        self.spawned: list[tuple[str, dict[str, Any]]] = []

    def spawn(self, adapter: str, options: dict[str, Any]) -> Any:
        """Remember the request; the handle is the worktree path."""
        self.spawned.append((adapter, options))
        return options["cwd"]

    def send_and_wait(self, handle: Any, prompt: str) -> Any:
        """Run the callable in the worktree."""
        return self.agent(handle, prompt)


def run_worktree_agent(inputs: dict[str, Any], host: AgentHost,
                       approve: Callable[[str], bool]) -> dict[str, Any]:
    """Run the workflow; returns ``{cwd, branch, gate, cleanup}``."""
    provision_input = {key: inputs[key] for key in
                       ("repoRoot", "slug", "base", "depsCmd", "copyGlobs", "linkPaths",
                        "writeFiles") if inputs.get(key) is not None}
    out = call_tool("worktree.provision", provision_input)
    cwd, branch = out["cwd"], out["branch"]
    handle = host.spawn(inputs.get("adapter") or "claude-code",
                        {"cwd": cwd, "workspaceSlug": inputs.get("workspaceSlug"),
                         "stepId": "code"})
    host.send_and_wait(handle, inputs["task"])
    gate = call_tool("worktree.run-gate", {"cwd": cwd, "cmd": inputs["gateCmd"]})
    if not gate["passed"]:
        cleanup: dict[str, Any] = {"removed": False, "reason": "gate_failed"}
    elif approve(APPROVAL_PROMPT):
        cleanup = call_tool("worktree.cleanup", {
            "repoRoot": inputs["repoRoot"], "cwd": cwd, "branch": branch,
            "deleteBranch": inputs.get("deleteBranch", True)})
    else:
        cleanup = {"removed": False, "reason": "cleanup_rejected"}
    return {"cwd": cwd, "branch": branch, "gate": gate, "cleanup": cleanup}


# -- command line -------------------------------------------------------------------------

_VALUE_FLAGS = {"--repo": "repoRoot", "--slug": "slug", "--task": "task", "--gate": "gateCmd",
                "--base": "base", "--adapter": "adapter", "--deps-cmd": "depsCmd"}
_LIST_FLAGS = {"--copy-glob": "copyGlobs", "--link": "linkPaths", "--write-file": "writeFiles"}
_REQUIRED = ("--repo", "--slug", "--task", "--gate")


def _write_file(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"--write-file value is not valid JSON: {raw}") from exc
    ok = (isinstance(value, dict) and isinstance(value.get("path"), str)
          and isinstance(value.get("content"), str)
          and value.get("mode", "create") in ("create", "append")
          and set(value) <= {"path", "content", "mode"})
    if not ok:
        raise UsageError('--write-file requires {"path": string, "content": string, '
                         f'"mode"?: "create"|"append"}}: {raw}')
    return dict(value)


def parse_agent_args(argv: Sequence[str]) -> tuple[dict[str, Any], bool]:
    """Parse ``worktree-agent`` arguments → (workflow input, ``yes``).

    Raises :class:`UsageError` with upstream's messages (the full usage is appended for a
    missing or unknown command).
    """
    if not argv:
        raise UsageError(USAGE)
    if argv[0] != "run":
        raise UsageError(f"unknown command '{argv[0]}'\n{USAGE}")
    inputs: dict[str, Any] = {}
    yes = False
    args = list(argv[1:])
    index = 0
    while index < len(args):
        flag = args[index]
        if flag in _VALUE_FLAGS or flag in _LIST_FLAGS:
            if index + 1 >= len(args):
                raise UsageError(f"flag '{flag}' requires a value")
            value = args[index + 1]
            index += 2
            if flag in _VALUE_FLAGS:
                inputs[_VALUE_FLAGS[flag]] = value
            else:
                item: Any = _write_file(value) if flag == "--write-file" else value
                inputs.setdefault(_LIST_FLAGS[flag], []).append(item)
        elif flag == "--no-cleanup":
            inputs["deleteBranch"] = False
            index += 1
        elif flag == "--yes":
            yes = True
            index += 1
        else:
            raise UsageError(f"unrecognized flag '{flag}'")
    missing = [flag for flag in _REQUIRED if _VALUE_FLAGS[flag] not in inputs]
    if missing:
        raise UsageError(f"missing required flag(s): {', '.join(missing)}")
    inputs["repoRoot"] = os.path.abspath(inputs["repoRoot"])
    inputs.setdefault("deleteBranch", True)
    return inputs, yes


def approve_cleanup(prompt: str, *, yes: bool, tty_path: str = "/dev/tty",
                    stderr: TextIO | None = None) -> bool:
    """The approval step: ``--yes`` approves, no TTY rejects, else ask ``[y/N]`` on the TTY.

    Only a trimmed answer matching ``^y(es)?$`` (any case) approves.
    """
    err = stderr if stderr is not None else sys.stderr
    if yes:
        print(f"{prompt} — auto-approved (--yes)", file=err)
        return True
    try:
        fd = os.open(tty_path, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        print(f"{prompt} — no TTY attached, not approving (worktree left in place)", file=err)
        return False
    try:
        os.write(fd, f"{prompt} [y/N] ".encode())
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = os.read(fd, 1024)
            if not chunk:
                break
            answer += chunk
    finally:
        os.close(fd)
    text = answer.decode("utf-8", errors="replace").strip()
    return re.match(r"^y(es)?$", text, re.IGNORECASE) is not None
