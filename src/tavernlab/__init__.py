"""tavernlab: agent workspaces, sandboxed JavaScript skill scripts and git worktrees in Jupyter.

The public API is small: :class:`Lab` (runs, chats, sessions, skills, retention),
:class:`Run` (tool calls, shell, ``js``, ``export``), :class:`ToolResult`, the error root
:class:`TavernlabError`, the :mod:`tavernlab.worktree` package, and record and replay:
the :mod:`tavernlab.replay` package (``tavernlab.replay.replay(bundle)``),
:func:`replay_many` and :class:`ReplayReport`. Names are imported lazily so that
``import tavernlab`` stays cheap (the sandbox's worker processes import this package).

Importing this package registers providers for ``run.export`` and the agent loop
(``Lab.run_agent``, ``Lab.start_agent``, ``Lab.tool_definitions`` load
:mod:`tavernlab.agent` on first use) with the host's presenter registry
(:mod:`tavernlab.host._presentation`): the first ``run.export(path)`` imports
:mod:`tavernlab.replay`, which registers the exporter. The host never imports the replay
layer itself.

``tavernlab`` is also an IPython extension: ``%load_ext tavernlab`` (the tavernlab kernel
loads it) registers the magics of :mod:`tavernlab.notebook`, imported only then.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tavernlab.host import register_provider

if TYPE_CHECKING:
    from tavernlab import replay, worktree
    from tavernlab.errors import TavernlabError
    from tavernlab.host import Lab, Run
    from tavernlab.paths import WorkspacePath
    from tavernlab.replay import ReplayReport, replay_many
    from tavernlab.workspace.tools import ToolResult

__all__ = ["Lab", "ReplayReport", "Run", "TavernlabError", "ToolResult", "WorkspacePath",
           "load_ipython_extension", "replay", "replay_many", "unload_ipython_extension",
           "worktree"]
__version__ = "0.1.0"

_HOMES = {
    "Lab": "tavernlab.host._lab",
    "ReplayReport": "tavernlab.replay",
    "Run": "tavernlab.host._run",
    "TavernlabError": "tavernlab.errors",
    "ToolResult": "tavernlab.workspace.tools._tooling",
    "WorkspacePath": "tavernlab.paths",
    "replay_many": "tavernlab.replay",
}
_SUBPACKAGES = frozenset({"replay", "worktree"})


def _load_replay() -> None:
    """Import the replay layer, which registers ``run.export``."""
    importlib.import_module("tavernlab.replay")


register_provider("run.export", _load_replay)


def _load_agent() -> object:
    """Import the agent loop (it registers ``agent.run``, ``agent.start`` and
    ``agent.tool_definitions``)."""
    return importlib.import_module("tavernlab.agent")


for _name in ("agent.run", "agent.start", "agent.tool_definitions"):
    register_provider(_name, _load_agent)


def __getattr__(name: str) -> Any:
    """Import a public name on first use."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"tavernlab.{name}")
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tavernlab' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def load_ipython_extension(ip: Any) -> None:
    """``%load_ext tavernlab``: the magics, settings and rich display
    (:func:`tavernlab.notebook.load_ipython_extension`)."""
    from tavernlab import notebook

    notebook.load_ipython_extension(ip)


def unload_ipython_extension(ip: Any) -> None:
    """``%unload_ext tavernlab``: undo the load, putting back IPython's own ``%%js``."""
    from tavernlab import notebook

    notebook.unload_ipython_extension(ip)
