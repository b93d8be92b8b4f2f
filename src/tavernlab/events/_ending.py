"""Events of how a run and its invocations end: an invocation completed, a sub-agent's
result returned, the run completed, cancelled or failed (with upstream's failure payload).
A family defined on first use (see :data:`~tavernlab.events._base.LATER_FAMILIES`): the
run's start and its tool calls need none of it (the start: :mod:`tavernlab.events._lifecycle`).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from tavernlab.events._base import Event, Level
from tavernlab.events._lifecycle import InvocationRef
from tavernlab.ondisk import Model


class TaskReturn(Model):
    """``task_return_completed``: a sub-agent's result file (``{invocationId, path}``)."""

    invocation_id: str
    path: str


class MessageText(Model):
    """A payload that is one text: ``run_cancelled`` (``{message}``: the cancellation's
    reason) and ``persistent_changes_commit_failed`` (``{message}``: why publishing
    failed)."""

    message: str


#: An error text that starts with its code: ``<code>: <detail>`` (a code holds a ``.`` and
#: only ``[a-z0-9._-]``).
ERROR_CODE = re.compile(r"^([a-z0-9._-]*\.[a-z0-9._-]*):\s?(.*)$", re.DOTALL)


class RunFailure(Model):
    """``run_failed`` / ``run_partial_success``: upstream's failure payload ``{code, message,
    technicalMessage, retryable, userRetryable, details}``; a partial success adds the
    commits it keeps (``preservedCommitCount``, ``preservedCommits``)."""

    code: str
    message: str
    technical_message: str
    retryable: bool
    user_retryable: bool
    details: dict[str, Any] = Field(default_factory=dict)
    preserved_commit_count: int | None = None
    preserved_commits: list[dict[str, Any]] | None = None

    @classmethod
    def internal_fault(cls, text: str) -> RunFailure:
        """The payload of a run ended by an internal fault described by ``text``: its code
        when ``text`` starts with one, else ``agent.internal_error``; ``technicalMessage``
        is ``Internal error: <text>``; not retryable."""
        match = ERROR_CODE.match(text)
        code, message = (match.group(1), match.group(2)) if match else (
            "agent.internal_error", text)
        return cls(code=code, message=message, technical_message=f"Internal error: {text}",
                   retryable=False, user_retryable=False)


class AgentInvocationCompleted(Event):
    """An Invocation ended."""

    type: Literal["agent_invocation_completed"] = "agent_invocation_completed"
    payload: InvocationRef


class TaskReturnCompleted(Event):
    """A return-mode sub-agent wrote its result file."""

    type: Literal["task_return_completed"] = "task_return_completed"
    payload: TaskReturn


class RunCompleted(Event):
    """The run finished."""

    type: Literal["run_completed"] = "run_completed"
    payload: None = None


class RunCancelRequested(Event):
    """Cancellation was requested for the run's in-flight work."""

    type: Literal["run_cancel_requested"] = "run_cancel_requested"
    payload: None = None


class RunCancelled(Event):
    """The run ended as cancelled."""

    type: Literal["run_cancelled"] = "run_cancelled"
    payload: MessageText


class RunFailed(Event):
    """The run ended as failed (the loop's error, or a hand-played run's internal fault)."""

    type: Literal["run_failed"] = "run_failed"
    level: Level = "error"
    payload: RunFailure
