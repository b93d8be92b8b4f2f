"""Roots and policy: which workspace paths an agent may see and write, the agent profiles that
name them, and the identifiers of workspaces and their directories."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tavernlab.lazy import lazy_names

if TYPE_CHECKING:
    from tavernlab.workspace.roots._ids import (
        ChatKind,
        check_call_id,
        check_dir_name,
        check_stable_chat_id,
        workspace_id,
    )
    from tavernlab.workspace.roots._policy import (
        DEFAULT_ROOTS,
        READ_ONLY_ROOTS,
        RESERVED_ROOT_NAMES,
        SKILLS_ROOT,
        Access,
        Policy,
    )
    from tavernlab.workspace.roots._profile import McpServerSettings, ModelBinding, Profile

__all__ = [
    "DEFAULT_ROOTS",
    "READ_ONLY_ROOTS",
    "RESERVED_ROOT_NAMES",
    "SKILLS_ROOT",
    "Access",
    "ChatKind",
    "McpServerSettings",
    "ModelBinding",
    "Policy",
    "Profile",
    "check_call_id",
    "check_dir_name",
    "check_stable_chat_id",
    "workspace_id",
]

_HOMES = {
    "Access": "tavernlab.workspace.roots._policy",
    "ChatKind": "tavernlab.workspace.roots._ids",
    "DEFAULT_ROOTS": "tavernlab.workspace.roots._policy",
    "McpServerSettings": "tavernlab.workspace.roots._profile",
    "ModelBinding": "tavernlab.workspace.roots._profile",
    "Policy": "tavernlab.workspace.roots._policy",
    "Profile": "tavernlab.workspace.roots._profile",
    "READ_ONLY_ROOTS": "tavernlab.workspace.roots._policy",
    "RESERVED_ROOT_NAMES": "tavernlab.workspace.roots._policy",
    "SKILLS_ROOT": "tavernlab.workspace.roots._policy",
    "check_call_id": "tavernlab.workspace.roots._ids",
    "check_dir_name": "tavernlab.workspace.roots._ids",
    "check_stable_chat_id": "tavernlab.workspace.roots._ids",
    "workspace_id": "tavernlab.workspace.roots._ids",
}


__getattr__ = lazy_names(__name__, _HOMES)
