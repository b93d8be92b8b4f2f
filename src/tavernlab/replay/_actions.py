"""The actions of a run, read back from its records: what a replay plays, in order.

A run's ``events.jsonl`` and journal (merged, :meth:`tavernlab.host.Run.events`) say
everything the driver of the run did, so the action list is *derived*, never recorded a
second time:

* ``tool_call_requested`` is a **tool call** (call id, tool, calling invocation, round; the
  arguments are in the run's ``tool-args/`` file the event names, the stored result in the
  ``tool_result_stored`` event that follows); ``run.shell`` and a magic's shell call are
  tool calls too;
* ``js_job_started`` is a **js job** (``run.js``: argv, cwd, command; its stdin and eval name
  are in the run's ``js-jobs/<job-id>.json``);
* ``round_ended`` is **next round** (its auto-commit records come just before it);
* ``subagent_started`` is a **sub-agent** start with its Profile (its
  ``agent_invocation_created`` comes just before it);
* ``run_cancel_requested`` is a **cancellation** of the action running at that moment (its
  payload is ``null``; a cancelled js job's ``js_job_finished`` keeps the reason
  ``run.cancel(reason)`` was given, a cancelled tool call's reason is not recorded and the
  replay cancels it with an empty one);
* a second main agent (``agent_invocation_created`` of an invocation that is not a
  ``subagent``, or a js job of an unknown main invocation) is a **reopen**
  (``lab.open_run``), and a status change to ``calling_model`` while the previous
  ``status_changed`` named a terminal status is a **resume**.

Each action keeps ``at``: the index of its first record in the merged stream, which is how a
divergent record is attributed to the action that produced it (records belong to the last
action that started at or before them). A finish is the ``workspace.finish`` tool call.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field

import tavernlab.layout as layout
from tavernlab.events import Event, job_label
from tavernlab.ondisk import Model
from tavernlab.workspace.records import TERMINAL_STATUSES


class ToolCall(Model):
    """A tool call (``run.call_tool``, ``run.shell``, ``run.finish``)."""

    kind: Literal["tool_call"] = "tool_call"
    at: int
    call_id: str
    tool_id: str
    invocation_id: str
    round: int
    arguments_path: str
    result_path: str | None = None
    cancel: str | None = None


class JsJob(Model):
    """A ``run.js`` job of the main agent."""

    kind: Literal["js_job"] = "js_job"
    at: int
    job_id: str
    command: Literal["js", "node", "deno"]
    argv: list[str]
    cwd: str
    job_path: str
    cancel: str | None = None


class NextRound(Model):
    """``run.next_round()`` ending ``round``."""

    kind: Literal["next_round"] = "next_round"
    at: int
    round: int


class Subagent(Model):
    """``run.start_subagent(agent_id, profile)``."""

    kind: Literal["subagent"] = "subagent"
    at: int
    agent_id: str
    invocation_id: str
    profile: dict[str, Any]


class Reopen(Model):
    """``lab.open_run(run_id)``: the run continues with a new main agent."""

    kind: Literal["reopen"] = "reopen"
    at: int
    invocation_id: str


class Resume(Model):
    """``run.resume()`` of a finished run."""

    kind: Literal["resume"] = "resume"
    at: int


Action = Annotated[ToolCall | JsJob | NextRound | Subagent | Reopen | Resume,
                   Field(discriminator="kind")]


def describe(action: Action) -> str:
    """A short label: ``workspace.shell call_3``, ``js roll.js 2``, ``next round``..."""
    if isinstance(action, ToolCall):
        return f"{action.tool_id} {action.call_id}"
    if isinstance(action, JsJob):
        return job_label(action.command, action.argv)
    if isinstance(action, NextRound):
        return f"next round (end of round {action.round})"
    if isinstance(action, Subagent):
        return f"start sub-agent {action.agent_id}"
    if isinstance(action, Reopen):
        return "reopen the run"
    return "resume the run"


#: The problem a cancellation outside every action is.
CANCEL_WITHOUT_ACTION = "a cancellation with no running action"


@dataclass
class Derivation:
    """The actions found in a record stream, and what could not be understood."""

    actions: list[Action] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class _Reader:
    """The state of one pass over a record stream."""

    out: Derivation = field(default_factory=Derivation)
    running: dict[str, ToolCall | JsJob] = field(default_factory=dict)
    announced: dict[str, int] = field(default_factory=dict)
    main_id: str | None = None
    auto_commit_at: int | None = None
    #: The status the last ``status_changed`` moved the run to.
    status: str = "created"

    def reopen_if_new(self, at: int, invocation_id: str) -> None:
        if self.main_id is None:
            self.main_id = invocation_id
        elif invocation_id != self.main_id:
            self.out.actions.append(Reopen(at=at, invocation_id=invocation_id))
            self.main_id = invocation_id

    def start(self, key: str, action: ToolCall | JsJob) -> None:
        self.out.actions.append(action)
        self.running[key] = action

    def read(self, at: int, record: Event) -> None:
        kind, p = record.type, record.payload
        if kind == "agent_invocation_created":
            if p.kind != "subagent":
                self.reopen_if_new(at, p.invocation_id)
            else:
                self.announced[p.invocation_id] = at
        elif kind == "tool_call_requested":
            self.start(p.call_id, ToolCall(
                at=at, call_id=p.call_id, tool_id=p.tool_id, invocation_id=p.invocation_id,
                round=p.round, arguments_path=p.arguments_path or ""))
        elif kind == "tool_result_stored" and isinstance(call := self.running.get(p.call_id),
                                                         ToolCall):
            call.result_path = p.path
        elif kind in ("tool_call_completed", "tool_call_failed", "js_job_finished"):
            done = self.running.pop(p.call_id if kind != "js_job_finished" else p.job_id, None)
            if kind == "js_job_finished" and done is not None and p.cancel_reason is not None:
                done.cancel = p.cancel_reason
        elif kind == "js_job_started":
            self.reopen_if_new(at, p.invocation_id)
            self.start(p.job_id, JsJob(at=at, job_id=p.job_id, command=p.command,
                                       argv=list(p.argv), cwd=p.cwd,
                                       job_path=layout.js_job_path(p.job_id)))
        else:
            self.read_control(at, record)

    def read_control(self, at: int, record: Event) -> None:
        kind, p = record.type, record.payload
        if kind == "chat_commit_requested" and not p.is_explicit and not self.running:
            self.auto_commit_at = at
        elif kind == "round_ended":
            first = self.auto_commit_at if p.auto_committed and self.auto_commit_at else at
            self.out.actions.append(NextRound(at=first, round=p.round))
            self.auto_commit_at = None
        elif kind == "subagent_started":
            self.out.actions.append(Subagent(
                at=self.announced.pop(p.invocation_id, at), agent_id=p.agent_id,
                invocation_id=p.invocation_id, profile=dict(p.profile)))
        elif kind == "run_cancel_requested":
            if not self.running:
                self.out.problems.append(f"record {at}: {CANCEL_WITHOUT_ACTION}")
            else:
                list(self.running.values())[-1].cancel = ""
        elif kind == "status_changed":
            if self.status in TERMINAL_STATUSES and p.status == "calling_model":
                self.out.actions.append(Resume(at=at))
            self.status = p.status


def derive_actions(records: Sequence[Event]) -> Derivation:
    """The actions of a run from its merged records (see the module notes); actions still
    running at the end are reported in ``problems``."""
    reader = _Reader()
    for at, record in enumerate(records):
        reader.read(at, record)
    for key, action in reader.running.items():
        reader.out.problems.append(f"{describe(action)} ({key}) has not finished")
    return reader.out


def action_at(starts: Sequence[int], position: int) -> int:
    """The index of the action that produced the record at ``position``, given the ``at`` of
    every action in order (the last one that started at or before it); ``-1`` for the
    records of the run's start."""
    return bisect_right(starts, position) - 1
