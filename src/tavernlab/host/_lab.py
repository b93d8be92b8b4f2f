"""``Lab``: one data directory holding chats, runs, sessions, skills and settings.

The on-disk layout is upstream's (docs/layout.md)::

    <lab>/_tauritavern/
      agent-workspaces/
        index/runs/<run-id>.json            copy of run.json
        index/run-summaries/<run-id>.json   summary projection
        chats/<workspace-id>/
          persistent-states/<state-id>/{manifest.json, persist/...}
          runs/<run-id>/{run.json, manifest.json, events.jsonl, input/, tool-args/,
                         tool-results/, output/, scratch/, plan/, summaries/, persist/}
                         (and tavernlab's own .tavernlab-calls, the call counter, and
                         .tavernlab-staging/, where atomic writes stage their bytes)
        sessions/                           see tavernlab.host._sessions
      skills/                               see tavernlab.skills
      host-chats/<workspace-id>.json        the simulated host's chats
      settings.json                         agent.retention
      sequential-ids.json                   ids SequentialIds handed out (host.reservations)

A lab is created on first use, its folder with a ``.gitignore`` of ``*`` (only a folder the
lab creates gets one: a lab opened in an existing folder leaves it as it is); two processes
(two kernels) may share one lab. Each lab has
its own tool registry (``tools=``), services (``services=``), clock and id factory
(``clock=``, ``ids=``): a lab built with :class:`~tavernlab.clock.FixedClock` and
:class:`~tavernlab.clock.SequentialIds` writes the same bytes every time it plays the same
run.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import tavernlab.layout as layout
from tavernlab.clock import (
    RANDOM_IDS,
    SYSTEM_CLOCK,
    Clock,
    IdFactory,
    SequentialIds,
    clock_settings,
    ids_settings,
)
from tavernlab.errors import InvalidData, RunStateError
from tavernlab.events import TERMINAL_EVENT_TYPES, Event, EventLog, JournalLog
from tavernlab.host._core import RunCore
from tavernlab.host._feed import RunFeed
from tavernlab.host._index import RunIndex
from tavernlab.host._liveness import LIVE_DIR, LiveRuns
from tavernlab.host._presentation import present
from tavernlab.host._registry import ToolProvider, ToolRegistry
from tavernlab.host._reservations import LabIdReservations
from tavernlab.host._run import Run
from tavernlab.host._services import LabServices
from tavernlab.host._starting import RunFactory, resolve_profile
from tavernlab.workspace.persist import Chat
from tavernlab.workspace.records import ChatTarget, RunRecord
from tavernlab.workspace.roots import ChatKind, Profile
from tavernlab.workspace.tools import ToolSpec

if TYPE_CHECKING:
    from tavernlab.host._retention import Retention
    from tavernlab.host._sessions import Session, SessionStore
    from tavernlab.skills import SkillRepository

DATA_DIR = "_tauritavern"
#: How often :meth:`Lab.follow` looks at the files when nothing new has arrived.
FOLLOW_POLL_S = 0.05
#: How long :meth:`Lab.follow` keeps reading after the run's terminal event.
FOLLOW_DRAIN_S = 0.3
#: How long :meth:`Lab.close` waits for a run's cancelled work to stop before it closes the
#: services anyway (the sandbox kills a job that ignores cancellation after 0.25 s).
CLOSE_GRACE_S = 5.0
WORKSPACES_DIR = "agent-workspaces"
#: The ``.gitignore`` a new lab's folder gets, so that it is never committed by accident.
LAB_GITIGNORE = "# a tavernlab lab: runs, chats and skills, not for version control\n*\n"


def make_lab_dir(root: Path) -> Path:
    """Create the folders of a lab at ``root`` (where missing) and return its data folder; a
    ``root`` this creates gets :data:`LAB_GITIGNORE`, an existing folder is left as it is."""
    created = not root.exists()
    (root / DATA_DIR / WORKSPACES_DIR).mkdir(parents=True, exist_ok=True)
    if created:
        # runs, chats and installed skills are working data: kept out of git
        (root / ".gitignore").write_text(LAB_GITIGNORE, encoding="utf-8")
    return root / DATA_DIR


class Lab:
    """A tavernlab data directory: the entry point of the Python API.

    >>> lab = Lab("my-lab")
    >>> run = lab.start_run(chat_id="alice")
    >>> run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "hi"})

    ``tools`` replaces the default tool set (providers or :class:`ToolSpec` objects, see
    :mod:`tavernlab.host._registry`); ``services`` gives the lab its own worker pool
    (default: the process-wide one); ``clock`` and ``ids`` make its records deterministic.
    A :class:`~tavernlab.clock.SequentialIds` given here continues after every id its seed
    has handed out in this lab before (:mod:`tavernlab.host._reservations`), so opening the
    lab again with the same seed never mints the id of a record that exists.
    Use it as a context manager (or call :meth:`close`) to release what it started.
    """

    def __init__(self, path: str | Path = "tavernlab-lab", *,
                 tools: Sequence[ToolProvider | ToolSpec] | None = None,
                 services: LabServices | None = None, clock: Clock | None = None,
                 ids: IdFactory | None = None) -> None:
        self.root = Path(path).resolve()
        self.data_dir = self.root / DATA_DIR
        self.workspaces_dir = self.data_dir / WORKSPACES_DIR
        make_lab_dir(self.root)
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.ids: IdFactory = ids or RANDOM_IDS
        if isinstance(self.ids, SequentialIds):
            self.ids.continues_in(LabIdReservations(self.data_dir, self.ids.prefix_seed))
        self.services = services or LabServices.shared()
        self.tools = ToolRegistry.build(tools, self.services)
        self.index = RunIndex(self.workspaces_dir)
        self._retention: Retention | None = None
        self._sessions: SessionStore | None = None
        self._skills: SkillRepository | None = None
        self._runs: weakref.WeakSet[RunCore] = weakref.WeakSet()
        #: The runs this lab holds open (see :mod:`tavernlab.host._liveness`).
        self.live = LiveRuns(self.root / LIVE_DIR)
        self._factory = RunFactory(index=self.index, skills=self._installed_skills,
                                   clock=self.clock, ids=self.ids,
                                   on_end=self._auto_prune)
        self.closed = False

    def __repr__(self) -> str:
        return f"<Lab {self.root}>"

    # -- lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        """Cancel this lab's running work, let it stop (work already started completes; at
        most :data:`CLOSE_GRACE_S` per run), then stop the services it owns (a shared worker
        pool stays for the other labs of the process). Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        cores = list(self._runs)
        for core in cores:
            if core.loop_cancel is not None and not core.record.is_terminal:
                core.loop_cancel("the lab was closed")
            for token in core.inflight.live():
                token.cancel("the lab was closed")
        for core in cores:
            core.inflight.wait_idle(CLOSE_GRACE_S)
            if core.loop_done is not None:
                core.loop_done.wait(CLOSE_GRACE_S)
            core.call_ids.close()
        self.live.close()
        self.services.close()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _require_open(self) -> None:
        if self.closed:
            raise RunStateError(f"lab {self.root} is closed")

    # -- parts --------------------------------------------------------------------------------

    @property
    def sessions(self) -> SessionStore:
        """Persistent agent sessions (docs/layout.md)."""
        if self._sessions is None:
            from tavernlab.host._sessions import SessionStore

            self._sessions = SessionStore(self.workspaces_dir, self.index, clock=self.clock,
                                          ids=self.ids)
        return self._sessions

    @property
    def retention(self) -> Retention:
        """Run retention: plan, apply and auto-prune (docs/persist.md)."""
        if self._retention is None:
            from tavernlab.host._retention import Retention

            self._retention = Retention(self.data_dir, self.workspaces_dir, self.index)
        return self._retention

    def _auto_prune(self) -> None:
        self.retention.auto_prune()

    @property
    def skills(self) -> SkillRepository:
        """The skill repository of this lab (install, list, validate, export)."""
        if self._skills is None:
            from tavernlab.skills import SkillRepository

            self._skills = SkillRepository(self.root, clock=self.clock, ids=self.ids)
        return self._skills

    def _installed_skills(self) -> SkillRepository | None:
        return self.skills if (self.data_dir / "skills").exists() else None

    def chat(self, chat_id: str, kind: ChatKind = "character") -> Chat:
        """The host chat ``chat_id`` (created on first write)."""
        return Chat(self.data_dir, chat_id, kind, clock=self.clock, ids=self.ids)

    def session(self, session_id: str) -> Session:
        """A session by id (see :attr:`sessions`)."""
        return self.sessions.get(session_id)

    # -- runs -----------------------------------------------------------------------------------

    def start_run(self, chat_id: str | None = None, *, kind: ChatKind = "character",
                  presentation: Literal["foreground", "background"] = "foreground",
                  persist_base: str | None = None, context: Mapping[str, Any] | None = None,
                  profile: Profile | Mapping[str, Any] | None = None,
                  generation_type: str = "normal", skills: list[str] | None = None,
                  skill_scopes: Mapping[str, str] | None = None,
                  legacy_run_script: bool = False, session: str | None = None) -> Run:
        """Start a run for a chat (``chat_id``) or a session (``session``).

        ``persist_base`` is the persist state the run starts from (the host's choice is
        ``lab.chat(id).current_persist_state()``); ``context`` is the frozen host facts
        (see :mod:`tavernlab.workspace.macros`); ``skills`` limits the bound skills to these
        names (else the Profile's skill policy over ``skill_scopes`` decides);
        ``legacy_run_script`` turns on the ``skill.run_script`` compatibility mode.
        Everything is validated before anything is written. Where the lab's clock and ids
        stand when the call begins is recorded in ``input/origin.json`` (so a replay can
        resume them there, see :mod:`tavernlab.host._starting`).
        """
        self._require_open()
        origin = {"clock": clock_settings(self.clock), "ids": ids_settings(self.ids)}
        if (chat_id is None) == (session is None):
            raise InvalidData("start_run needs exactly one of chat_id or session")
        resolved = resolve_profile(profile, self.sessions.profile if session else Profile)
        if legacy_run_script:
            resolved.skills.legacy_run_script = True
        resolved.policy()
        if presentation not in ("foreground", "background"):
            raise InvalidData("presentation must be `foreground` or `background`")
        if session is not None:
            if context is not None:
                raise InvalidData("Session runs have no host context")
            core = self._factory.start_session(self.sessions, session, resolved,
                                               presentation=presentation, names=skills,
                                               scopes=skill_scopes, origin=origin)
        else:
            assert chat_id is not None
            core = self._factory.start_chat(
                self.chat(chat_id, kind), resolved, presentation=presentation,
                persist_base=persist_base, snapshot=None if context is None else dict(context),
                generation_type=generation_type, names=skills, scopes=skill_scopes,
                origin=origin)
        return self._handle(core)

    def start_loop_run(self, chat_id: str, *, kind: ChatKind = "character",
                       presentation: Literal["foreground", "background"],
                       profile: Profile, persist_base: str | None = None) -> Run:
        """A new Chat run for the agent loop (:mod:`tavernlab.agent`): its main invocation
        is ``inv_root`` and it stops in ``assembling_context`` with its skills bound, for the
        loop to assemble the model's context. Use :meth:`run_agent` instead."""
        self._require_open()
        origin = {"clock": clock_settings(self.clock), "ids": ids_settings(self.ids)}
        profile.policy()
        core = self._factory.start_chat(
            self.chat(chat_id, kind), profile, presentation=presentation,
            persist_base=persist_base, snapshot=None, generation_type="normal", names=None,
            scopes=None, origin=origin, loop=True)
        return self._handle(core)

    # -- the agent loop (tavernlab.agent, reached through the presenter registry) ----------------

    def run_agent(self, task: str, *, model: Any, chat_id: str | None = None,
                  profile: Profile | Mapping[str, Any] | None = None,
                  presentation: Literal["foreground", "background"] | None = None,
                  stream: bool | None = None, **options: Any) -> Any:
        """Run the agent loop on ``task`` with ``model`` (a provider such as
        :class:`tavernlab.models.Scripted`) in a new run, to its terminal state, and return
        the :class:`tavernlab.agent.AgentOutcome` (``run``, ``status``, ``failure``, ``usage``,
        ``rounds``). ``chat_id`` defaults to ``agent``; ``presentation`` and ``stream``
        default to the Profile's ``run`` settings. See :func:`tavernlab.agent.start_agent`
        for ``options`` (``on_delta`` for the live stream, ``review`` for the host's answer
        to commits)."""
        return present("agent.run", self, task, model=model, chat_id=chat_id, profile=profile,
                       presentation=presentation, stream=stream, **options)

    def start_agent(self, task: str, *, model: Any, chat_id: str | None = None,
                    profile: Profile | Mapping[str, Any] | None = None,
                    presentation: Literal["foreground", "background"] | None = None,
                    stream: bool | None = None, **options: Any) -> Any:
        """Start the agent loop like :meth:`run_agent`, on a thread of its own, and return
        its :class:`tavernlab.agent.AgentHandle` at once (``run``, ``cancel()``,
        ``wait(timeout=None)``)."""
        return present("agent.start", self, task, model=model, chat_id=chat_id,
                       profile=profile, presentation=presentation, stream=stream, **options)

    def tool_definitions(self, profile: Profile | Mapping[str, Any] | None = None, *,
                         provider_format: str = "openai_compatible") -> list[dict[str, Any]]:
        """Exactly what a model driving a run of ``profile`` (default: the default writer)
        is shown of this lab's tools, in ``provider_format``'s wire shape: the root
        invocation's tools in the Profile's order, with the descriptions its context gives
        them."""
        defined: list[dict[str, Any]] = present("agent.tool_definitions", self, profile,
                                                provider_format=provider_format)
        return defined

    def open_run(self, run_id: str) -> Run:
        """Reopen a run from disk (any process). Read records start empty; the run continues
        in a new round."""
        self._require_open()
        record = self.index.load(run_id)
        run_dir, workspace_dir, chat = self._locate(record)
        return self._handle(self._factory.reopen(record, run_dir, workspace_dir, chat))

    def _locate(self, record: RunRecord) -> tuple[Path, Path, Chat | None]:
        """``(run directory, workspace directory, chat)`` of an indexed run."""
        target = record.target
        if isinstance(target, ChatTarget):
            chat = self.chat(target.chat_ref.stable_chat_id, target.chat_ref.kind)
            run_dir = chat.workspace_dir / "runs" / record.id
            return run_dir, run_dir, chat
        session = self.sessions.get(target.session_id)
        return session.dir / "runs" / record.id, session.workspace_dir, None

    def follow(self, run_id: str, *, after: int | Event | None = None,
               timeout: float | None = None, poll: float = FOLLOW_POLL_S) -> Iterator[Event]:
        """Yield a run's events and journal records as they are appended, by this or any
        other process (a second kernel, the command line), reading the files only.

        Starts after ``after`` (default: from the beginning); stops once the run's terminal
        event (``run_completed``, ``run_partial_success``, ``run_cancelled``, ``run_failed``)
        has been seen and :data:`FOLLOW_DRAIN_S` seconds passed with nothing new (the
        finishing call's own records come right after it), or when ``timeout`` seconds pass
        with nothing new.

        ``timeout`` must be a finite number of seconds ``>= 0`` and ``poll`` a finite number
        ``> 0``; anything else (``nan``, ``inf``, a negative number, a non-number) is refused
        with :class:`InvalidData` when ``follow`` is called, before anything is read.
        """
        if timeout is not None and not _finite(timeout, allow_zero=True):
            raise InvalidData(
                f"timeout must be a finite number of seconds >= 0, not {timeout!r}")
        if not _finite(poll, allow_zero=False):
            raise InvalidData(f"poll must be a finite number of seconds > 0, not {poll!r}")
        run_dir = self._locate(self.index.load(run_id))[0]
        return self._follow(run_dir, run_id, after, timeout, poll)

    def _follow(self, run_dir: Path, run_id: str, after: int | Event | None,
                timeout: float | None, poll: float) -> Iterator[Event]:
        events = EventLog(run_dir / layout.EVENTS, run_id, clock=self.clock, ids=self.ids)
        feed = RunFeed(events, JournalLog(run_dir / layout.JOURNAL, events))
        quiet_since = time.monotonic()  # real time: this is waiting, not a recorded time
        ended = False
        while True:
            records = feed.read(after)
            for record in records:
                yield record
                after = record
                ended = ended or record.type in TERMINAL_EVENT_TYPES
            quiet = time.monotonic() - quiet_since
            if records:
                quiet_since = time.monotonic()
            elif (ended and quiet >= FOLLOW_DRAIN_S) or (timeout is not None
                                                         and quiet >= timeout):
                return
            else:
                time.sleep(poll)

    def _handle(self, core: RunCore) -> Run:
        self._runs.add(core)
        self.live.hold(core.id)
        return Run(core, self.tools, self.services)

    def runs(self) -> list[RunRecord]:
        """Every indexed run, newest first."""
        return sorted(self.index.records(), key=lambda r: r.created_at, reverse=True)

    def shown_statuses(self, records: Sequence[RunRecord] | None = None) -> dict[str, str]:
        """The status to show per run id: the record's, or ``interrupted`` for a run a dead
        process left unfinished (no living process holds it; see
        :mod:`tavernlab.host._liveness`)."""
        return {r.id: self.live.shown_status(r)
                for r in (self.runs() if records is None else records)}


def _finite(value: object, *, allow_zero: bool) -> bool:
    """Whether ``value`` is a real number (not a bool), finite, and positive (or zero)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and (value >= 0 if allow_zero else value > 0)
