"""Exporting a run as a ``.tavernrun`` bundle (``run.export(path)``).

Only what replays byte for byte is exported (tavernlab's choice; the alternative, comparing
only the outcomes that do not depend on time, would call runs "identical" that are not):

* a **Chat run** (a Session run's workspace carries files of the session's earlier runs,
  which no bundle of this run could rebuild);
* started in a lab with a :class:`~tavernlab.clock.FixedClock` and
  :class:`~tavernlab.clock.SequentialIds` (the run's ``input/origin.json`` says where they
  stood); a run under the system clock or random ids is refused with
  ``replay.run_not_exportable`` and a message saying how to build such a lab;
* with no action still running, and with every file it needs (a run slimmed by retention has
  lost them), every bound skill still installed with the hash it was bound with, and the
  persist base state still present.

A run driven by the agent loop (:mod:`tavernlab.agent`) is exported with what re-drives it
(the manifest's ``agent``: the loop's start parameters from ``input/loop_start.json``, the
model binding it announced, the host's answers to its commit requests, its failed model
attempts and its ``model-responses/`` records); a loop run recorded without
``input/loop_start.json`` is refused.

Exporting reads the run's files and the lab; it writes nothing but the bundle (reading the
run's events flushes changes made outside any action to its journal, as every read does),
and mints no id and reads no clock of the lab (a later run of the lab is the same whether or
not an earlier one was exported).
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

import tavernlab.layout as layout
from tavernlab.events import Event
from tavernlab.host import WORKSPACES_DIR, Run, RunIndex
from tavernlab.js.kit import kit_key
from tavernlab.replay._actions import (
    CANCEL_WITHOUT_ACTION,
    Action,
    JsJob,
    ToolCall,
    derive_actions,
)
from tavernlab.replay._bundle import MAX_BUNDLE_BYTES, Bundle, sha256_of
from tavernlab.replay._errors import BundleTooLarge, RunNotExportable
from tavernlab.replay._manifest import (
    SPEC_REVISIONS,
    AgentRecording,
    BoundSkill,
    BundleManifest,
    CancelledAttempt,
    ChatOutput,
    FailedAttempt,
    PersistState,
    RecordedResponse,
    Tree,
)
from tavernlab.replay._trees import scan_tree
from tavernlab.skills import SkillError, SkillPackage, load_directory
from tavernlab.workspace.persist import Chat
from tavernlab.workspace.records import read_json
from tavernlab.workspace.storage import INTERNAL_NAMES

#: How a user builds a lab whose runs can be exported.
DETERMINISTIC_LAB = ("build the lab as Lab(path, clock=FixedClock(), ids=SequentialIds()) "
                     "(from tavernlab.clock) to record runs that replay byte for byte")


class _Blobs:
    """The bytes collected for a bundle, by digest, within :data:`MAX_BUNDLE_BYTES`."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.total = 0

    def add(self, data: bytes) -> str:
        digest = sha256_of(data)
        if digest not in self.data:
            self.total += len(data)
            if self.total > MAX_BUNDLE_BYTES:
                raise BundleTooLarge(f"the run's files exceed {MAX_BUNDLE_BYTES} bytes, the "
                                     "bundle limit")
            self.data[digest] = data
        return digest


def export_run(run: Run, path: str | Path) -> Path:
    """Write ``run`` as one ``.tavernrun`` bundle at ``path`` (atomically; see the module
    notes for what is refused) and return the bundle's absolute path."""
    return build_bundle(run).write(path)


def build_bundle(run: Run) -> Bundle:
    """The bundle of ``run``, in memory."""
    chat = run.chat
    if chat is None:
        raise RunNotExportable(f"run `{run.id}` is a Session run: only Chat runs can be "
                               "exported (a session's workspace holds files of its earlier "
                               "runs, which a replay cannot rebuild)")
    origin = _origin(run)
    records = run.events()
    derivation = derive_actions(records)
    problems = derivation.problems
    if any(r.type == "agent_model_binding_resolved" for r in records):
        # the loop's own cancellation (during a model call) is no action of a hand
        problems = [p for p in problems if not p.endswith(CANCEL_WITHOUT_ACTION)]
    if problems:
        raise RunNotExportable(f"run `{run.id}` cannot be exported while {problems[0]}")
    blobs = _Blobs()
    tree = scan_tree(run.dir, add=blobs.add, skip=INTERNAL_NAMES)
    _check_action_files(run, derivation.actions, tree)
    index = RunIndex(chat.data_dir / WORKSPACES_DIR)
    index_tree = Tree(files={f"{folder.name}/{run.id}.json": blobs.add(file.read_bytes())
                             for folder in (index.runs_dir, index.summaries_dir)
                             if (file := folder / f"{run.id}.json").is_file()})
    base = run.record.target.persist_base_state_id  # type: ignore[union-attr]
    manifest = BundleManifest(
        tavernlab_version=version("tavernlab"), spec_revisions=SPEC_REVISIONS,
        kit_key=kit_key(), run_id=run.id, record=read_json(run.dir / layout.RUN_RECORD),
        clock=origin["clock"], ids=origin["ids"],
        inputs=sorted(p for p in tree.files if p.startswith(f"{layout.INPUT}/")),
        skills=_skills(run, blobs), persist_base=_state(chat, base, blobs) if base else None,
        actions=derivation.actions, run=tree, index=index_tree,
        persist_states=[_state(chat, state_id, blobs) for state_id in _published(records)],
        chat_outputs=_chat_outputs(chat, records), agent=_agent(run, records, tree))
    return Bundle(manifest, blobs.data)


def _origin(run: Run) -> dict[str, Any]:
    path = run.dir / layout.ORIGIN
    if not path.is_file():
        raise RunNotExportable(f"run `{run.id}` has no input/origin.json (it was recorded by "
                               "an older tavernlab), so its clock cannot be rebuilt")
    origin: dict[str, Any] = read_json(path)
    missing = [name for name in ("clock", "ids") if not origin.get(name)]
    if missing:
        kind = "the system clock" if "clock" in missing else "random ids"
        raise RunNotExportable(f"run `{run.id}` ran under {kind}, so a replay cannot give "
                               f"the same bytes: {DETERMINISTIC_LAB}")
    return origin


def _check_action_files(run: Run, actions: list[Action], tree: Tree) -> None:
    for action in actions:
        needed: list[str | None] = []
        if isinstance(action, ToolCall):  # a call the host failed before storing a result
            needed = [action.arguments_path]  # has none (its tool_call_failed says why)
            if action.result_path is not None:
                needed.append(action.result_path)
        elif isinstance(action, JsJob):
            needed = [action.job_path]
        for path in needed:
            if path is None or path not in tree.files:
                raise RunNotExportable(f"run `{run.id}` lacks {path or 'the stored result'} "
                                       f"of action {action.at} (was it slimmed by retention?)")


def _installed(run: Run, name: str) -> SkillPackage | None:
    """The package a binding of ``run`` points at, as installed now (``None``: gone or
    invalid)."""
    binding = run.skills.get(name)
    if binding is None:
        return None
    try:
        packages = load_directory(binding.package_dir).require_valid()
    except SkillError:
        return None
    return packages[0] if len(packages) == 1 else None


def _skills(run: Run, blobs: _Blobs) -> list[BoundSkill]:
    out = []
    for stored in read_json(run.dir / layout.SKILL_BINDINGS) or []:
        name, recorded = str(stored["name"]), str(stored["installedHash"])
        package = _installed(run, name)
        if package is None or package.installed_hash != recorded:
            found = package.installed_hash if package else "nothing valid"
            raise RunNotExportable(f"skill `{name}` changed since run `{run.id}` bound it "
                                   f"(bound {recorded}, installed now: {found})")
        out.append(BoundSkill(name=name, scope=dict(stored["scope"]), installed_hash=recorded,
                              files={path: blobs.add(data)
                                     for path, data in sorted(package.contents.items())}))
    return out


def _state(chat: Chat, state_id: str, blobs: _Blobs) -> PersistState:
    directory = chat.persist.state_dir(state_id)
    if not directory.is_dir():
        raise RunNotExportable(f"persist state `{state_id}` of the run no longer exists")
    return PersistState(state_id=state_id, tree=scan_tree(directory, add=blobs.add))


def _published(records: list[Event]) -> list[str]:
    """The persist states the run published, in order, each once."""
    ids = [r.payload.state_id for r in records if r.type == "persistent_changes_committed"]
    return list(dict.fromkeys(ids))


def _chat_outputs(chat: Chat, records: list[Event]) -> list[ChatOutput]:
    targets = dict.fromkeys((r.payload.message_index, r.payload.swipe_id)
                            for r in records if r.type == "run_committed")
    stored = read_json(chat.path) if chat.path.is_file() else {}
    messages = stored.get("messages", [])
    outputs = []
    for index, swipe_id in targets:
        swipes = messages[index].get("swipes", []) if index < len(messages) else []
        outputs.append(ChatOutput(message_index=index, swipe_id=swipe_id,
                                  swipe=swipes[swipe_id] if swipe_id < len(swipes) else None))
    return outputs


#: The records that say where a model-driven run stood (a cancellation right after an
#: attempt started was a cancellation during that model call).
_MODEL_STEPS = frozenset({"model_call_attempt_started", "model_call_attempt_failed",
                          "model_call_retry_scheduled", "model_response_stored",
                          "tool_call_started", "tool_call_completed", "tool_call_failed"})

#: The technical-message prefix of each non-retried model error kind.
_KIND_PREFIXES = (("Validation error: ", "validation"), ("Unauthorized: ", "unauthorized"),
                  ("Internal error: ", "internal"))


def _agent(run: Run, records: list[Event], tree: Tree) -> AgentRecording | None:
    """What re-drives a model-driven run (``None`` for a run played by hand)."""
    binding = next((r.payload for r in records if r.type == "agent_model_binding_resolved"),
                   None)
    start_path = layout.LOOP_START
    if binding is None:
        return None
    if start_path not in tree.files:
        raise RunNotExportable(f"run `{run.id}` was driven by the agent loop but has no "
                               f"{start_path} (it was recorded by an older tavernlab), so its "
                               "loop cannot be started again")
    start = read_json(run.dir / start_path)
    failure = next((r.payload for r in records
                    if r.type in ("run_failed", "run_partial_success")), None)
    final_kind = "internal"
    dumped = {} if failure is None else failure.model_dump(mode="json", by_alias=True)
    technical = str(dumped.get("technicalMessage") or "")
    for prefix, kind in _KIND_PREFIXES:
        if technical.startswith(prefix):
            final_kind = kind
    answers: list[str | None] = []
    failed: list[FailedAttempt] = []
    responses: list[RecordedResponse] = []
    cancelled: CancelledAttempt | None = None
    last_model: Event | None = None
    for record in records:
        p = record.payload
        if record.type in _MODEL_STEPS:
            last_model = record
        if record.type == "run_cancel_requested" and last_model is not None \
                and last_model.type == "model_call_attempt_started":
            q = last_model.payload
            cancelled = CancelledAttempt(invocation_id=q.invocation_id, round=q.round,
                                         attempt=q.attempt)
        if record.type == "chat_commit_requested":
            answers.append(None)
        elif record.type == "chat_commit_failed" and answers:
            answers[-1] = p.message
        elif record.type == "model_call_attempt_failed":
            failed.append(FailedAttempt(
                invocation_id=p.invocation_id, round=p.round, attempt=p.attempt,
                message=p.message, retryable=p.retryable,
                kind="transient" if p.retryable else final_kind))
        elif record.type == "model_response_stored":
            if p.path not in tree.files:
                raise RunNotExportable(f"run `{run.id}` lacks {p.path}, the model response "
                                       f"of invocation `{p.invocation_id}` round {p.round}")
            responses.append(RecordedResponse(invocation_id=p.invocation_id, round=p.round,
                                              path=p.path))
        elif record.type == "run_cancelled" and cancelled is not None:
            cancelled.message = p.message
    return AgentRecording(
        task=start["task"], chat_id=start["chatId"], presentation=start["presentation"],
        stream=start["stream"], agents=start.get("agents") or {},
        model=binding.model_dump(mode="json", by_alias=True), commit_answers=answers,
        failed_attempts=failed, responses=responses, cancelled_attempt=cancelled)
