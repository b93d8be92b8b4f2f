"""The host floor: labs, runs, the tool registry, dispatch, rounds, retention and sessions.

:class:`Lab` and :class:`Run` are the user's handles; the rest is the bookkeeping behind
them, one concern per module. Nothing below this floor imports it.

The names are imported on first use, so that importing one small host module (the
public package imports :mod:`tavernlab.host._presentation` to register its providers) does not
load the whole floor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tavernlab.lazy import lazy_names

if TYPE_CHECKING:
    from tavernlab.host._commits import CommitLedger, host_commit, publish_persist
    from tavernlab.host._core import RunCore
    from tavernlab.host._dispatch import CallContext, LoopCall, ToolGate, call_tool, write_new_json
    from tavernlab.host._feed import RunFeed, order_key
    from tavernlab.host._index import RunIndex
    from tavernlab.host._invocation import Invocation
    from tavernlab.host._lab import DATA_DIR, WORKSPACES_DIR, Lab, make_lab_dir
    from tavernlab.host._presentation import register_presenter, register_provider
    from tavernlab.host._registry import DEFAULT_TOOLS, ToolProvider, ToolRegistry, worktree_tools
    from tavernlab.host._rounds import watch_rounds
    from tavernlab.host._run import Run
    from tavernlab.host._services import LabServices
    from tavernlab.host._starting import resolve_profile

__all__ = [
    "DATA_DIR",
    "DEFAULT_TOOLS",
    "WORKSPACES_DIR",
    "CallContext",
    "CommitLedger",
    "Invocation",
    "Lab",
    "LabServices",
    "LoopCall",
    "Run",
    "RunCore",
    "RunFeed",
    "RunIndex",
    "ToolGate",
    "ToolProvider",
    "ToolRegistry",
    "call_tool",
    "host_commit",
    "make_lab_dir",
    "order_key",
    "publish_persist",
    "register_presenter",
    "register_provider",
    "resolve_profile",
    "watch_rounds",
    "worktree_tools",
    "write_new_json",
]

_HOMES = {
    "DEFAULT_TOOLS": "tavernlab.host._registry",
    "Lab": "tavernlab.host._lab",
    "LabServices": "tavernlab.host._services",
    "Run": "tavernlab.host._run",
    "ToolProvider": "tavernlab.host._registry",
    "ToolRegistry": "tavernlab.host._registry",
    "worktree_tools": "tavernlab.host._registry",
    "CallContext": "tavernlab.host._dispatch",
    "CommitLedger": "tavernlab.host._commits",
    "DATA_DIR": "tavernlab.host._lab",
    "Invocation": "tavernlab.host._invocation",
    "LoopCall": "tavernlab.host._dispatch",
    "RunCore": "tavernlab.host._core",
    "RunFeed": "tavernlab.host._feed",
    "RunIndex": "tavernlab.host._index",
    "ToolGate": "tavernlab.host._dispatch",
    "WORKSPACES_DIR": "tavernlab.host._lab",
    "call_tool": "tavernlab.host._dispatch",
    "host_commit": "tavernlab.host._commits",
    "make_lab_dir": "tavernlab.host._lab",
    "order_key": "tavernlab.host._feed",
    "publish_persist": "tavernlab.host._commits",
    "register_presenter": "tavernlab.host._presentation",
    "register_provider": "tavernlab.host._presentation",
    "resolve_profile": "tavernlab.host._starting",
    "watch_rounds": "tavernlab.host._rounds",
    "write_new_json": "tavernlab.host._dispatch",
}


__getattr__ = lazy_names(__name__, _HOMES)
