"""``Lab``: one data directory holding chats, runs, sessions, skills and settings.

The on-disk layout is upstream's (spec/workspace.md section 8)::

    <lab>/_tauritavern/
      agent-workspaces/
        index/runs/<run-id>.json            copy of run.json
        index/run-summaries/<run-id>.json   summary projection
        chats/<workspace-id>/
          persistent-states/<state-id>/{manifest.json, persist/...}
          runs/<run-id>/{run.json, manifest.json, events.jsonl, input/, tool-args/,
                         tool-results/, output/, scratch/, plan/, summaries/, persist/}
        sessions/                           see tavernlab.workspace.sessions
      skills/                               see tavernlab.skills
      host-chats/<workspace-id>.json        the simulated host's chats
      settings.json                         agent.retention

A lab is created on first use; two processes (two kernels) may share one lab.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tavernlab.errors import InvalidData, NotFound
from tavernlab.workspace.chat import Chat
from tavernlab.workspace.context import FrozenContext
from tavernlab.workspace.ids import ChatKind, check_dir_name, new_id
from tavernlab.workspace.macros import FrozenMacros
from tavernlab.workspace.persist import PersistSnapshot
from tavernlab.workspace.profile import Profile
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
    utc_now,
    write_json,
)
from tavernlab.workspace.runs import Run
from tavernlab.workspace.scope import SKILLS_ROOT, SkillsMount

if TYPE_CHECKING:
    from tavernlab.workspace.retention import Retention
    from tavernlab.workspace.sessions import Session, SessionStore

DATA_DIR = "_tauritavern"
WORKSPACES_DIR = "agent-workspaces"


class RunIndex:
    """``index/runs/<run-id>.json`` (a copy of ``run.json``) and
    ``index/run-summaries/<run-id>.json``."""

    def __init__(self, workspaces_dir: Path) -> None:
        self.runs_dir = workspaces_dir / "index" / "runs"
        self.summaries_dir = workspaces_dir / "index" / "run-summaries"

    def save(self, record: RunRecord, summary: Mapping[str, Any] | None) -> None:
        """Write the index entry and (when given) the summary of a run."""
        write_json(self.runs_dir / f"{record.id}.json", dump_model(record))
        if summary is not None:
            write_json(self.summaries_dir / f"{record.id}.json", dict(summary))

    def load(self, run_id: str) -> RunRecord:
        """The indexed ``run.json`` of ``run_id``."""
        check_dir_name(run_id, "run id")
        path = self.runs_dir / f"{run_id}.json"
        if not path.is_file():
            raise NotFound(f"run `{run_id}` was not found in the run index", path=run_id)
        return RunRecord.model_validate(read_json(path))

    def summary(self, run_id: str) -> dict[str, Any] | None:
        """The stored summary, if any."""
        path = self.summaries_dir / f"{run_id}.json"
        return read_json(path) if path.is_file() else None

    def delete(self, run_id: str) -> None:
        """Remove a run's index entry and summary (missing files are fine)."""
        for path in (self.runs_dir / f"{run_id}.json", self.summaries_dir / f"{run_id}.json"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def ids(self) -> list[str]:
        """Every indexed run id."""
        if not self.runs_dir.is_dir():
            return []
        return sorted(p.stem for p in self.runs_dir.glob("*.json"))

    def records(self) -> Iterator[RunRecord]:
        """Every indexed ``run.json``."""
        for run_id in self.ids():
            yield self.load(run_id)


class Lab:
    """A tavernlab data directory: the entry point of the Python API.

    >>> lab = Lab("my-lab")
    >>> run = lab.start_run(chat_id="alice")
    >>> run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "hi"})
    """

    def __init__(self, path: str | Path = "tavernlab-lab") -> None:
        self.root = Path(path).resolve()
        self.data_dir = self.root / DATA_DIR
        self.workspaces_dir = self.data_dir / WORKSPACES_DIR
        self.workspaces_dir.mkdir(parents=True, exist_ok=True)
        self.index = RunIndex(self.workspaces_dir)
        self._sessions: SessionStore | None = None
        self._retention: Retention | None = None
        self._skills: Any = None

    def __repr__(self) -> str:
        return f"<Lab {self.root}>"

    # -- parts --------------------------------------------------------------------------------

    @property
    def sessions(self) -> SessionStore:
        """Persistent agent sessions (spec/workspace.md section 12)."""
        if self._sessions is None:
            from tavernlab.workspace.sessions import SessionStore

            self._sessions = SessionStore(self)
        return self._sessions

    @property
    def retention(self) -> Retention:
        """Run retention: settings, ``plan`` and ``apply`` (spec/workspace.md section 11)."""
        if self._retention is None:
            from tavernlab.workspace.retention import Retention

            self._retention = Retention(self)
        return self._retention

    @property
    def skills(self) -> Any:
        """The skill repository of this lab (install, list, validate, export)."""
        if self._skills is None:
            from tavernlab.skills.repository import SkillRepository

            self._skills = SkillRepository(self.root)
        return self._skills

    def chat(self, chat_id: str, kind: ChatKind = "character") -> Chat:
        """The host chat ``chat_id`` (created on first write)."""
        return Chat(self.data_dir, chat_id, kind)

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
        (see :mod:`tavernlab.workspace.context`); ``skills`` limits the bound skills to these
        names (else the Profile's skill policy over ``skill_scopes`` decides);
        ``legacy_run_script`` turns on the ``skill.run_script`` compatibility mode.
        Everything is validated before anything is written.
        """
        if (chat_id is None) == (session is None):
            raise InvalidData("start_run needs exactly one of chat_id or session")
        resolved = self._resolve_profile(profile, session is not None)
        if legacy_run_script:
            resolved.skills.legacy_run_script = True
        policy = resolved.policy()
        if presentation not in ("foreground", "background"):
            raise InvalidData("presentation must be `foreground` or `background`")
        snapshot = None if context is None else dict(context)
        if session is not None:
            if context is not None:
                raise InvalidData("Session runs have no host context")
            return self._start_session_run(session, resolved, presentation, skills,
                                           skill_scopes)
        assert chat_id is not None
        chat = self.chat(chat_id, kind)
        macros = FrozenMacros.from_snapshot(snapshot or {})
        if persist_base is not None:
            chat.persist.load(persist_base)
        bound, mount = self._bind_skills(resolved, skills, skill_scopes, macros)
        run_id = new_id("run")
        run_dir = chat.workspace_dir / "runs" / run_id
        now = utc_now()
        record = RunRecord(
            id=run_id,
            target=ChatTarget(workspace_id=chat.workspace_id, stable_chat_id=chat.stable_chat_id,
                              chat_ref=ChatRef(kind=kind, stable_chat_id=chat.stable_chat_id),
                              persist_base_state_id=persist_base,
                              input_message_count=len(chat.messages)),
            generation_type=generation_type, profile_id=resolved.id,
            skill_scope_refs=dict(skill_scopes) if skill_scopes else None,
            presentation=presentation, created_at=now, updated_at=now)
        run_dir.mkdir(parents=True)
        write_json(run_dir / "run.json", dump_model(record))
        run = Run(self, record, run_dir=run_dir, workspace_dir=run_dir, profile=resolved,
                  context=FrozenContext(snapshot or {}, macros), chat=chat,
                  skills_mount=mount, skills=bound, persist_snapshot=None)
        self._initialize(run, policy.visible_roots, policy.writable_roots, snapshot or {})
        run.set_status("initializing_workspace")
        persist_snapshot = chat.persist.initialize(run_dir / "persist", persist_base)
        run.persist_snapshot = persist_snapshot
        write_json(run_dir / "input" / "persist_snapshot.json", dump_model(persist_snapshot))
        run.emit("persistent_projection_initialized", {
            "baseStateId": persist_base, "files": len(persist_snapshot.files),
            "directories": len(persist_snapshot.directories or [])})
        self._finish_start(run, bound)
        return run

    def _start_session_run(self, session_id: str, profile: Profile,
                           presentation: Literal["foreground", "background"],
                           skills: list[str] | None, skill_scopes: Mapping[str, str] | None
                           ) -> Run:
        store = self.sessions
        session = store.get(session_id)
        macros = FrozenMacros.from_snapshot(None)
        bound, mount = self._bind_skills(profile, skills, skill_scopes, macros)
        run_id = new_id("run")
        run_dir = session.dir / "runs" / run_id
        now = utc_now()
        record = RunRecord(id=run_id, target=SessionTarget(session_id=session.id),
                           profile_id=profile.id, presentation=presentation,
                           skill_scope_refs=dict(skill_scopes) if skill_scopes else None,
                           created_at=now, updated_at=now)
        run_dir.mkdir(parents=True)
        write_json(run_dir / "run.json", dump_model(record))
        run = Run(self, record, run_dir=run_dir, workspace_dir=session.workspace_dir,
                  profile=profile, context=FrozenContext(None, macros), chat=None,
                  skills_mount=mount, skills=bound, persist_snapshot=None)
        policy = profile.policy()
        self._initialize(run, policy.visible_roots, policy.writable_roots, None)
        run.set_status("initializing_workspace")
        self._finish_start(run, bound)
        return run

    def _initialize(self, run: Run, visible: tuple[str, ...], writable: tuple[str, ...],
                    snapshot: dict[str, Any] | None) -> None:
        run.save_record()
        run.emit("run_created", {"target": dump_model(run.record.target),
                                 "presentation": run.record.presentation,
                                 "generationType": run.record.generation_type})
        roots = [r for r in visible if r != SKILLS_ROOT]
        for root in roots:
            (run.workspace_dir / root).mkdir(exist_ok=True)
        write_json(run.dir / "input" / "prompt_snapshot.json", snapshot)
        write_json(run.dir / "input" / "resolved_profile.json", dump_model(run.profile))
        chat_ref = run.record.target.chat_ref if isinstance(run.record.target, ChatTarget) else None
        manifest = WorkspaceManifest(
            run_id=run.id, stable_chat_id=chat_ref.stable_chat_id if chat_ref else None,
            chat_ref=chat_ref, created_at=run.record.created_at,
            roots=[RootSpec.for_root(r, visible=True, writable=r in writable).check()
                   for r in visible],
            artifacts=[Artifact(id="message_body", path=run.profile.workspace.message_body_path,
                                kind="markdown", target="message_body", required=False,
                                assembly_order=0)] if chat_ref else [])
        write_json(run.dir / "manifest.json", dump_model(manifest))
        run.emit("workspace_initialized", {"roots": list(visible)})

    def _finish_start(self, run: Run, bound: Mapping[str, Any]) -> None:
        run.set_status("assembling_context")
        run.announce(run.main)
        stored: list[dict[str, Any]] = []
        prompt = ""
        if bound:
            from tavernlab.skills.binding import bindings_to_json, render_skill_prompt

            stored = bindings_to_json(bound)
            prompt = render_skill_prompt(bound)
        write_json(run.dir / "input" / "skill_bindings.json", stored)
        (run.dir / "input" / "system_prompt.md").write_text(prompt, encoding="utf-8")
        run.emit("skill_scopes_resolved", {"skills": stored})
        run.emit("context_assembled", {"hasHostContext": run.context.snapshot is not None})
        run.set_status("calling_model")
        run.save_record()  # the summary projection of a started run

    def _resolve_profile(self, profile: Profile | Mapping[str, Any] | None, session: bool
                         ) -> Profile:
        if profile is None:
            if session:
                return self.sessions.profile()
            return Profile()
        if isinstance(profile, Profile):
            return profile.model_copy(deep=True)
        return Profile.model_validate(dict(profile))

    def _bind_skills(self, profile: Profile, names: list[str] | None,
                     scopes: Mapping[str, str] | None, macros: FrozenMacros
                     ) -> tuple[dict[str, Any], SkillsMount | None]:
        if not (self.data_dir / "skills").exists():
            if names:
                raise NotFound(f"Skill is not available: skills/{sorted(names)[0]}",
                               path=sorted(names)[0])
            return {}, None
        from tavernlab.skills.binding import bind_skills

        return bind_skills(self.skills, profile, names=names, scopes=scopes, macros=macros)

    def _restore_skills(self, run_dir: Path, macros: FrozenMacros
                        ) -> tuple[dict[str, Any], SkillsMount | None]:
        """The bindings fixed at run start (``input/skill_bindings.json``): a reopened run
        reads the same installed packages, never a same-named one from another scope."""
        data = read_json(run_dir / "input" / "skill_bindings.json")
        if not data:
            return {}, None
        from tavernlab.skills.binding import bindings_from_json
        from tavernlab.skills.mount import BoundSkillsMount

        bound = bindings_from_json(self.skills, data)
        return bound, BoundSkillsMount(bound, macros)

    def open_run(self, run_id: str) -> Run:
        """Reopen a run from disk (any process). Read records start empty; the run continues
        in a new round."""
        record = self.index.load(run_id)
        target = record.target
        if isinstance(target, ChatTarget):
            chat = self.chat(target.chat_ref.stable_chat_id, target.chat_ref.kind)
            run_dir = chat.workspace_dir / "runs" / run_id
            workspace_dir = run_dir
        else:
            chat = None
            session = self.sessions.get(target.session_id)
            run_dir = session.dir / "runs" / run_id
            workspace_dir = session.workspace_dir
        record = RunRecord.model_validate(read_json(run_dir / "run.json"))
        profile = Profile.model_validate(read_json(run_dir / "input" / "resolved_profile.json"))
        snapshot = read_json(run_dir / "input" / "prompt_snapshot.json")
        macros = FrozenMacros.from_snapshot(snapshot)
        bound, mount = self._restore_skills(run_dir, macros)
        persist_snapshot = None
        if chat is not None:
            persist_snapshot = PersistSnapshot.model_validate(
                read_json(run_dir / "input" / "persist_snapshot.json"))
        run = Run(self, record, run_dir=run_dir, workspace_dir=workspace_dir,
                     profile=profile, context=FrozenContext(snapshot, macros), chat=chat,
                     skills_mount=mount, skills=bound, persist_snapshot=persist_snapshot)
        run.restore_from_events()
        return run

    def runs(self) -> list[RunRecord]:
        """Every indexed run, newest first."""
        return sorted(self.index.records(), key=lambda r: r.created_at, reverse=True)

    def session(self, session_id: str) -> Session:
        """A session by id (see :attr:`sessions`)."""
        return self.sessions.get(session_id)
