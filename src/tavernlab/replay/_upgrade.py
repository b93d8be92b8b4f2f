"""Reading the lifecycle events of a bundle recorded before format version 3.

Format version 3 writes the run's lifecycle events with upstream's payloads (docs/events.md);
bundles of versions 1 and 2 recorded tavernlab's older shapes. Before a replay is compared
with such a recording, :func:`upgrade_events` rewrites the recorded ``events.jsonl`` into the
shapes the current code writes, so a run recorded then still replays identically. Only
payloads change (and one type name): no event is added or dropped, so every ``seq``, ``id``
and ``timestamp`` stays the recorded one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from tavernlab.clock import ids_from_settings
from tavernlab.events import (
    InvocationRef,
    InvocationStart,
    MessageText,
    MetadataUpdated,
    MetadataUpdateRequest,
    PersistCommitted,
    RootList,
    RunCreation,
    RunFailure,
    StatusChange,
    WorkspaceTarget,
)
from tavernlab.models import CANCELLED_MESSAGE
from tavernlab.ondisk import Model

#: The event type older bundles wrote for a linked persist state.
OLD_METADATA_UPDATED = "persistent_state_metadata_update_updated"
_INVOCATION_STARTS = frozenset({"agent_invocation_created", "agent_invocation_started"})


def _dump(model: Model) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True)


class _Upgrade:
    """One pass over a recorded ``events.jsonl``."""

    def __init__(self, record: Mapping[str, Any], ids: Mapping[str, Any],
                 subagent_profiles: Mapping[str, str],
                 state_changes: Callable[[str], list[dict[str, Any]]]) -> None:
        self.record = record
        self.ids = ids_from_settings(ids)
        self.subagent_profiles = subagent_profiles
        self.state_changes = state_changes
        self.created: dict[str, Any] = {}
        self.main_id: str | None = None
        self.committed: dict[str, Any] = {}
        self.requested: dict[str, Any] = {}

    def payload(self, kind: str, p: Any) -> Any:
        """The format-3 payload of one recorded event."""
        if kind == "status_changed" and isinstance(p, dict) and "to" in p:
            return _dump(StatusChange(status=p["to"]))
        if kind == "run_created" and isinstance(p, dict) and "workspaceId" not in p:
            target = p["target"]
            chat = target if target.get("kind") == "chat" else {}
            self.created = p = _dump(RunCreation(
                workspace_id=chat.get("workspaceId"), stable_chat_id=chat.get("stableChatId"),
                persist_base_state_id=chat.get("persistBaseStateId"),
                presentation=p["presentation"], target=target,
                generation_type=p["generationType"]))
            return p
        if kind == "run_created":
            self.created = p
        if kind == "workspace_initialized" and isinstance(p, dict) and "roots" in p:
            return _dump(WorkspaceTarget(workspace_id=self.created.get("workspaceId"),
                                         target=self.created.get("target") or {}))
        if kind == "persistent_projection_initialized" and isinstance(p, dict) \
                and "files" in p:
            return _dump(RootList(roots=["persist"]))
        if kind.startswith("agent_invocation_") and isinstance(p, dict) and "agentId" in p:
            return self.invocation(kind, p)
        if kind in ("run_completed", "run_cancel_requested"):
            return None
        return self.ending(kind, p)

    def ending(self, kind: str, p: Any) -> Any:
        """The run's end and the persist publication."""
        if not isinstance(p, dict):
            return p
        if kind == "run_cancelled" and "error" in p:
            return _dump(MessageText(message=p.get("message") or p.get("reason")
                                     or p.get("error") or CANCELLED_MESSAGE))
        if kind in ("run_failed", "run_partial_success") and "error" in p:
            if "code" not in p:
                return _dump(RunFailure.internal_fault(str(p.get("error") or p.get("reason"))))
            return _dump(RunFailure.model_validate(
                {k: v for k, v in p.items() if k not in ("reason", "error")}))
        if kind == "persistent_changes_commit_failed" and "error" in p:
            return _dump(MessageText(message=str(p.get("error") or p.get("reason"))))
        if kind == "persistent_changes_committed" and "changeCount" not in p:
            self.committed = p
            return _dump(PersistCommitted(
                state_id=p["stateId"], base_state_id=p.get("baseStateId"),
                change_count=int(p.get("changes") or 0),
                changes=self.state_changes(p["stateId"]), reused=bool(p.get("reused"))))
        if kind == "persistent_changes_committed":
            self.committed = {**p, "changes": p.get("changeCount")}
        if kind == "persistent_state_metadata_update_requested" and "updateId" not in p:
            return self.metadata_request(p)
        if kind == "persistent_state_metadata_update_requested":
            self.ids.new("update")  # the recording minted it: the factory moves past it
            self.requested = _dump(MetadataUpdateRequest.model_validate(
                {k: v for k, v in p.items() if k not in ("messageIndex", "swipeId")}))
            return self.requested
        if kind == OLD_METADATA_UPDATED:
            request = self.requested
            return _dump(MetadataUpdated(update_id=request["updateId"],
                                         message_id=request["messageId"],
                                         state_id=p["stateId"]))
        return p

    def invocation(self, kind: str, p: dict[str, Any]) -> dict[str, Any]:
        """An ``agent_invocation_*`` of ``{invocationId, agentId, mode}`` (by hand) or of
        those fields beside upstream's (the loop)."""
        if "kind" in p:
            ref = InvocationRef(invocation_id=p["invocationId"],
                                parent_invocation_id=p.get("parentInvocationId"),
                                profile_id=p["profileId"], kind=p["kind"],
                                status=p["status"])
        else:
            main = p["mode"] == "main"
            if main and kind == "agent_invocation_created":
                self.main_id = p["invocationId"]
            profile = (str(self.record.get("profileId")) if main
                       else self.subagent_profiles.get(p["invocationId"], p["agentId"]))
            ref = InvocationRef(
                invocation_id=p["invocationId"],
                parent_invocation_id=None if main else self.main_id, profile_id=profile,
                kind="root" if main else "subagent",
                status="created" if kind == "agent_invocation_created" else "completed")
        if kind not in _INVOCATION_STARTS:
            return _dump(ref)
        policy = p.get("exitPolicy") or ("run_finish_allowed" if ref.kind != "subagent"
                                         else "task_return_required")
        return _dump(InvocationStart(**dict(ref), exit_policy=policy))

    def metadata_request(self, p: dict[str, Any]) -> dict[str, Any]:
        """A hand-played run's ``{stateId, messageIndex, swipeId}`` request, with the update
        id the current code mints for it and the facts of the run and the state."""
        target = self.created.get("target") or {}
        index = p.get("messageIndex")
        self.requested = _dump(MetadataUpdateRequest(
            update_id=self.ids.new("update"), run_id=str(self.record.get("id")),
            workspace_id=target["workspaceId"], stable_chat_id=target["stableChatId"],
            chat_ref=target["chatRef"], generation_type=self.created["generationType"],
            profile_id=str(self.record.get("profileId")),
            message_id=None if index is None else str(index), state_id=p["stateId"],
            base_state_id=self.committed.get("baseStateId"),
            change_count=int(self.committed.get("changes") or 0),
            changes=self.state_changes(p["stateId"])))
        return self.requested


def upgrade_journal(journal: bytes, events: bytes) -> bytes:
    """The recorded ``journal.jsonl`` of a format-1/2 bundle as format 3 writes it: every
    ``js_job_finished`` gains ``cancelReason``, the reason of the last
    ``run_cancel_requested`` (in the recorded ``events``, older shape) at or before it for a
    cancelled job, else ``null``. Every other line is kept byte for byte."""
    requests: list[tuple[int, str]] = []
    for line in events.splitlines():
        if b'"run_cancel_requested"' in line:
            event = json.loads(line)
            payload = event.get("payload")
            reason = payload.get("reason") if isinstance(payload, dict) else None
            requests.append((int(event.get("seq") or 0), str(reason or "")))
    lines: list[bytes] = []
    for line in journal.splitlines(keepends=True):
        if b'"js_job_finished"' not in line:
            lines.append(line)
            continue
        record = json.loads(line)
        payload = record.get("payload")
        if not isinstance(payload, dict) or "cancelReason" in payload:
            lines.append(line)
            continue
        anchor = int(record.get("eventSeq") or 0)
        reasons = [reason for seq, reason in requests if seq <= anchor]
        payload["cancelReason"] = reasons[-1] if payload.get("cancelled") and reasons else None
        ending = b"\n" if line.endswith(b"\n") else b""
        lines.append(json.dumps(record, ensure_ascii=False).encode("utf-8") + ending)
    return b"".join(lines)


def upgrade_events(events: bytes, journal: bytes, *, record: Mapping[str, Any],
                   ids: Mapping[str, Any],
                   state_changes: Callable[[str], list[dict[str, Any]]]) -> bytes:
    """The recorded ``events.jsonl`` of a format-1/2 bundle as format 3 writes it.

    ``record`` is the run's ``run.json`` at export (its id and profile), ``ids`` the id
    factory's settings when the run started (the update ids a hand-played run now mints are
    minted again, in order), ``state_changes(stateId)`` the changes a published state lists.
    The lifecycle payloads become upstream's: ``status_changed {status}``, ``run_created``
    with the chat facts, ``workspace_initialized {workspaceId, target}``,
    ``persistent_projection_initialized {roots}``, ``agent_invocation_*`` by kind and
    profile, ``run_completed`` and ``run_cancel_requested`` ``null``,
    ``run_cancelled {message}``, ``run_failed`` the failure payload (a hand-played fault's
    text through :meth:`RunFailure.internal_fault`), ``persistent_changes_commit_failed
    {message}``, the metadata update's full request and ``persistent_state_metadata_updated
    {updateId, messageId, stateId}`` (renamed from ``..._update_updated``). Every other line
    is kept byte for byte."""
    profiles: dict[str, str] = {}
    for line in journal.splitlines():
        if b'"subagent_started"' in line:
            entry = json.loads(line)
            payload = entry.get("payload") or {}
            profile = payload.get("profile") or {}
            profiles[str(payload.get("invocationId"))] = str(profile.get("id", ""))
    upgrade = _Upgrade(record, ids, profiles, state_changes)
    lines: list[bytes] = []
    for line in events.splitlines(keepends=True):
        if not line.strip():
            lines.append(line)
            continue
        event = json.loads(line)
        kind = str(event.get("type"))
        payload = upgrade.payload(kind, event.get("payload"))
        if payload == event.get("payload") and kind != OLD_METADATA_UPDATED:
            lines.append(line)
            continue
        event["payload"] = payload
        if kind == OLD_METADATA_UPDATED:
            event["type"] = "persistent_state_metadata_updated"
        ending = b"\n" if line.endswith(b"\n") else b""
        lines.append(json.dumps(event, ensure_ascii=False).encode("utf-8") + ending)
    return b"".join(lines)
