"""Persist versions of a chat: the states a run starts from and publishes, their trees with
digests and exact change lists, and the simulated chat host that links them to messages."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    """Import a public name on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
