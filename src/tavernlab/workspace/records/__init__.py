"""A run's records on disk: ``run.json``, ``manifest.json`` and the other files a run directory
holds beside its logs."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tavernlab.workspace.records._records import (
        TERMINAL_STATUSES,
        Artifact,
        ChatRef,
        ChatTarget,
        RootSpec,
        RunRecord,
        RunStatus,
        SessionTarget,
        WorkspaceManifest,
        dump_model,
        model_text,
        pretty_json,
        read_json,
        write_json,
        write_model,
        write_text_atomically,
    )

__all__ = [
    "TERMINAL_STATUSES",
    "Artifact",
    "ChatRef",
    "ChatTarget",
    "RootSpec",
    "RunRecord",
    "RunStatus",
    "SessionTarget",
    "WorkspaceManifest",
    "dump_model",
    "model_text",
    "pretty_json",
    "read_json",
    "write_json",
    "write_model",
    "write_text_atomically",
]

_HOMES = {
    "Artifact": "tavernlab.workspace.records._records",
    "ChatRef": "tavernlab.workspace.records._records",
    "ChatTarget": "tavernlab.workspace.records._records",
    "RootSpec": "tavernlab.workspace.records._records",
    "RunRecord": "tavernlab.workspace.records._records",
    "RunStatus": "tavernlab.workspace.records._records",
    "SessionTarget": "tavernlab.workspace.records._records",
    "TERMINAL_STATUSES": "tavernlab.workspace.records._records",
    "WorkspaceManifest": "tavernlab.workspace.records._records",
    "dump_model": "tavernlab.workspace.records._records",
    "model_text": "tavernlab.workspace.records._records",
    "pretty_json": "tavernlab.workspace.records._records",
    "read_json": "tavernlab.workspace.records._records",
    "write_json": "tavernlab.workspace.records._records",
    "write_model": "tavernlab.workspace.records._records",
    "write_text_atomically": "tavernlab.workspace.records._records",
}


def __getattr__(name: str) -> Any:
    """Import a public name on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
