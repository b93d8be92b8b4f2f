"""The workspace shell: ``workspace.shell`` on bashkit (docs/shell.md).

The names below are imported on first use (the interpreter is loaded only when a shell runs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tavernlab.lazy import lazy_names

if TYPE_CHECKING:
    from tavernlab.shell._engine import BashkitEngine, EngineRun, ShellEngine
    from tavernlab.shell._execute import execute_shell
    from tavernlab.shell._resources import DEFAULT_HELPER, MainThreadHelper, ShellResources
    from tavernlab.shell._result import (
        OUTPUT_TRUNCATED,
        ShellOutcome,
        ShellResult,
        ShellToolResult,
        status_line,
    )
    from tavernlab.shell._tool import DESCRIPTION, TOOL_ID, shell_tools

_HOMES = {
    "BashkitEngine": "tavernlab.shell._engine", "EngineRun": "tavernlab.shell._engine",
    "ShellEngine": "tavernlab.shell._engine", "execute_shell": "tavernlab.shell._execute",
    "ShellOutcome": "tavernlab.shell._result", "ShellResult": "tavernlab.shell._result",
    "ShellToolResult": "tavernlab.shell._result", "DESCRIPTION": "tavernlab.shell._tool",
    "TOOL_ID": "tavernlab.shell._tool",
    "DEFAULT_HELPER": "tavernlab.shell._resources",
    "MainThreadHelper": "tavernlab.shell._resources",
    "OUTPUT_TRUNCATED": "tavernlab.shell._result",
    "ShellResources": "tavernlab.shell._resources",
    "shell_tools": "tavernlab.shell._tool",
    "status_line": "tavernlab.shell._result",
}
__all__ = [
    "DEFAULT_HELPER",
    "DESCRIPTION",
    "OUTPUT_TRUNCATED",
    "TOOL_ID",
    "BashkitEngine",
    "EngineRun",
    "MainThreadHelper",
    "ShellEngine",
    "ShellOutcome",
    "ShellResources",
    "ShellResult",
    "ShellToolResult",
    "execute_shell",
    "shell_tools",
    "status_line",
]


__getattr__ = lazy_names(__name__, _HOMES)
