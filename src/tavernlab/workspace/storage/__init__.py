"""The storage port: ``WorkspaceFs``, the one byte-level door to a run's files, with its
contract values, containment, atomic writes and the change list it keeps."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tavernlab.lazy import lazy_names

if TYPE_CHECKING:
    from tavernlab.workspace.storage._atomic import (
        NotRegularFile,
        create_in_place,
        create_new,
        open_regular,
        publish,
        read_all,
        read_regular,
        replace_durably,
        sync,
        writer_temp,
    )
    from tavernlab.workspace.storage._changes import ChangeRecorder
    from tavernlab.workspace.storage._containment import LabLinks, LinkKey, link_key, refused_node
    from tavernlab.workspace.storage._contract import (
        WorkspaceRefusedEntry,
        WriteGuard,
        decode_text,
        not_found,
        sha256_hex,
    )
    from tavernlab.workspace.storage._file_cache import ParsedFiles, identity
    from tavernlab.workspace.storage._fs import (
        CALL_COUNTER_NAME,
        INTERNAL_NAMES,
        STAGING_DIR_NAME,
        TEMP_PREFIX,
        UNSUPPORTED_NODE,
        WorkspaceAppendResult,
        WorkspaceDirectoryEntry,
        WorkspaceDirectoryScan,
        WorkspaceEntry,
        WorkspaceFile,
        WorkspaceFileList,
        WorkspaceFs,
        WorkspaceMetadata,
        clear_staging,
        walk_entries,
    )

__all__ = [
    "CALL_COUNTER_NAME",
    "INTERNAL_NAMES",
    "STAGING_DIR_NAME",
    "TEMP_PREFIX",
    "UNSUPPORTED_NODE",
    "ChangeRecorder",
    "LabLinks",
    "LinkKey",
    "NotRegularFile",
    "ParsedFiles",
    "WorkspaceAppendResult",
    "WorkspaceDirectoryEntry",
    "WorkspaceDirectoryScan",
    "WorkspaceEntry",
    "WorkspaceFile",
    "WorkspaceFileList",
    "WorkspaceFs",
    "WorkspaceMetadata",
    "WorkspaceRefusedEntry",
    "WriteGuard",
    "clear_staging",
    "create_in_place",
    "create_new",
    "decode_text",
    "identity",
    "link_key",
    "not_found",
    "open_regular",
    "publish",
    "read_all",
    "read_regular",
    "refused_node",
    "replace_durably",
    "sha256_hex",
    "sync",
    "walk_entries",
    "writer_temp",
]

_HOMES = {
    "CALL_COUNTER_NAME": "tavernlab.workspace.storage._fs",
    "ChangeRecorder": "tavernlab.workspace.storage._changes",
    "INTERNAL_NAMES": "tavernlab.workspace.storage._fs",
    "LabLinks": "tavernlab.workspace.storage._containment",
    "LinkKey": "tavernlab.workspace.storage._containment",
    "NotRegularFile": "tavernlab.workspace.storage._atomic",
    "ParsedFiles": "tavernlab.workspace.storage._file_cache",
    "STAGING_DIR_NAME": "tavernlab.workspace.storage._fs",
    "TEMP_PREFIX": "tavernlab.workspace.storage._fs",
    "UNSUPPORTED_NODE": "tavernlab.workspace.storage._fs",
    "WorkspaceAppendResult": "tavernlab.workspace.storage._fs",
    "WorkspaceDirectoryEntry": "tavernlab.workspace.storage._fs",
    "WorkspaceDirectoryScan": "tavernlab.workspace.storage._fs",
    "WorkspaceEntry": "tavernlab.workspace.storage._fs",
    "WorkspaceFile": "tavernlab.workspace.storage._fs",
    "WorkspaceFileList": "tavernlab.workspace.storage._fs",
    "WorkspaceFs": "tavernlab.workspace.storage._fs",
    "WorkspaceMetadata": "tavernlab.workspace.storage._fs",
    "WorkspaceRefusedEntry": "tavernlab.workspace.storage._contract",
    "WriteGuard": "tavernlab.workspace.storage._contract",
    "clear_staging": "tavernlab.workspace.storage._fs",
    "create_in_place": "tavernlab.workspace.storage._atomic",
    "create_new": "tavernlab.workspace.storage._atomic",
    "decode_text": "tavernlab.workspace.storage._contract",
    "identity": "tavernlab.workspace.storage._file_cache",
    "link_key": "tavernlab.workspace.storage._containment",
    "not_found": "tavernlab.workspace.storage._contract",
    "open_regular": "tavernlab.workspace.storage._atomic",
    "publish": "tavernlab.workspace.storage._atomic",
    "read_all": "tavernlab.workspace.storage._atomic",
    "read_regular": "tavernlab.workspace.storage._atomic",
    "refused_node": "tavernlab.workspace.storage._containment",
    "replace_durably": "tavernlab.workspace.storage._atomic",
    "sha256_hex": "tavernlab.workspace.storage._contract",
    "sync": "tavernlab.workspace.storage._atomic",
    "walk_entries": "tavernlab.workspace.storage._fs",
    "writer_temp": "tavernlab.workspace.storage._atomic",
}


__getattr__ = lazy_names(__name__, _HOMES)
