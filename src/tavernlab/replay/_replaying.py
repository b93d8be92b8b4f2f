"""Playing a bundle's run again: a fresh lab prepared as the recorded one stood, the actions
played in order, then the comparison.

:meth:`Replay.prepare` builds the lab (a temporary directory unless ``lab`` names an
empty or missing one) before the run starts, without touching the recorded clock: the bound
skills are installed (from the bundle, or another version from ``skills={name: path}``)
through a repository with its own clock, the chat's host file is restored from the run's
``input/host_chat.json`` and the persist base state is written back. Only then is the
:class:`~tavernlab.host.Lab` opened with the recorded :class:`~tavernlab.clock.FixedClock` and
:class:`~tavernlab.clock.SequentialIds` and the run started with its recorded parameters.
Everything is written below the lab directory (each target is checked).

:meth:`Replay.play` plays the actions one after another (tavernlab choice: a run that
overlapped actions, such as a ``run.js`` on a thread during a tool call, replays them in
sequence). A recorded cancellation is replayed by cancelling the same action once it runs
(``run.cancel`` from a helper thread: a tool call as soon as it can be cancelled, a ``run.js``
job once a sandbox worker runs it), so an outcome that depended on how far the work had got
(output printed before the cancel) can differ. A tool call interrupted by
KeyboardInterrupt, writes made through ``run.internals.fs``/``run.internals.scope`` outside
any action and changes to the lab by other runs are not actions and are not replayed; the
comparison reports what they changed.
"""

from __future__ import annotations

import base64
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from pydantic import ValidationError

import tavernlab.layout as layout
from tavernlab.clock import FixedClock, SequentialIds, clock_from_settings, ids_from_settings
from tavernlab.errors import TavernlabError
from tavernlab.host import Invocation, Lab, Run
from tavernlab.replay._actions import (
    Action,
    JsJob,
    NextRound,
    Reopen,
    Resume,
    Subagent,
    ToolCall,
    describe,
)
from tavernlab.replay._bundle import Bundle, read_bundle
from tavernlab.replay._compare import compare
from tavernlab.replay._errors import BundleInvalid, ReplaySetupError
from tavernlab.replay._report import Divergence, ReplayReport, SkillVersions
from tavernlab.replay._trees import inside, write_tree
from tavernlab.skills import SkillRepository, SkillScope, load_inline
from tavernlab.workspace.persist import Chat
from tavernlab.workspace.records import ChatTarget, RunRecord
from tavernlab.workspace.roots import Profile

SkillSources = Mapping[str, str | Path]
#: How often a replayed cancellation tries again while its action is not running yet.
CANCEL_POLL_S = 0.002


class Replay:
    """A bundle's run, replayed in a lab of its own; use :meth:`prepare`."""

    def __init__(self, bundle: Bundle, lab: Lab, run: Run, skills: list[SkillVersions],
                 temporary: bool) -> None:
        self.bundle = bundle
        self.lab = lab
        self.run = run
        self.skills = skills
        self.temporary = temporary
        self.errors: list[Divergence] = []
        self.played = 0
        self._started = time.monotonic()  # real time: how long the replay took
        self._report: ReplayReport | None = None
        self.closed = False

    # -- preparing ----------------------------------------------------------------------------

    @classmethod
    def prepare(cls, bundle: Bundle | str | Path, lab: str | Path | None = None,
                skills: SkillSources | None = None) -> Replay:
        """A lab holding what the run found when it started, and the run started again."""
        loaded = bundle if isinstance(bundle, Bundle) else read_bundle(bundle)
        if loaded.manifest.agent is not None:
            raise ReplaySetupError("the bundle's run was driven by the agent loop: it replays "
                                   "with tavernlab.replay.replay (the loop runs again), not "
                                   "action by action")
        manifest = loaded.manifest
        context = _object(loaded, layout.PROMPT_SNAPSHOT, optional=True)
        profile = _object(loaded, layout.RESOLVED_PROFILE, optional=False)
        root, temporary = lab_root(lab)
        try:
            versions, record, target, replay_lab = open_replay_lab(loaded, root, skills)
            bound = [s.name for s in manifest.skills]
            run = replay_lab.start_run(
                chat_id=target.chat_ref.stable_chat_id, kind=target.chat_ref.kind,
                presentation=record.presentation, persist_base=target.persist_base_state_id,
                context=context, profile=profile,
                generation_type=record.generation_type, skills=bound or None,
                skill_scopes=record.skill_scope_refs)
        except BaseException:
            if temporary:
                shutil.rmtree(root, ignore_errors=True)
            raise
        return cls(loaded, replay_lab, run, versions, temporary)

    # -- playing ------------------------------------------------------------------------------

    def play(self) -> None:
        """Play every action not played yet, in order."""
        if self.run.id != self.bundle.manifest.run_id:
            self.errors.append(Divergence(-1, "start of the run", "setup", "run id",
                                          self.bundle.manifest.run_id, self.run.id))
            return
        actions = self.bundle.manifest.actions
        while self.played < len(actions):
            self.play_action(self.played)

    def play_action(self, index: int) -> None:
        """Play action ``index``; a failure (a refusal, or an internal fault that failed the
        replayed run) is kept as an ``error`` divergence, never raised. Actions are meant to
        be played in order (:meth:`play` continues after the last one played)."""
        action = self.bundle.manifest.actions[index]
        cancel = getattr(action, "cancel", None)
        done = threading.Event()
        helper = None
        if cancel is not None:
            job_thread = threading.get_ident() if isinstance(action, JsJob) else None
            helper = threading.Thread(target=_cancel_when_running,
                                      args=(self, cancel, done, job_thread), daemon=True,
                                      name="tavernlab-replay-cancel")
            helper.start()
        try:
            self._act(action)
        except TavernlabError as exc:
            self.errors.append(Divergence(index, describe(action), "error", exc.code, None,
                                          exc.message))
        except Exception as exc:  # an internal fault of the replayed run is a finding too
            self.errors.append(Divergence(index, describe(action), "error",
                                          type(exc).__name__, None, str(exc)))
        finally:
            done.set()
            if helper is not None:
                helper.join()
            self.played = max(self.played, index + 1)

    def _act(self, action: Action) -> None:
        run = self.run
        if isinstance(action, ToolCall):
            arguments = self.bundle.run_json(action.arguments_path).get("arguments")
            run.call_tool(action.tool_id, arguments, invocation=self._invocation(action),
                          call_id=action.call_id)
        elif isinstance(action, JsJob):
            job = self.bundle.run_json(action.job_path)
            stdin = None if job.get("stdin") is None else base64.b64decode(job["stdin"])
            run.js(action.argv, action.cwd, stdin, action.command, eval_name=job.get("evalName"))
        elif isinstance(action, NextRound):
            run.next_round()
        elif isinstance(action, Subagent):
            run.start_subagent(action.agent_id, Profile.model_validate(action.profile))
        elif isinstance(action, Reopen):
            self.run = self.lab.open_run(run.id)
        elif isinstance(action, Resume):
            run.resume()

    def _invocation(self, call: ToolCall) -> Invocation:
        for invocation in (self.run.internals.main, *self.run.subagents):
            if invocation.id == call.invocation_id:
                return invocation
        raise ReplaySetupError(f"no agent `{call.invocation_id}` to make {call.call_id}")

    # -- verifying ------------------------------------------------------------------------------

    def verify(self) -> ReplayReport:
        """Compare what was played so far with the recording. Once the replay is closed
        (its lab may be gone) this is the report of the last comparison, so a notebook's
        verify cell can run again; a replay closed before any comparison refuses."""
        if self.closed:
            if self._report is None:
                raise ReplaySetupError("this replay was closed before it was verified: "
                                       "prepare the replay again to verify it")
            return self._report
        changed = {s.replayed_hash: s.recorded_hash for s in self.skills if s.changed}
        end = len(self.bundle.manifest.actions)
        try:
            compared = compare(self.bundle, self.run, changed)
        except BundleInvalid as exc:  # a recording the comparison cannot read
            compared = [Divergence(end, "after the last action", "error", exc.code, None,
                                   exc.message)]
        except (ValueError, TypeError, KeyError, AttributeError, IndexError,
                OverflowError) as exc:  # recorded values of the wrong shape
            compared = [Divergence(end, "after the last action", "error",
                                   type(exc).__name__, None, str(exc))]
        found = self.errors + compared
        path = self.bundle.path
        self._report = ReplayReport(
            bundle=str(path) if path else "", run_id=self.bundle.manifest.run_id,
            actions=len(self.bundle.manifest.actions),
            divergences=sorted(found, key=lambda d: d.index), skills=list(self.skills),
            lab=None if self.temporary else str(self.lab.root),
            elapsed_s=time.monotonic() - self._started)
        return self._report

    def close(self) -> None:
        """Close the lab (and remove it when it was temporary); safe to call again."""
        self.closed = True
        self.lab.close()
        if self.temporary:
            shutil.rmtree(self.lab.root, ignore_errors=True)

    def __enter__(self) -> Replay:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


T = TypeVar("T")


def _recorded(build: Callable[[], T], field: str) -> T:
    """``build()`` over a manifest field; a value of the wrong shape or type (a hostile or
    damaged bundle) is ``BundleInvalid`` naming the field, on one line."""
    try:
        return build()
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in (field, *error["loc"]))
        raise BundleInvalid(f"bundle member manifest.json: {where}: {error['msg']}") from None
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
        raise BundleInvalid(f"bundle member manifest.json: {field}: {exc}") from None


def _readable(clock: FixedClock) -> FixedClock:
    """``clock`` if its next reading is a time (``OverflowError`` for an absurd start, step
    or count of readings)."""
    clock.start + clock.step * clock.readings  # raises OverflowError when out of range
    return clock


def _object(bundle: Bundle, path: str, *, optional: bool) -> dict[str, Any] | None:
    """The JSON object the run file ``path`` holds (``null`` too when ``optional``)."""
    value = bundle.run_json(path)
    if isinstance(value, dict) or (optional and value is None):
        return value
    raise BundleInvalid(f"the bundle's run file {path} holds {type(value).__name__}, not a "
                        "JSON object")


def open_replay_lab(bundle: Bundle, root: Path, skills: SkillSources | None
                    ) -> tuple[list[SkillVersions], RunRecord, ChatTarget, Lab]:
    """``root`` prepared as the recorded lab stood (skills, chat, persist base) and opened
    with the recorded clock and ids: the skill versions, the run's record, its Chat target
    and the lab. The recorded record, clock and ids are checked before anything is written
    (a value of the wrong shape is ``BundleInvalid`` naming the field)."""
    manifest = bundle.manifest
    record = _recorded(lambda: RunRecord.model_validate(manifest.record), "record")
    target = record.target
    if not isinstance(target, ChatTarget):
        raise ReplaySetupError("the bundle's run is not a Chat run")
    clock = _recorded(lambda: _readable(clock_from_settings(manifest.clock)), "clock")
    ids = _recorded(lambda: ids_from_settings(manifest.ids), "ids")
    versions = _install_skills(bundle, root, skills or {})
    _restore_chat(bundle, root, target)
    return versions, record, target, Lab(root, clock=clock, ids=ids)


def _cancel_when_running(replay: Replay, reason: str, done: threading.Event,
                         job_thread: int | None) -> None:
    """Cancel the action being played once it runs (a js job: once a worker runs it for
    ``job_thread``), or give up when it ends."""
    pool = replay.lab.services.js_pool
    while not done.is_set():
        running = job_thread is None or job_thread in pool.running_jobs()
        if running and replay.run.cancel(reason):
            return
        done.wait(CANCEL_POLL_S)


def lab_root(lab: str | Path | None) -> tuple[Path, bool]:
    """The replay's lab folder and whether the replay made it (a new temporary folder when
    ``lab`` is ``None``); a given folder must be new or empty."""
    if lab is None:
        return Path(tempfile.mkdtemp(prefix="tavernlab-replay-")).resolve(), True
    root = Path(lab).resolve()
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ReplaySetupError(f"the replay lab {root} must be a new or empty directory")
    root.mkdir(parents=True, exist_ok=True)
    return root, False


def _install_skills(bundle: Bundle, root: Path, sources: SkillSources) -> list[SkillVersions]:
    """Install the bound skills (the bundle's, or the given versions) with a setup clock."""
    bound = {s.name: s for s in bundle.manifest.skills}
    unknown = sorted(set(sources) - set(bound))
    if unknown:
        raise ReplaySetupError(f"the run bound no skill named `{unknown[0]}` (bound: "
                               f"{', '.join(sorted(bound)) or 'none'})")
    repository = SkillRepository(root, clock=FixedClock(), ids=SequentialIds("replay-setup"))
    versions = []
    for name, skill in bound.items():
        source = sources.get(name)
        if source is None:
            scan = load_inline({p: bundle.blob(d) for p, d in skill.files.items()})
        else:
            scan = repository.validate(source)
        package = next((p for p in scan.packages if p.name == name), None)
        if package is None:
            raise ReplaySetupError(f"{source or 'the bundle'} holds no valid skill named "
                                   f"`{name}`")
        scope = _recorded(partial(SkillScope.model_validate, skill.scope),
                          f"skills.{name}.scope")
        repository.install_packages([package], scope=scope)
        versions.append(SkillVersions(name, skill.installed_hash, package.installed_hash,
                                      "bundle" if source is None else str(source)))
    return versions


def _restore_chat(bundle: Bundle, root: Path, target: ChatTarget) -> None:
    """The chat's host file before the run, and the persist state the run started from."""
    chat = Chat(root / "_tauritavern", target.chat_ref.stable_chat_id, target.chat_ref.kind)
    if chat.workspace_id != target.workspace_id:
        raise ReplaySetupError(f"the run's chat maps to {chat.workspace_id}, not "
                               f"{target.workspace_id}")
    if bundle.has_run_file(layout.HOST_CHAT):
        path = inside(root, chat.path.relative_to(root).as_posix())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bundle.run_file(layout.HOST_CHAT))
    base = bundle.manifest.persist_base
    if base is not None:
        folder = inside(root, chat.persist.state_dir(base.state_id).relative_to(root).as_posix())
        write_tree(folder, base.tree, bundle.blob)
