"""Starting and reopening runs: validation first, then the run's files in upstream's order
(docs/layout.md).

A new run writes ``run.json``, ``run_created``, its roots, ``input/`` (prompt snapshot,
resolved Profile, skill bindings, system prompt, persist snapshot) and ``manifest.json``, then
moves ``initializing_workspace`` → ``assembling_context`` → ``calling_model``.

Two more files of ``input/`` (tavernlab's own, for :mod:`tavernlab.replay`) record what a
replay needs to start the same run in a fresh lab: ``origin.json`` holds where the lab's clock
and ids stood when ``start_run`` began (:func:`tavernlab.clock.clock_settings` and
:func:`~tavernlab.clock.ids_settings`; ``null`` for the system clock and random ids), and
``host_chat.json`` is a byte copy of the chat's host file as it was before the run (absent
when the chat had none yet), since the run's commits change that file afterwards. Everything the
caller passes is validated before anything is written. A reopened run reads the same files
back, including the skill bindings fixed at its start (never a same-named package installed
later).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import tavernlab.layout as layout
from tavernlab.clock import Clock, IdFactory
from tavernlab.errors import InvalidData, SkillUnavailable
from tavernlab.events import (
    ContextAssembled,
    ContextSummary,
    PersistentProjectionInitialized,
    RootList,
    RunCreated,
    RunCreation,
    SkillScopesResolved,
    SkillSet,
    WorkspaceInitialized,
    WorkspaceTarget,
    collector_paused,
    json_string,
)
from tavernlab.host._core import RunCore
from tavernlab.host._index import RunIndex
from tavernlab.workspace.macros import FrozenContext, FrozenMacros
from tavernlab.workspace.persist import Chat, PersistSnapshot
from tavernlab.workspace.records import (
    Artifact,
    ChatRef,
    ChatTarget,
    RootSpec,
    RunRecord,
    SessionTarget,
    WorkspaceManifest,
    dump_model,
    read_json,
    write_json,
)
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.storage import LabLinks

if TYPE_CHECKING:  # the skill engine is loaded only by a run that binds or reopens skills
    from tavernlab.host._sessions import SessionStore  # (and the sessions by a session run)
    from tavernlab.skills import BoundSkillsMount, SkillBinding, SkillRepository

Presentation = Literal["foreground", "background"]


class RunFactory:
    """Creates the :class:`~tavernlab.host.RunCore` of new and reopened runs of a lab."""

    def __init__(self, *, index: RunIndex, skills: Callable[[], SkillRepository | None],
                 clock: Clock, ids: IdFactory, on_end: Callable[[], None]) -> None:
        self.index = index
        self._skills = skills
        self.clock = clock
        self.ids = ids
        self.on_end = on_end

    def _core(self, record: RunRecord, run_dir: Path, workspace_dir: Path, profile: Profile,
              frozen: FrozenContext, chat: Chat | None, skills: Mapping[str, SkillBinding],
              mount: BoundSkillsMount | None,
              persist_snapshot: PersistSnapshot | Callable[[], PersistSnapshot] | None = None,
              main_id: str | None = None) -> RunCore:
        links = None if chat is None else LabLinks(os.stat(run_dir).st_dev,
                                                   base=partial(base_contents, run_dir))
        return RunCore(record=record, run_dir=run_dir, workspace_dir=workspace_dir,
                       profile=profile, frozen=frozen, chat=chat,
                       persist_snapshot=persist_snapshot, skills=skills, skills_mount=mount,
                       index=self.index, clock=self.clock, ids=self.ids, on_end=self.on_end,
                       before_round=self._sync_development, links=links, main_id=main_id)

    def _sync_development(self) -> None:
        repository = self._skills()
        if repository is not None:
            repository.sync_development()

    # -- new runs -----------------------------------------------------------------------------

    def start_chat(self, chat: Chat, profile: Profile, *, presentation: Presentation,
                   persist_base: str | None, snapshot: dict[str, Any] | None,
                   generation_type: str, names: list[str] | None,
                   scopes: Mapping[str, str] | None, origin: dict[str, Any],
                   loop: bool = False) -> RunCore:
        """A new run for a Chat target. ``loop`` starts it for the agent loop: its main
        invocation is ``inv_root`` and the loop assembles the context itself (the run stays
        ``assembling_context`` with its skills bound)."""
        host_chat = chat.path.read_bytes() if chat.path.is_file() else None
        macros = FrozenMacros.from_snapshot(snapshot or {})
        base = None if persist_base is None else chat.persist.load(persist_base)
        bound, mount = self._bind(profile, names, scopes, macros)
        run_id = self._new_run_id(chat.workspace_dir / "runs")
        run_dir = chat.workspace_dir / "runs" / run_id
        now = self.clock.now()
        record = RunRecord(
            id=run_id,
            target=ChatTarget(workspace_id=chat.workspace_id, stable_chat_id=chat.stable_chat_id,
                              chat_ref=ChatRef(kind=chat.kind, stable_chat_id=chat.stable_chat_id),
                              persist_base_state_id=persist_base,
                              input_message_count=len(chat.messages)),
            generation_type=generation_type, profile_id=profile.id,
            skill_scope_refs=dict(scopes) if scopes else None, presentation=presentation,
            created_at=now, updated_at=now)
        run_dir.mkdir(parents=True)
        core = self._core(record, run_dir, run_dir, profile,
                          FrozenContext(snapshot or {}, macros), chat, bound, mount,
                          main_id="inv_root" if loop else None)
        core.ledger.write_record()
        # tens of thousands of acyclic objects for a large persist state: no collection
        with collector_paused(), core.feed.batch():
            _initialize(core, snapshot or {}, origin)
            if host_chat is not None:
                (run_dir / layout.HOST_CHAT).write_bytes(host_chat)
            core.set_status("initializing_workspace")
            persist = chat.persist.initialize(run_dir / layout.PERSIST, persist_base,
                                              core.fs.containment.links, base)
            core.persist_snapshot = persist
            core.activities.record(persist_changes(persist))
            persist.write(run_dir / layout.PERSIST_SNAPSHOT)
            if layout.PERSIST in core.profile.policy().visible_roots:
                core.emit(PersistentProjectionInitialized, RootList(roots=[layout.PERSIST]))
            _assemble(core, bound, loop=loop)
        return core

    def start_session(self, sessions: SessionStore, session_id: str, profile: Profile, *,
                      presentation: Presentation, names: list[str] | None,
                      scopes: Mapping[str, str] | None, origin: dict[str, Any]) -> RunCore:
        """A new run for a Session target (no host context, no persist root)."""
        session = sessions.get(session_id)
        macros = FrozenMacros.from_snapshot(None)
        bound, mount = self._bind(profile, names, scopes, macros)
        run_id = self._new_run_id(session.dir / "runs")
        run_dir = session.dir / "runs" / run_id
        now = self.clock.now()
        record = RunRecord(id=run_id, target=SessionTarget(session_id=session.id),
                           profile_id=profile.id, presentation=presentation,
                           skill_scope_refs=dict(scopes) if scopes else None,
                           created_at=now, updated_at=now)
        run_dir.mkdir(parents=True)
        core = self._core(record, run_dir, session.workspace_dir, profile,
                          FrozenContext(None, macros), None, bound, mount)
        core.ledger.write_record()
        with core.feed.batch():
            _initialize(core, None, origin)
            core.set_status("initializing_workspace")
            _assemble(core, bound)
        return core

    def _new_run_id(self, runs_dir: Path) -> str:
        """A run id from the lab's factory that no run of the lab holds (an index entry, or
        a run directory where the new one would go); a taken one is refused before anything
        is written, never written over."""
        run_id = self.ids.new("run")
        if (runs_dir / run_id).exists() or (self.index.runs_dir / f"{run_id}.json").exists():
            raise InvalidData(f"run id `{run_id}` from the lab's id factory is already taken "
                              "by a run of this lab; nothing was written (deterministic ids "
                              "must continue after the lab's records: give the Lab its "
                              "SequentialIds, or use another seed)")
        return run_id

    def _bind(self, profile: Profile, names: list[str] | None,
              scopes: Mapping[str, str] | None, macros: FrozenMacros
              ) -> tuple[dict[str, SkillBinding], BoundSkillsMount | None]:
        repository = self._skills()
        if repository is None:
            if names:
                raise SkillUnavailable(sorted(names)[0])
            return {}, None
        from tavernlab.skills import bind_skills

        return bind_skills(repository, profile, names=names, scopes=scopes, macros=macros)

    # -- reopening ----------------------------------------------------------------------------

    def reopen(self, record: RunRecord, run_dir: Path, workspace_dir: Path,
               chat: Chat | None) -> RunCore:
        """A run read back from its files, without reading its logs: the counters come from
        its checkpoint (:mod:`tavernlab.host._restore`) and the persist snapshot is read on
        first use."""
        record = RunRecord.model_validate(read_json(run_dir / layout.RUN_RECORD))
        profile = Profile.model_validate(read_json(run_dir / layout.RESOLVED_PROFILE))
        snapshot = read_json(run_dir / layout.PROMPT_SNAPSHOT)
        macros = FrozenMacros.from_snapshot(snapshot)
        bound: dict[str, SkillBinding] = {}
        mount = None
        stored = read_json(run_dir / layout.SKILL_BINDINGS)
        repository = self._skills()
        if stored and repository is not None:
            from tavernlab.skills import BoundSkillsMount, bindings_from_json

            bound = bindings_from_json(repository, stored)
            mount = BoundSkillsMount(bound, macros)
        persist = None if chat is None else partial(read_persist_snapshot, run_dir)
        core = self._core(record, run_dir, workspace_dir, profile,
                          FrozenContext(snapshot, macros), chat, bound, mount, persist)
        core.restore_counters()
        return core


def _initialize(core: RunCore, snapshot: dict[str, Any] | None, origin: dict[str, Any]
                ) -> None:
    """``run_created``, the roots, ``input/`` and ``manifest.json``."""
    record, profile = core.record, core.profile
    core.save_record()
    target = dump_model(record.target)
    chat = record.target if isinstance(record.target, ChatTarget) else None
    workspace_id = chat.workspace_id if chat else None
    core.emit(RunCreated, RunCreation(
        workspace_id=workspace_id, stable_chat_id=chat.stable_chat_id if chat else None,
        persist_base_state_id=chat.persist_base_state_id if chat else None,
        presentation=record.presentation, target=target,
        generation_type=record.generation_type))
    policy = profile.policy()
    for root in policy.materialized_roots:
        (core.workspace_dir / root).mkdir(exist_ok=True)
    write_json(core.dir / layout.PROMPT_SNAPSHOT, snapshot)
    write_json(core.dir / layout.RESOLVED_PROFILE, profile.to_json())
    write_json(core.dir / layout.ORIGIN, origin)
    chat_ref = record.target.chat_ref if isinstance(record.target, ChatTarget) else None
    manifest = WorkspaceManifest(
        run_id=core.id, stable_chat_id=chat_ref.stable_chat_id if chat_ref else None,
        chat_ref=chat_ref, created_at=record.created_at,
        roots=[RootSpec.for_root(r, visible=True, writable=r in policy.writable_roots).check()
               for r in policy.visible_roots],
        artifacts=[Artifact(id="message_body", path=profile.workspace.message_body_path,
                            kind="markdown", target="message_body", required=False,
                            assembly_order=0)] if chat_ref else [])
    write_json(core.dir / layout.MANIFEST, dump_model(manifest))
    core.emit(WorkspaceInitialized, WorkspaceTarget(workspace_id=workspace_id, target=target))


def _assemble(core: RunCore, bound: Mapping[str, SkillBinding], *, loop: bool = False
              ) -> None:
    """Announce the main agent, freeze the skill bindings and the system prompt, and hand the
    run to the model (``calling_model``); for the agent loop, stop once the skills are bound
    (the loop announces its invocation and assembles the context)."""
    core.set_status("assembling_context")
    if not loop:
        core.announce(core.main)
    stored: list[dict[str, Any]] = []
    prompt = ""
    if bound:
        from tavernlab.skills import bindings_to_json, render_skill_prompt

        stored, prompt = bindings_to_json(bound), render_skill_prompt(bound)
    write_json(core.dir / layout.SKILL_BINDINGS, stored)
    (core.dir / layout.SYSTEM_PROMPT).write_text(prompt, encoding="utf-8")
    core.emit(SkillScopesResolved, SkillSet(skills=stored))
    if loop:
        core.save_record()
        return
    core.emit(ContextAssembled, ContextSummary(has_host_context=core.frozen.snapshot is not None))
    core.set_status("calling_model")
    core.save_record()  # the summary projection of a started run


def base_contents(run_dir: Path) -> list[tuple[str, int]]:
    """``(sha256, size)`` of every file of a run's base state (its persist snapshot): what a
    reopened run's own links may hold (:class:`~tavernlab.workspace.storage.LabLinks`)."""
    return [(f.sha256, f.bytes) for f in read_persist_snapshot(run_dir).files]


def read_persist_snapshot(run_dir: Path) -> PersistSnapshot:
    """A run's ``input/persist_snapshot.json``."""
    return PersistSnapshot.model_validate(read_json(run_dir / layout.PERSIST_SNAPSHOT))


def persist_changes(snapshot: PersistSnapshot) -> list[str]:
    """The journal's view of ``persist/`` filled from a state (copied past the port), sorted
    by path: ``file_changed`` payloads rendered as the line encoder writes a
    :class:`~tavernlab.events.FileChange` (its fields in order; a large state has a record
    per file, so each is one format, not a model and an encoding: ``tests/host/
    test_journal.py`` pins the bytes). The values come from the snapshot, whose file list is
    checked when it is read."""
    rendered = [(d, f'{{"path": {json_string(f"persist/{d}")}, "change": "created", '
                 '"node": "directory", "size": null, "sha256": null, "fromPath": null, '
                 '"writer": "persist", "callId": null}') for d in snapshot.directory_set()]
    rendered += [(path, f'{{"path": {json_string(f"persist/{path}")}, "change": "created", '
                  f'"node": "file", "size": {size}, "sha256": {json_string(digest)}, '
                  '"fromPath": null, "writer": "persist", "callId": null}')
                 for path, digest, size in snapshot.files]  # (unpacked: no attribute lookups)
    rendered.sort(key=itemgetter(0))  # by the path under persist/: the same order
    return [text for _, text in rendered]


def resolve_profile(profile: Profile | Mapping[str, Any] | None, default: Callable[[], Profile]
                    ) -> Profile:
    """A private copy of the caller's Profile (a model or its JSON), else ``default()``."""
    if profile is None:
        return default()
    if isinstance(profile, Profile):
        return profile.model_copy(deep=True)
    if not isinstance(profile, Mapping):
        raise InvalidData("profile must be a Profile or a JSON object")
    return Profile.model_validate(dict(profile))
