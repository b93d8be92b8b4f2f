"""The workspace shell: ``workspace.shell`` on bashkit (docs/shell.md).

The names below are imported on first use (the interpreter is loaded only when a shell runs).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tavernlab.shell.engine import BashkitEngine, EngineRun, ShellEngine
    from tavernlab.shell.execute import execute_shell
    from tavernlab.shell.result import ShellOutcome, ShellResult, ShellToolResult
    from tavernlab.shell.tool import DESCRIPTION, TOOL_ID

_HOMES = {
    "BashkitEngine": "tavernlab.shell.engine", "EngineRun": "tavernlab.shell.engine",
    "ShellEngine": "tavernlab.shell.engine", "execute_shell": "tavernlab.shell.execute",
    "ShellOutcome": "tavernlab.shell.result", "ShellResult": "tavernlab.shell.result",
    "ShellToolResult": "tavernlab.shell.result", "DESCRIPTION": "tavernlab.shell.tool",
    "TOOL_ID": "tavernlab.shell.tool",
}
__all__ = [
    "DESCRIPTION",
    "TOOL_ID",
    "BashkitEngine",
    "EngineRun",
    "ShellEngine",
    "ShellOutcome",
    "ShellResult",
    "ShellToolResult",
    "execute_shell",
]


def __getattr__(name: str) -> Any:
    """Import a public name on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tavernlab.shell' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
