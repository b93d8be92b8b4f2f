"""The notebook surface: ``%load_ext tavernlab`` and its magics, rich display and errors.

``%tavern`` (the current lab and run, skills, tree, events), ``%%js``/``%js`` (the sandbox),
``%ws_shell``/``%%ws_shell`` (one ``workspace.shell`` call) and ``%worktree`` (agentproto
worktrees); settings on :class:`TavernMagics`. The widgets and other notebook code extend it
through:

* :func:`register_tavern_command` - add or replace a ``%tavern``
  subcommand (``Subcommand(name, help, handler, arguments)``);
* :func:`set_progress_factory` - what ``%worktree new`` shows while provisioning;
* :func:`current_state` - the loaded extension's :class:`NotebookState` (current lab, run,
  worktree);
* :class:`CellRouter` - route output from a helper thread to the cell that started the work.
"""

from __future__ import annotations

from typing import Any

from IPython.core.getipython import get_ipython

from tavernlab.notebook._commands import Subcommand
from tavernlab.notebook._errors import JSError, ShellError
from tavernlab.notebook._extension import (
    load_ipython_extension,
    loaded_magics,
    unload_ipython_extension,
)
from tavernlab.notebook._magics import TavernMagics
from tavernlab.notebook._output import CellRouter
from tavernlab.notebook._progress import ProvisionObserver, TextProgress, set_progress_factory
from tavernlab.notebook._state import NotebookState


def _magics(ip: Any = None) -> TavernMagics:
    magics = loaded_magics(ip if ip is not None else get_ipython())
    if magics is None:
        raise RuntimeError("the tavernlab extension is not loaded: run `%load_ext tavernlab`")
    return magics


def current_state(ip: Any = None) -> NotebookState:
    """The :class:`NotebookState` of the extension loaded in ``ip`` (default: the running
    shell)."""
    return _magics(ip).state


def register_tavern_command(command: Subcommand, *, replace: bool = False,
                            ip: Any = None) -> None:
    """Add a ``%tavern`` subcommand (``replace=True`` swaps an existing one)."""
    _magics(ip).tavern_commands.register(command, replace=replace)


__all__ = [
    "CellRouter",
    "JSError",
    "NotebookState",
    "ProvisionObserver",
    "ShellError",
    "Subcommand",
    "TavernMagics",
    "TextProgress",
    "current_state",
    "load_ipython_extension",
    "register_tavern_command",
    "set_progress_factory",
    "unload_ipython_extension",
]
