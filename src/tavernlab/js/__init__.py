"""tavernlab.js"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tavernlab.lazy import lazy_names

if TYPE_CHECKING:
    from tavernlab.js._budget import InputBudget
    from tavernlab.js._builtins import LEGACY_RUNTIME_MODULE, RUNTIME_MODULE
    from tavernlab.js._command import CommandResult, run_js_command
    from tavernlab.js._command_line import shell_path
    from tavernlab.js._errors import SkillScriptError, SkillScriptValidationError
    from tavernlab.js._legacy import (
        SkillScriptRequest,
        SnapshotFile,
        check_module_snapshot,
        legacy_context,
        run_skill_script,
    )
    from tavernlab.js._limits import (
        DEFAULT_DEADLINE_S,
        INPUT_BUDGET,
        LEGACY_MAX_MODULES,
        LEGACY_MODULE_BYTES,
        LEGACY_SNAPSHOT_DEPTH,
        LEGACY_SNAPSHOT_ENTRIES,
    )
    from tavernlab.js._loaders import dirname, has_module_extension, join_relative
    from tavernlab.js._pool import WorkerPool, default_pool
    from tavernlab.js._scan import SpecifierSite, parse_module, scan_module, walk_nodes

__all__ = [
    "DEFAULT_DEADLINE_S",
    "INPUT_BUDGET",
    "LEGACY_MAX_MODULES",
    "LEGACY_MODULE_BYTES",
    "LEGACY_RUNTIME_MODULE",
    "LEGACY_SNAPSHOT_DEPTH",
    "LEGACY_SNAPSHOT_ENTRIES",
    "RUNTIME_MODULE",
    "CommandResult",
    "InputBudget",
    "SkillScriptError",
    "SkillScriptRequest",
    "SkillScriptValidationError",
    "SnapshotFile",
    "SpecifierSite",
    "WorkerPool",
    "check_module_snapshot",
    "default_pool",
    "dirname",
    "has_module_extension",
    "join_relative",
    "legacy_context",
    "parse_module",
    "run_js_command",
    "run_skill_script",
    "scan_module",
    "shell_path",
    "walk_nodes",
]

_HOMES = {
    "CommandResult": "tavernlab.js._command",
    "DEFAULT_DEADLINE_S": "tavernlab.js._limits",
    "INPUT_BUDGET": "tavernlab.js._limits",
    "InputBudget": "tavernlab.js._budget",
    "LEGACY_MAX_MODULES": "tavernlab.js._limits",
    "LEGACY_MODULE_BYTES": "tavernlab.js._limits",
    "LEGACY_RUNTIME_MODULE": "tavernlab.js._builtins",
    "LEGACY_SNAPSHOT_DEPTH": "tavernlab.js._limits",
    "LEGACY_SNAPSHOT_ENTRIES": "tavernlab.js._limits",
    "RUNTIME_MODULE": "tavernlab.js._builtins",
    "SkillScriptError": "tavernlab.js._errors",
    "SkillScriptRequest": "tavernlab.js._legacy",
    "SkillScriptValidationError": "tavernlab.js._errors",
    "SnapshotFile": "tavernlab.js._legacy",
    "SpecifierSite": "tavernlab.js._scan",
    "WorkerPool": "tavernlab.js._pool",
    "check_module_snapshot": "tavernlab.js._legacy",
    "default_pool": "tavernlab.js._pool",
    "dirname": "tavernlab.js._loaders",
    "has_module_extension": "tavernlab.js._loaders",
    "join_relative": "tavernlab.js._loaders",
    "legacy_context": "tavernlab.js._legacy",
    "parse_module": "tavernlab.js._scan",
    "run_js_command": "tavernlab.js._command",
    "run_skill_script": "tavernlab.js._legacy",
    "scan_module": "tavernlab.js._scan",
    "shell_path": "tavernlab.js._command_line",
    "walk_nodes": "tavernlab.js._scan",
}


__getattr__ = lazy_names(__name__, _HOMES)
