"""The host floor: labs, runs, the tool registry, dispatch, rounds, retention and sessions.

:class:`Lab` and :class:`Run` are the user's handles; the rest is the bookkeeping behind
them, one concern per module. Nothing below this floor imports it.
"""

from tavernlab.host.lab import Lab
from tavernlab.host.registry import DEFAULT_TOOLS, ToolProvider, ToolRegistry
from tavernlab.host.run import Run
from tavernlab.host.services import LabServices

__all__ = ["DEFAULT_TOOLS", "Lab", "LabServices", "Run", "ToolProvider", "ToolRegistry"]
