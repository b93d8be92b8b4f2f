"""How a run reaches the chat: commits (explicit and automatic), sub-agent results and the
end of the run with its persist state (docs/persist.md).

tavernlab choices where upstream is unknown (documented here): auto-commits happen when a
round ends, only for foreground Chat runs before their first explicit commit (a foreground
run streams progress until then); sub-agent results go to ``summaries/<agent>-result.md``,
then ``-result-002.md`` and so on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import tavernlab.layout as layout
from tavernlab.errors import InvalidData, PersistStateError, RunStateError, WorkspaceError
from tavernlab.events import (
    EventScope,
)
from tavernlab.host._core import RunCore
from tavernlab.host._invocation import Invocation
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.persist import StateManifest
from tavernlab.workspace.records import ChatTarget, dump_model
from tavernlab.workspace.storage import WriteGuard
from tavernlab.workspace.text import text_metrics

# The event models of how a run ends, of its rounds, of its commits and of the agent loop's
# handshake are imported by the functions that write them: the face defines those families
# on first use, and a process whose runs never commit (one tool call) does not need them.


def commit_to_chat(core: RunCore, *, path: str, text: str, sha256: str, mode: str,
                   is_explicit: bool, call_id: str, reason: str | None = None
                   ) -> tuple[int, int]:
    """Ask the host to save ``text`` as this run's output message and record it."""
    from tavernlab.events import ChatCommitRequest, ChatCommitRequested, CommitOutcome, RunCommitted

    chat = core.chat
    if chat is None:
        raise RunStateError("only Chat runs commit to a chat")
    commit_mode: Literal["replace", "append"] = "append" if mode == "append" else "replace"
    counters = core.counters
    core.emit(ChatCommitRequested, ChatCommitRequest(
        call_id=call_id, path=path, is_explicit=is_explicit, sha256=sha256, mode=commit_mode,
        round=counters.round, reason=reason))
    previous = core.record.status
    core.set_status("awaiting_host_commit")
    target = chat.save_output(run_id=core.id, text=text, mode=commit_mode,
                              target=counters.output_target,
                              new_swipe=core.record.generation_type == "swipe")
    counters.output_target = target
    if is_explicit:
        counters.explicit_commits += 1
    core.emit(RunCommitted, CommitOutcome(message_index=target[0], swipe_id=target[1],
                                          is_explicit=is_explicit, mode=commit_mode))
    core.set_status(previous)
    return target


def auto_commit(core: RunCore) -> str | None:
    """At the end of a round: commit the round's last modified text file when the rules
    allow (a foreground Chat run with no explicit commit yet); returns its path. Its
    ``callId`` is the call that last set or moved the candidate: a tool call's id, a
    ``run.js`` job's ``job_…`` id, or ``host`` for a change made through ``run.internals.scope``
    outside both (see :mod:`tavernlab.workspace.scope._tracking`)."""
    tracker = core.tracker
    candidate = tracker.candidate
    if not (core.is_chat and core.record.presentation == "foreground"
            and not core.counters.explicit_commits and tracker.changed and candidate):
        return None
    try:
        file = core.fs.read_text(WorkspacePath(candidate))
    except WorkspaceError:
        return None
    commit_to_chat(core, path=candidate, text=file.text, sha256=file.sha256, mode="replace",
                   is_explicit=False, call_id=tracker.candidate_call_id)
    return candidate


def end_round(core: RunCore) -> int:
    """End the current round: at most one auto-commit, a ``round_ended`` journal record, a
    fresh tracker; returns the new round number."""
    from tavernlab.events import RoundEnd, RoundEnded

    core.activities.flush("host", None)
    committed = auto_commit(core)
    counters = core.counters
    core.note(RoundEnded, RoundEnd(round=counters.round, auto_committed=committed))
    core.tracker.reset()
    counters.round_cancelled = False
    counters.round += 1
    return counters.round


def write_subagent_result(core: RunCore, invocation: Invocation, text: str) -> str:
    """Write a return-mode sub-agent's result to ``summaries/<agent>-result.md`` (repeated
    results get ``-002``, ``-003``, ...); returns the path."""
    from tavernlab.events import TaskReturn, TaskReturnCompleted

    key = invocation.agent_id
    results = core.counters.subagent_results
    results[key] += 1
    count = results[key]
    name = f"{key}-result.md" if count == 1 else f"{key}-result-{count:03d}.md"
    path = WorkspacePath.parse(f"summaries/{name}")
    core.fs.write_text(path, text, WriteGuard.unchecked())
    core.tracker.wrote(path)
    core.emit(TaskReturnCompleted, TaskReturn(invocation_id=invocation.id, path=path.text),
              scope=EventScope(invocation_id=invocation.id))
    return path.text


def complete(core: RunCore, main: Invocation) -> dict[str, Any]:
    """Finish the run: publish ``persist/`` (Chat runs), link the state to the committed
    message and mark the run completed. Returns the refs the finish result reports (the
    finish call's reason is kept with its stored arguments, ``tool-args/``)."""
    from tavernlab.events import AgentInvocationCompleted, RunCompleted

    core.set_status("finishing")
    refs: dict[str, Any] = {}
    if core.chat is not None and core.persist_snapshot is not None:
        refs["persistStateId"] = _publish(core)
    core.emit(AgentInvocationCompleted, core.invocation_ref(main, "completed"))
    core.set_status("completed")
    core.emit(RunCompleted, None)
    return refs


def publish_persist(core: RunCore, *, message_id: str | None) -> str:
    """The agent loop's end of a Chat run: publish ``persist/`` and, when the run committed
    to the chat (``message_id``: its latest confirmed commit), link the state to that message
    (upstream's metadata update, confirmed by tavernlab as the host)."""
    state = _published(core)
    if message_id is not None and core.counters.output_target is not None:
        _link(core, state, message_id)
    return state.state_id


def _publish(core: RunCore) -> str:
    """A hand-played run's end of a Chat run: publish ``persist/`` (a failure fails the run)
    and link the state to the committed message. With no committed message the request is
    still recorded (``messageId`` ``null``) and nothing is linked."""
    try:
        state = _published(core)
    except (PersistStateError, InvalidData, OSError) as exc:
        core.fail(str(exc))
        raise
    target = core.counters.output_target
    _link(core, state, None if target is None else str(target[0]))
    return state.state_id


def _published(core: RunCore) -> StateManifest:
    """Publish ``persist/`` as a state (``persistent_changes_committed``, or
    ``persistent_changes_commit_failed {message}`` and the error raised)."""
    from tavernlab.events import (
        MessageText,
        PersistCommitted,
        PersistentChangesCommitFailed,
        PersistentChangesCommitted,
    )

    chat, snapshot, counters = core.chat, core.persist_snapshot, core.counters
    assert chat is not None and snapshot is not None
    try:
        with core.fs.lock.shared():
            state, reused = chat.persist.publish(
                run_id=core.id, persist_dir=core.workspace_dir / layout.PERSIST, snapshot=snapshot,
                revision_of=counters.persist_state_id, links=core.fs.containment.links)
    except (PersistStateError, InvalidData, OSError) as exc:  # InvalidData: a planted node
        core.emit(PersistentChangesCommitFailed, MessageText(message=str(exc)))
        raise
    counters.persist_state_id = state.state_id
    core.emit(PersistentChangesCommitted, PersistCommitted(
        state_id=state.state_id, base_state_id=state.base_state_id,
        change_count=len(state.changes), changes=change_list(state), reused=reused))
    return state


def change_list(state: StateManifest) -> list[dict[str, Any]]:
    """A published state's changes as its events carry them (the fields each change has)."""
    return [{key: value for key, value in change._asdict().items() if value is not None}
            for change in state.changes]


def _link(core: RunCore, state: StateManifest, message_id: str | None) -> None:
    """Upstream's metadata update: ``persistent_state_metadata_update_requested``, then
    (with a committed message) the link in the chat file and
    ``persistent_state_metadata_updated``."""
    from tavernlab.events import (
        MetadataUpdated,
        MetadataUpdateRequest,
        PersistentStateMetadataUpdated,
        PersistentStateMetadataUpdateRequested,
    )

    chat, output, target = core.chat, core.counters.output_target, core.record.target
    assert chat is not None and isinstance(target, ChatTarget)
    changes = change_list(state)
    update_id = core.ids.new("update")
    core.emit(PersistentStateMetadataUpdateRequested, MetadataUpdateRequest(
        update_id=update_id, run_id=core.id, workspace_id=target.workspace_id,
        stable_chat_id=target.stable_chat_id, chat_ref=dump_model(target.chat_ref),
        generation_type=core.record.generation_type, profile_id=core.record.profile_id,
        message_id=message_id, state_id=state.state_id, base_state_id=state.base_state_id,
        change_count=len(state.changes), changes=changes))
    if message_id is None or output is None:
        return
    chat.link_persist_state(output, state.state_id)
    core.emit(PersistentStateMetadataUpdated, MetadataUpdated(
        update_id=update_id, message_id=message_id, state_id=state.state_id))


# --- the host commit handshake of the agent loop ------------------------------------------------

#: How the host answers a commit request of the agent loop: ``None`` accepts it (tavernlab
#: then saves it in the lab's chat file, as ``workspace.commit`` always did), a message rejects
#: it. It receives the ``chat_commit_requested`` payload.
CommitReview = Callable[[dict[str, Any]], "str | None"]


@dataclass(slots=True)
class CommitLedger:
    """The confirmed chat commits of a model-driven run (explicit and automatic), in order:
    ``{path, mode, messageId, round, isExplicit}`` each."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    review: CommitReview | None = None

    @property
    def explicit(self) -> int:
        """How many explicit commits the host confirmed."""
        return sum(1 for entry in self.entries if entry["isExplicit"])

    @property
    def last_message_id(self) -> str | None:
        """The message the latest confirmed commit landed in."""
        return self.entries[-1]["messageId"] if self.entries else None


def host_commit(core: RunCore, ledger: CommitLedger, *, invocation_id: str, call_id: str,
                path: str, text: str, sha256: str, mode: str, is_explicit: bool,
                reason: str | None, round_number: int) -> str | None:
    """Ask the host (tavernlab) to commit ``text`` to the run's chat message; returns the
    message id on success, or the host's rejection message (``None`` is never a success).

    Events: ``chat_commit_requested`` (status ``awaiting_host_commit``), then
    ``chat_commit_completed`` and ``chat_commit_recorded``, or ``chat_commit_failed``; the
    status returns to ``dispatching_tool``. Message ids are the chat's message indices.
    """
    from tavernlab.events import (
        ChatCommitCompleted,
        ChatCommitFailed,
        ChatCommitRecorded,
        ChatCommitRequested,
        HostCommitCompleted,
        HostCommitFailed,
        HostCommitRecorded,
        HostCommitRequest,
    )

    chat, target = core.chat, core.record.target
    if chat is None or not isinstance(target, ChatTarget):
        raise RunStateError("only Chat runs commit to a chat")
    commit_mode: Literal["replace", "append"] = "append" if mode == "append" else "replace"
    chars, words = text_metrics(text)
    commit_id = core.ids.new("commit")
    request = HostCommitRequest(
        commit_id=commit_id, invocation_id=invocation_id, call_id=call_id, run_id=core.id,
        workspace_id=target.workspace_id, stable_chat_id=target.stable_chat_id,
        chat_ref=dump_model(target.chat_ref), generation_type=core.record.generation_type,
        profile_id=core.record.profile_id, persist_base_state_id=target.persist_base_state_id,
        path=path, mode=commit_mode, is_explicit=is_explicit, reason=reason, chars=chars,
        words=words, sha256=sha256, round=round_number)
    core.set_status("awaiting_host_commit")
    core.emit(ChatCommitRequested, request)
    rejection = (None if ledger.review is None
                 else ledger.review(request.model_dump(mode="json", by_alias=True)))
    if rejection is not None:
        core.set_status("dispatching_tool")
        core.emit(ChatCommitFailed, HostCommitFailed(
            commit_id=commit_id, invocation_id=invocation_id, call_id=call_id, path=path,
            mode=commit_mode, message=rejection))
        return rejection
    counters = core.counters
    saved = chat.save_output(run_id=core.id, text=text, mode=commit_mode,
                             target=counters.output_target,
                             new_swipe=core.record.generation_type == "swipe")
    counters.output_target = saved
    if is_explicit:
        counters.explicit_commits += 1
    message_id = str(saved[0])
    ledger.entries.append({"path": path, "mode": commit_mode, "messageId": message_id,
                           "round": round_number, "isExplicit": is_explicit})
    core.set_status("dispatching_tool")
    core.emit(ChatCommitCompleted, HostCommitCompleted(
        commit_id=commit_id, invocation_id=invocation_id, call_id=call_id, path=path,
        mode=commit_mode, is_explicit=is_explicit, message_id=message_id,
        message_index=saved[0]))
    core.emit(ChatCommitRecorded, HostCommitRecorded(
        invocation_id=invocation_id, commit_count=len(ledger.entries), path=path,
        mode=commit_mode, message_id=message_id))
    return None
