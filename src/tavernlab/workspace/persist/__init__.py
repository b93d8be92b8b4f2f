"""Persist versions of a chat: the states a run starts from and publishes, their trees with
digests and exact change lists, and the simulated chat host that links them to messages."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tavernlab.lazy import lazy_names

if TYPE_CHECKING:
    from tavernlab.workspace.persist._chat import Chat, Message
    from tavernlab.workspace.persist._persist import PersistSnapshot, StateManifest

__all__ = ["Chat", "Message", "PersistSnapshot", "StateManifest"]

_HOMES = {
    "Chat": "tavernlab.workspace.persist._chat",
    "Message": "tavernlab.workspace.persist._chat",
    "PersistSnapshot": "tavernlab.workspace.persist._persist",
    "StateManifest": "tavernlab.workspace.persist._persist",
}


__getattr__ = lazy_names(__name__, _HOMES)
