"""The workspace shell: ``workspace.shell`` on bashkit (spec/shell.md).

Importing this package registers the ``workspace.shell`` tool.
"""

from tavernlab.shell.engine import BashkitEngine, EngineRun, ShellEngine
from tavernlab.shell.execute import execute_shell
from tavernlab.shell.result import ShellOutcome, ShellResult, ShellToolResult
from tavernlab.shell.tool import DESCRIPTION, TOOL_ID

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
