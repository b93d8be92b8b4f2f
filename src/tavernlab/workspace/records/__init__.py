"""A run's records on disk: ``run.json``, ``manifest.json`` and the other files a run directory
holds beside its logs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tavernlab.lazy import lazy_names

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


__getattr__ = lazy_names(__name__, _HOMES)
