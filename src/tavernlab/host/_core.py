"""The state behind a run and its record keeping: one place that writes ``run.json``, the
index copy, the summary and ``events.jsonl``.

:class:`RunCore` is what the host's modules share (dispatch, results, commits); the user's
handle is :class:`tavernlab.host.Run`. Everything observable about a run goes through
:meth:`RunCore.emit`.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import tavernlab.layout as layout
from tavernlab.cancel import CancelToken
from tavernlab.clock import Clock, IdFactory, is_deterministic, rfc3339
from tavernlab.errors import InvalidData, RunStateError
from tavernlab.events import (
    AgentInvocationCreated,
    Event,
    EventLog,
    EventScope,
    InvocationRef,
    InvocationStart,
    JournalLog,
    JournalRecord,
    Level,
    StatusChange,
    StatusChanged,
    repair_logs,
)
from tavernlab.host._activity import Activities
from tavernlab.host._call_ids import CallCounter
from tavernlab.host._feed import RunFeed
from tavernlab.host._index import RunIndex
from tavernlab.host._invocation import Invocation
from tavernlab.host._ledger import RunLedger
from tavernlab.host._restore import call_number, restore
from tavernlab.js import DEFAULT_DEADLINE_S
from tavernlab.ondisk import Model
from tavernlab.workspace.macros import FrozenContext
from tavernlab.workspace.persist import Chat, PersistSnapshot
from tavernlab.workspace.records import RunRecord, RunStatus, dump_model
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.scope import MutationTracker, ScopedWorkspaceFs, SkillsMount
from tavernlab.workspace.storage import (
    CALL_COUNTER_NAME,
    STAGING_DIR_NAME,
    LabLinks,
    WorkspaceFs,
    clear_staging,
)

E = TypeVar("E", bound=Event)
J = TypeVar("J", bound=JournalRecord)


@dataclass(slots=True)
class RunCounters:
    """What a run counts as it goes (checkpointed, and restored when a run is reopened:
    :mod:`tavernlab.host._restore`)."""

    round: int = 1
    #: The last ``call_<N>`` number this process handed out or saw (the run's own counter,
    #: :mod:`tavernlab.host._call_ids`, is what hands numbers out).
    call_seq: int = 0
    calls: int = 0
    calls_per_tool: Counter[str] = field(default_factory=Counter)
    explicit_commits: int = 0
    output_target: tuple[int, int] | None = None
    persist_state_id: str | None = None
    round_cancelled: bool = False
    subagent_results: Counter[str] = field(default_factory=Counter)
    #: The last round with a finished call, and the highest ``call_N`` number finished: a
    #: reopened run continues in the next round, after that number.
    last_call_round: int = 0
    max_call_number: int = 0

    def call_finished(self, tool_id: str, round_number: int, call_id: str) -> None:
        """Count a finished (completed or failed) call."""
        self.calls += 1
        self.calls_per_tool[tool_id] += 1
        self.last_call_round = max(self.last_call_round, round_number)
        self.max_call_number = max(self.max_call_number, call_number(call_id))

    def checkpoint(self) -> dict[str, Any]:
        """The fields a reopened run needs, as ``counters.jsonl`` stores them (sub-agents
        are added by the core)."""
        return {"calls": self.calls, "callsPerTool": dict(self.calls_per_tool),
                "lastCallRound": self.last_call_round, "maxCallNumber": self.max_call_number,
                "explicitCommits": self.explicit_commits,
                "outputTarget": list(self.output_target) if self.output_target else None,
                "persistStateId": self.persist_state_id,
                "subagentResults": dict(self.subagent_results)}

    @classmethod
    def restored(cls, values: Mapping[str, Any]) -> RunCounters:
        """The counters of a reopened run; it continues in a new round."""
        target = values["outputTarget"]
        return cls(round=values["lastCallRound"] + 1, call_seq=values["maxCallNumber"],
                   calls=values["calls"], calls_per_tool=Counter(values["callsPerTool"]),
                   explicit_commits=values["explicitCommits"],
                   output_target=(target[0], target[1]) if target else None,
                   persist_state_id=values["persistStateId"],
                   subagent_results=Counter(values["subagentResults"]),
                   last_call_round=values["lastCallRound"],
                   max_call_number=values["maxCallNumber"])


class Tracked:
    """The block of :meth:`InFlight.track` (a plain context manager: one per tool call)."""

    __slots__ = ("_flight", "_token")

    def __init__(self, flight: InFlight, token: CancelToken) -> None:
        self._flight = flight
        self._token = token

    def __enter__(self) -> CancelToken:
        self._flight._add(self._token)
        return self._token

    def __exit__(self, *exc: object) -> None:
        self._flight._discard(self._token)


class InFlight:
    """The cancel tokens of a run's work that is running now (tool calls, ``js`` jobs)."""

    def __init__(self) -> None:
        self._tokens: set[CancelToken] = set()
        self._idle = threading.Condition()

    def track(self, token: CancelToken) -> Tracked:
        """Keep ``token`` reachable by :meth:`live` while the block runs (the block gets
        ``token``)."""
        return Tracked(self, token)

    def _add(self, token: CancelToken) -> None:
        with self._idle:
            self._tokens.add(token)

    def _discard(self, token: CancelToken) -> None:
        with self._idle:
            self._tokens.discard(token)
            self._idle.notify_all()

    def live(self) -> list[CancelToken]:
        """The tokens not cancelled yet."""
        with self._idle:
            return [t for t in self._tokens if not t.cancelled]

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no work is in flight (at most ``timeout`` seconds); returns whether
        it is idle."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._tokens, timeout)


class RunCore:
    """A run's state, its files and the one path every record takes."""

    def __init__(self, *, record: RunRecord, run_dir: Path, workspace_dir: Path,
                 profile: Profile, frozen: FrozenContext, chat: Chat | None,
                 persist_snapshot: PersistSnapshot | Callable[[], PersistSnapshot] | None,
                 skills: Mapping[str, Any],
                 skills_mount: SkillsMount | None, index: RunIndex, clock: Clock,
                 ids: IdFactory, on_end: Callable[[], None],
                 before_round: Callable[[], object] | None = None,
                 links: LabLinks | None = None, main_id: str | None = None) -> None:
        self.record = record
        self.dir = run_dir
        self.workspace_dir = workspace_dir
        self.profile = profile
        self.frozen = frozen
        self.chat = chat
        self._persist_snapshot = persist_snapshot
        self.skills = skills
        self.skills_mount = skills_mount
        self.index = index
        self.clock = clock
        self.ids = ids
        self.on_end = on_end
        self._before_round = before_round
        self._prepared_round = 0
        self.fs = WorkspaceFs(workspace_dir, links=links)
        self.log = EventLog(run_dir / layout.EVENTS, record.id, clock=clock, ids=ids)
        self.journal = JournalLog(run_dir / layout.JOURNAL, self.log)
        self.ledger = RunLedger(record, run_dir, index, events=self.log, journal=self.journal,
                                summary=self.summary, checkpoint=self.checkpoint)
        self.feed = RunFeed(self.log, self.journal, on_written=self.ledger.sync)
        self.activities = Activities(self.fs, self.feed, live=not is_deterministic(clock))
        self.tracker = MutationTracker()
        self.counters = RunCounters()
        #: The run's call numbers, shared with every other process writing it.
        self.call_ids = CallCounter(run_dir / CALL_COUNTER_NAME)
        #: Where the run's own records stage their temporary files.
        self.staging = run_dir / STAGING_DIR_NAME
        self.inflight = InFlight()
        self.shell_deadline_s = DEFAULT_DEADLINE_S
        self._announced: set[str] = set()
        self._main: Invocation | None = None
        self._main_profile = profile
        self._main_lock = threading.Lock()
        #: A model-driven run names its main agent ``inv_root`` as upstream does.
        self._main_id = main_id
        #: Set by the agent loop driving this run: ``cancel(reason)`` stops the loop (from
        #: any thread) and returns how many pieces of work it cancelled; ``done`` is set
        #: once the loop's thread has ended.
        self.loop_cancel: Callable[[str | None], int] | None = None
        self.loop_done: threading.Event | None = None
        #: Return-mode sub-agents by invocation id, in start order.
        self.subagents: dict[str, Invocation] = {}
        #: The journal offset of each sub-agent's start record (for the checkpoints).
        self._subagent_offsets: dict[str, int] = {}

    @property
    def id(self) -> str:
        """The run id."""
        return self.record.id

    @property
    def is_chat(self) -> bool:
        """Whether the run works for a Chat target."""
        return self.record.target.kind == "chat"

    @property
    def persist_snapshot(self) -> PersistSnapshot | None:
        """What ``persist/`` held when the run started (read from ``input/`` on first use
        by a reopened run: it lists every file of the state)."""
        if callable(self._persist_snapshot):
            self._persist_snapshot = self._persist_snapshot()
        return self._persist_snapshot

    @persist_snapshot.setter
    def persist_snapshot(self, snapshot: PersistSnapshot | None) -> None:
        self._persist_snapshot = snapshot

    @property
    def commit_required(self) -> bool:
        """A foreground Chat run needs an explicit commit before it may finish."""
        return (self.is_chat and self.record.presentation == "foreground"
                and not self.counters.explicit_commits)

    # -- records ------------------------------------------------------------------------------

    def emit(self, kind: type[E], payload: Model | None, *, level: Level | None = None,
             scope: EventScope | None = None) -> None:
        """Append a typed event to ``events.jsonl`` (validated before it is written) and
        publish it to the run's subscribers."""
        self.feed.emit(kind, payload, level=level, scope=scope)

    def note(self, kind: type[J], payload: Model) -> str:
        """Append a record to ``journal.jsonl`` and publish it; returns its id."""
        return self.feed.note(kind, payload)

    def set_status(self, status: RunStatus, *, index: bool = True) -> None:
        """Move to ``status``: ``status_changed`` and ``run.json``; also the index copy unless
        ``index`` is false (a tool call's round trip refreshes the index once, when it
        returns to ``calling_model``)."""
        previous = self.record.status
        if previous == status:
            return
        with self.feed.lock:
            self.record.status = status
            self.record.updated_at = self.clock.now()
            self.ledger.changed(index=index, summary=self.record.is_terminal)
            self.emit(StatusChanged, StatusChange(status=status))
            if self.record.is_terminal and not self.feed.holding:
                self.call_ids.close()  # no call follows until the run is resumed (a call
                # that ended the run lets it go once its records are written)

    def save_record(self, *, index: bool = True, summary: bool = True) -> None:
        """Write ``run.json``, its index copy and (at creation and when the run ends, not on
        every transient status) the summary projection: now, or when the batch of records
        open on this thread is written (:mod:`tavernlab.host._ledger` says when each file
        is rewritten)."""
        with self.feed.lock:
            self.ledger.changed(index=index, summary=summary)
            if not self.feed.holding:
                self.ledger.sync(True)

    def summary(self) -> dict[str, Any]:
        """The run summary projection stored in ``index/run-summaries/``."""
        counters = self.counters
        return {
            "runId": self.id,
            "target": dump_model(self.record.target),
            "status": self.record.status,
            "presentation": self.record.presentation,
            "createdAt": rfc3339(self.record.created_at),
            "updatedAt": rfc3339(self.record.updated_at),
            "round": counters.round,
            "toolCalls": counters.calls,
            "explicitCommits": counters.explicit_commits,
            "outputMessage": list(counters.output_target) if counters.output_target else None,
            "persistStateId": counters.persist_state_id,
        }

    def prepare_round(self) -> None:
        """Once per round, before its first tool call or ``js`` job: let the lab bring its
        development skills up to date (so a change never lands in the middle of a round)."""
        if self._before_round is not None and self._prepared_round != self.counters.round:
            self._prepared_round = self.counters.round
            self._before_round()

    def require_active(self) -> None:
        """Refuse work on a run that has ended."""
        if self.record.is_terminal:
            raise RunStateError(f"run `{self.id}` is {self.record.status}; call run.resume() "
                                "to continue it")

    def fail(self, error: str) -> None:
        """End the run as failed (an internal fault), once: ``run_failed`` carries the
        failure payload of ``error`` (:meth:`RunFailure.internal_fault`)."""
        from tavernlab.events import RunFailed, RunFailure

        if not self.record.is_terminal:
            self.set_status("failed")
            self.emit(RunFailed, RunFailure.internal_fault(error))

    # -- invocations --------------------------------------------------------------------------

    @property
    def main(self) -> Invocation:
        """The run's main agent (announced when the run starts). Its id is minted on first
        use, so reading a reopened run writes nothing (a lab with deterministic ids reserves
        them on disk; on a full disk the run still reads)."""
        with self._main_lock:
            if self._main is None:
                self._main = self.new_invocation("main", "main", self._main_profile,
                                                 announce=False, invocation_id=self._main_id)
            return self._main

    def new_invocation(self, agent_id: str, mode: Literal["main", "return"], profile: Profile,
                       *, announce: bool = True, invocation_id: str | None = None
                       ) -> Invocation:
        """An agent of this run with its own policy view over the shared workspace."""
        scope = ScopedWorkspaceFs(self.fs, profile.policy(), skills=self.skills_mount,
                                  tracker=self.tracker)
        if invocation_id is None:
            invocation_id = self.ids.new("inv")
            if (self.dir / layout.tool_args_dir(invocation_id)).exists():
                raise InvalidData(f"invocation id `{invocation_id}` from the lab's id factory "
                                  "is already taken by an agent of this run")
        invocation = Invocation(invocation_id, agent_id, mode=mode,
                                profile=profile, scope=scope, skills=self.skills)
        if announce:
            self.announce(invocation)
        return invocation

    def start_subagent(self, agent_id: str, profile: Profile) -> Invocation:
        """A return-mode sub-agent, journaled with its Profile (a reopened run restores it)."""
        from tavernlab.events import SubagentStart, SubagentStarted

        for root in profile.policy().materialized_roots:
            (self.workspace_dir / root).mkdir(exist_ok=True)
        invocation = self.new_invocation(agent_id, "return", profile)
        self.subagents[invocation.id] = invocation
        with self.feed.lock:
            record_id = self.note(SubagentStarted, SubagentStart(
                invocation_id=invocation.id, agent_id=agent_id, profile=profile.to_json()))
            self.feed.flush()
            self._subagent_offsets[invocation.id] = self.journal.written_at[record_id]
        return invocation

    def announce(self, invocation: Invocation, payload: InvocationStart | None = None) -> None:
        """Record ``agent_invocation_created`` for an Invocation (once); ``payload`` replaces
        the default (:meth:`invocation_ref` with status ``created``; the loop passes its
        own kind and parent)."""
        if invocation.id in self._announced:
            return
        self._announced.add(invocation.id)
        if payload is None:
            main = invocation.mode == "main"
            payload = InvocationStart(
                **dict(self.invocation_ref(invocation, "created")),
                exit_policy="run_finish_allowed" if main else "task_return_required")
        self.emit(AgentInvocationCreated, payload, scope=EventScope(invocation_id=invocation.id))

    def invocation_ref(self, invocation: Invocation, status: str) -> InvocationRef:
        """The ``agent_invocation_*`` payload of a hand-played Invocation in ``status``: the
        main agent is the ``root``, a return-mode sub-agent a ``subagent`` of the main agent
        (created with ``exitPolicy`` ``run_finish_allowed`` and ``task_return_required``)."""
        main = invocation.mode == "main"
        return InvocationRef(
            invocation_id=invocation.id, parent_invocation_id=None if main else self.main.id,
            profile_id=invocation.profile.id, kind="root" if main else "subagent",
            status=status)

    def checkpoint(self) -> dict[str, Any]:
        """The counters a reopened run needs, with its sub-agents' journal offsets."""
        values = self.counters.checkpoint()
        values["subagents"] = [[i, o] for i, o in self._subagent_offsets.items()]
        return values

    def restore_counters(self) -> None:
        """Restore the counters and sub-agents of a run reopened from disk (from its
        checkpoint, see :mod:`tavernlab.host._restore`); the run continues in a new round.
        An unfinished last line of either log (a writer killed mid-append) is cut away
        first, and journaled (:func:`~tavernlab.events.repair_logs`), and what
        killed writers left staged is removed
        (:func:`~tavernlab.workspace.storage.clear_staging`)."""
        repair_logs(self.log, self.journal)
        self.fs.clear_staging()
        if self.dir != self.workspace_dir:
            clear_staging(self.dir)
        restored = restore(self.log, self.journal)
        self.counters = RunCounters.restored(restored.values)
        for start, offset in restored.subagents:
            invocation = self.new_invocation(
                start.agent_id, "return", Profile.model_validate(start.profile),
                announce=False, invocation_id=start.invocation_id)
            self._announced.add(invocation.id)
            self.subagents[invocation.id] = invocation
            self._subagent_offsets[invocation.id] = offset
        self.ledger.restored(restored.covered)
