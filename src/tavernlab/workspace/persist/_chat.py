"""The simulated chat host (docs/persist.md).

Upstream runs inside a chat application that stores messages; tavernlab simulates just what
the workspace talks to: chats with messages and swipes, a run's output message (created by
its first commit), the ``extra.tauritavern.agent`` metadata with ``persistStateId``, chat
forks and persist-state pruning. Each chat is one JSON file
``_tauritavern/host-chats/<workspace-id>.json`` under the lab, updated under an ``flock``.

tavernlab choices: the host's output post-processing is the identity (the committed text is
saved as is; appended contributions accumulate raw and the whole text is re-processed, which
with the identity is the concatenation); message metadata lives on each swipe, so every swipe
keeps its own ``persistStateId``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from tavernlab.clock import RANDOM_IDS, SYSTEM_CLOCK, Clock, IdFactory
from tavernlab.errors import InvalidData
from tavernlab.locks import file_lock
from tavernlab.ondisk import Model
from tavernlab.workspace.persist._persist import PersistRepository
from tavernlab.workspace.records import read_json, write_json
from tavernlab.workspace.roots import ChatKind, check_stable_chat_id, workspace_id

HOST_DIR = "host-chats"


class Swipe(Model):
    """One alternative of a message: body, visible reasoning and host metadata."""

    body: str = ""
    reasoning: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def agent(self) -> dict[str, Any]:
        """``extra.tauritavern.agent`` (empty when the swipe has no run metadata)."""
        return dict(self.extra.get("tauritavern", {}).get("agent", {}))


class Message(Model):
    """A chat message with its swipes; ``swipe_id`` selects the current one."""

    index: int
    role: Literal["user", "assistant", "system"]
    name: str | None = None
    swipes: list[Swipe] = Field(default_factory=lambda: [Swipe()])
    swipe_id: int = 0

    @property
    def current(self) -> Swipe:
        """The selected swipe."""
        return self.swipes[self.swipe_id]

    @property
    def body(self) -> str:
        """The selected swipe's body."""
        return self.current.body

    @property
    def extra(self) -> dict[str, Any]:
        """The selected swipe's host metadata."""
        return self.current.extra

    @property
    def persist_state_id(self) -> str | None:
        """``extra.tauritavern.agent.persistStateId`` of the selected swipe."""
        value = self.current.agent.get("persistStateId")
        return value if isinstance(value, str) else None


class ChatFile(Model):
    """The stored chat."""

    kind: ChatKind
    stable_chat_id: str
    workspace_id: str
    messages: list[Message] = Field(default_factory=list)


class Chat:
    """One host chat, identified by kind and stable chat id.

    ``data_dir`` is the lab's ``_tauritavern`` directory; the chat's agent workspace (runs
    and persist states) is ``agent-workspaces/chats/<workspace-id>/`` below it.
    """

    def __init__(self, data_dir: Path, stable_chat_id: str, kind: ChatKind = "character", *,
                 clock: Clock = SYSTEM_CLOCK, ids: IdFactory = RANDOM_IDS) -> None:
        self.kind: ChatKind = kind
        self.stable_chat_id = check_stable_chat_id(stable_chat_id)
        self.workspace_id = workspace_id(kind, self.stable_chat_id)
        self.data_dir = data_dir
        self.path = data_dir / HOST_DIR / f"{self.workspace_id}.json"
        self.workspace_dir = data_dir / "agent-workspaces" / "chats" / self.workspace_id
        self.persist = PersistRepository(self.workspace_dir, self.workspace_id,
                                         self.stable_chat_id, clock=clock, ids=ids)

    def __repr__(self) -> str:
        return f"<Chat {self.kind}:{self.stable_chat_id} ({len(self.messages)} messages)>"

    # -- storage -----------------------------------------------------------------------------

    def _load(self) -> ChatFile:
        if not self.path.exists():
            return ChatFile(kind=self.kind, stable_chat_id=self.stable_chat_id,
                            workspace_id=self.workspace_id)
        return ChatFile.model_validate(read_json(self.path))

    def _save(self, chat: ChatFile) -> None:
        write_json(self.path, chat.model_dump(mode="json", by_alias=True, exclude_none=True))

    def _update(self) -> _ChatUpdate:
        return _ChatUpdate(self)

    @property
    def messages(self) -> list[Message]:
        """The messages as stored now."""
        return self._load().messages

    # -- host operations ------------------------------------------------------------------

    def add_message(self, body: str, *, role: Literal["user", "assistant", "system"] = "user",
                    name: str | None = None) -> Message:
        """Append a message (for example the user's turn before a generation)."""
        with self._update() as chat:
            message = Message(index=len(chat.messages), role=role, name=name,
                              swipes=[Swipe(body=body)])
            chat.messages.append(message)
        return message

    def select_swipe(self, index: int, swipe_id: int) -> None:
        """Make ``swipe_id`` the current swipe of message ``index``."""
        with self._update() as chat:
            message = _message(chat, index)
            if not 0 <= swipe_id < len(message.swipes):
                raise InvalidData(f"message {index} has no swipe {swipe_id}")
            message.swipe_id = swipe_id

    def save_output(self, *, run_id: str, text: str, mode: Literal["replace", "append"],
                    target: tuple[int, int] | None, new_swipe: bool) -> tuple[int, int]:
        """Save a run's commit as its output message; returns ``(message index, swipe id)``.

        The first commit creates the output: a new assistant message, or (``new_swipe``, a
        swipe generation) a new swipe on the last assistant message. Later commits replace or
        append to the same swipe.
        """
        with self._update() as chat:
            if target is None:
                agent = {"runId": run_id}
                swipe = Swipe(body=text, extra={"tauritavern": {"agent": agent}})
                last = chat.messages[-1] if chat.messages else None
                if new_swipe and last is not None and last.role == "assistant":
                    last.swipes.append(swipe)
                    last.swipe_id = len(last.swipes) - 1
                    return last.index, last.swipe_id
                chat.messages.append(Message(index=len(chat.messages), role="assistant",
                                             swipes=[swipe]))
                return len(chat.messages) - 1, 0
            index, swipe_id = target
            current = _message(chat, index).swipes[swipe_id]
            current.body = text if mode == "replace" else current.body + text
            return index, swipe_id

    def link_persist_state(self, target: tuple[int, int], state_id: str) -> None:
        """Store ``persistStateId`` and ``persistStateStatus: "committed"`` on a swipe."""
        index, swipe_id = target
        with self._update() as chat:
            swipe = _message(chat, index).swipes[swipe_id]
            agent = swipe.extra.setdefault("tauritavern", {}).setdefault("agent", {})
            agent["persistStateId"] = state_id
            agent["persistStateStatus"] = "committed"

    def current_persist_state(self) -> str | None:
        """The host's choice of base state for a new run: the ``persistStateId`` of the
        selected swipe of the latest message that has one."""
        for message in reversed(self.messages):
            if message.persist_state_id is not None:
                return message.persist_state_id
        return None

    def referenced_states(self) -> set[str]:
        """Every state id referenced by any message or swipe."""
        out: set[str] = set()
        for message in self.messages:
            for swipe in message.swipes:
                value = swipe.agent.get("persistStateId")
                if isinstance(value, str):
                    out.add(value)
        return out

    def fork(self, stable_chat_id: str) -> Chat:
        """Copy this chat and its persist states under a new chat identity."""
        other = Chat(self.data_dir, stable_chat_id, self.kind)
        if other.path.exists():
            raise InvalidData(f"chat `{stable_chat_id}` already exists")
        self.persist.copy_to(other.persist, self.persist.state_ids())
        source = self._load()
        with other._update() as chat:
            chat.messages = [m.model_copy(deep=True) for m in source.messages]
        return other

    def prune_persistent_states(self, candidate_state_ids: list[str]) -> list[str]:
        """Delete the candidates no message or swipe references; unlisted orphans stay.

        Group chats are unsupported (``InvalidData``).
        """
        if self.kind == "group":
            raise InvalidData("persist-state pruning is not supported for group chats")
        return self.persist.prune(list(candidate_state_ids), self.referenced_states())


class _ChatUpdate:
    """Read-modify-write of a chat file under its lock."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self._lock = file_lock(chat.path.with_suffix(".lock"))

    def __enter__(self) -> ChatFile:
        self._lock.__enter__()
        self.record = self.chat._load()
        return self.record

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if exc_type is None:
                self.chat._save(self.record)
        finally:
            self._lock.__exit__(None, None, None)


def _message(chat: ChatFile, index: int) -> Message:
    if not 0 <= index < len(chat.messages):
        raise InvalidData(f"chat has no message {index}")
    return chat.messages[index]
