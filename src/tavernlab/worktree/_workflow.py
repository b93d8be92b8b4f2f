"""The ``worktree-agent`` workflow (docs/worktrees.md).

provision → agent step (any Python callable, handed the worktree) → gate → approval →
cleanup. A failed gate keeps the worktree for inspection; a rejected approval keeps it too.
Cleanup passes no discard flags, so files the agent left uncommitted make it fail with
:class:`WorktreeNotRemovableError` rather than vanish.

Upstream detail unknown for ``writeFiles`` and ``workspaceSlug``: tavernlab accepts both and
passes them to provision and to ``spawn`` respectively.

The ``worktree-agent run`` command line runs this workflow against an agentproto daemon
session over MCP (:class:`tavernlab.worktree.DaemonAgentHost`); a notebook or script can
also run it with a :class:`CallableAgentHost` around a Python callable and an ``approve``
callable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from tavernlab.worktree._process import LineObserver
from tavernlab.worktree._runtime import WorktreeRuntime
from tavernlab.worktree._scripts import run_gate
from tavernlab.worktree._tool_inputs import (
    CleanupInput,
    GateInput,
    ProvisionInput,
    ToolInput,
    validate_input,
)
from tavernlab.worktree._tools import call_tool

APPROVAL_PROMPT = "Gate passed. Approve worktree cleanup?"


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
                       approve: Callable[[str], bool],
                       runtime: WorktreeRuntime | None = None, *,
                       provision: Callable[[ProvisionInput], Any] | None = None,
                       on_gate_line: LineObserver | None = None,
                       call: Callable[[str, ToolInput], Any] | None = None) -> dict[str, Any]:
    """Run the workflow; returns ``{cwd, branch, gate, cleanup}``.

    The provision step takes the inputs that are ``worktree.provision``'s fields (those
    given), validated as its request before anything runs. ``call(tool_id, request)``, when
    given, makes the tool calls (a surface passes a run's, so they are recorded there);
    otherwise they run directly on ``runtime``. ``provision(request)``, when given, runs the
    provision step instead (a notebook wraps it in its progress display); ``on_gate_line(stream,
    line)`` sees the gate's output lines as they are printed (the gate then runs as the tool
    does, validated the same way, but not through ``call``)."""
    def direct(tool_id: str, request: ToolInput) -> Any:
        return call_tool(tool_id, request, runtime)

    call = call or direct
    request = validate_input(ProvisionInput, {
        key: value for key, value in inputs.items()
        if key in ProvisionInput.wire_names() and value is not None})
    out = provision(request) if provision is not None else call("worktree.provision", request)
    cwd, branch = out["cwd"], out["branch"]
    handle = host.spawn(inputs.get("adapter") or "claude-code",
                        {"cwd": cwd, "workspaceSlug": inputs.get("workspaceSlug"),
                         "stepId": "code"})
    host.send_and_wait(handle, inputs["task"])
    gate_input = GateInput.from_python(cwd=cwd, cmd=inputs["gateCmd"])
    if on_gate_line is None:
        gate = call("worktree.run-gate", gate_input)
    else:
        gate = run_gate(gate_input.cwd, gate_input.cmd, on_line=on_gate_line)
    if not gate["passed"]:
        cleanup: dict[str, Any] = {"removed": False, "reason": "gate_failed"}
    elif approve(APPROVAL_PROMPT):
        cleanup = call("worktree.cleanup", CleanupInput.from_python(
            repo_root=inputs["repoRoot"], cwd=cwd, branch=branch,
            delete_branch=inputs.get("deleteBranch", True)))
    else:
        cleanup = {"removed": False, "reason": "cleanup_rejected"}
    return {"cwd": cwd, "branch": branch, "gate": gate, "cleanup": cleanup}
