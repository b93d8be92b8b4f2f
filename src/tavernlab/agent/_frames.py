"""What an agent loop's invocations are made of, shared by the loop and by delegation: an
invocation's progress (:class:`Frame`), a delegated task or handoff between two of them
(:class:`AgentTask`), the cancellation that unwinds them (:class:`LoopCancelled`), and the
part of the loop that delegation drives (:class:`LoopPort`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from tavernlab.agent._tools import Mode, ToolSnapshot
from tavernlab.host import Invocation, ToolGate
from tavernlab.models import CANCELLED_MESSAGE, ModelRequest
from tavernlab.workspace.roots import Profile

if TYPE_CHECKING:
    from tavernlab.host import RunCore



class LoopCancelled(Exception):
    """The run was cancelled; ``message`` is what ``run_cancelled`` says."""

    def __init__(self, message: str = CANCELLED_MESSAGE) -> None:
        super().__init__(message)
        self.message = message


@dataclass(slots=True)
class Frame:
    """One invocation's progress: its snapshot, transcript, rounds, gate and drift count."""

    invocation: Invocation
    kind: str
    exit_policy: str
    mode: Mode
    profile: Profile
    snapshot: ToolSnapshot
    request: ModelRequest
    gate: ToolGate
    max_rounds: int | None
    parent_id: str | None = None
    round: int = 1
    drift_attempts: int = 0
    exit: str | None = None
    #: The handoff task that started this invocation, and the one it handed the run to.
    incoming: AgentTask | None = None
    transfer: AgentTask | None = None
    #: What a delegated task returned (``task.return``).
    result_ref: str | None = None
    summary: str | None = None
    returned_status: str | None = None

    @property
    def owns_run_status(self) -> bool:
        """Root and handoff invocations move the run's status; return-mode children do
        not."""
        return self.kind in ("root", "handoff")


@dataclass(slots=True)
class AgentTask:
    """A delegated task or a handoff: who asked, who works on it, how it ends."""

    task_id: str
    kind: Literal["delegate", "handoff"]
    agent_id: str
    parent: Frame
    child: Frame
    brief: dict[str, Any]
    status: str = "queued"
    result_ref: str | None = None
    summary: str | None = None
    error: str | None = None
    reported: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def continuation(self) -> str:
        """``return_to_parent`` (a delegated task) or ``transfer_control`` (a handoff)."""
        return "return_to_parent" if self.kind == "delegate" else "transfer_control"

    @property
    def finished(self) -> bool:
        """Whether the task has ended."""
        return self.status in ("completed", "failed", "cancelled")

    def report(self) -> dict[str, Any]:
        """What ``agent.await`` and the results notice say of the task."""
        entry: dict[str, Any] = {"taskId": self.task_id, "agentId": self.agent_id,
                                 "status": self.status}
        if self.summary is not None:
            entry["summary"] = self.summary
        if self.result_ref is not None:
            entry["resultRef"] = self.result_ref
        if self.error is not None:
            entry["error"] = self.error
        return entry


class LoopPort(Protocol):
    """The loop as delegation sees it: the run, its invocations, and how one is made, started,
    played and ended."""

    core: RunCore
    frames: list[Frame]

    def new_frame(self, profile: Profile, *, kind: str, parent: Frame | None,
                  first_message: str, invocation: Invocation | None = None,
                  announce_binding: bool = False) -> Frame:
        """An invocation ready to run."""
        ...

    def start_frame(self, frame: Frame) -> None:
        """Announce that an invocation starts."""
        ...

    def run_frame(self, frame: Frame) -> None:
        """Play an invocation's rounds until a completion tool ends its turn."""
        ...

    def end_frame(self, frame: Frame, status: str) -> None:
        """Announce how an invocation that is not the run's last ended."""
        ...
