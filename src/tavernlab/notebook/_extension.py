"""Loading and unloading the ``tavernlab`` IPython extension.

``%load_ext tavernlab`` (the tavernlab kernel does it for you) calls
:func:`load_ipython_extension`: it creates the :class:`~.magics.TavernMagics` (whose
settings ``%config`` then finds), registers ``%tavern``, ``%%js``/``%js``, ``%ws_shell``/
``%%ws_shell`` and ``%worktree``, tab completion of their lines (:mod:`.completion`) and the
rich display of tavernlab's objects. ``%%js``
replaces IPython's own ``%%js`` (its alias of the browser-side ``%%javascript``); the magic it
replaced is kept and put back by :func:`unload_ipython_extension`, which also removes the
formatters, closes the lab the notebook opened and takes the widgets and the agent magics
out again.

Loading also installs the widgets (:func:`tavernlab.notebook.widgets.load_widgets`:
``run.show``, the live ``%tavern tree`` and ``%tavern timeline``, the provisioning widget of
``%worktree new``) and the agent magics ``%%agent`` / ``%agent_models``
(:func:`tavernlab.notebook._agent_cell.load_agent_magics`), both called by name here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tavernlab.notebook._completion import install_completion
from tavernlab.notebook._display import register_formatters
from tavernlab.notebook._magics import TavernMagics

_MAGIC_NAMES = (("line", "tavern"), ("line", "js"), ("cell", "js"), ("line", "ws_shell"),
                ("cell", "ws_shell"), ("line", "worktree"))


@dataclass
class _Loaded:
    """What one load changed, so unloading can undo exactly that."""

    magics: TavernMagics
    replaced: dict[tuple[str, str], Any] = field(default_factory=dict)
    undo_formatters: Callable[[], None] = lambda: None
    undo_completion: Callable[[], None] = lambda: None


_loaded: dict[int, _Loaded] = {}


def load_ipython_extension(ip: Any) -> None:
    """Register the magics, settings and rich display with the shell ``ip`` (loading twice
    is a no-op)."""
    if id(ip) in _loaded:
        return
    replaced = {(kind, name): fn for kind, name in _MAGIC_NAMES
                if (fn := _resolved(ip.magics_manager, kind, name)) is not None}
    magics = TavernMagics(shell=ip)
    ip.register_magics(magics)
    state = _Loaded(magics, replaced, register_formatters(ip),
                    install_completion(ip, magics))
    _loaded[id(ip)] = state
    from tavernlab.notebook._agent_cell import load_agent_magics
    from tavernlab.notebook.widgets import load_widgets

    load_widgets(ip)
    load_agent_magics(ip, magics.state)


def _resolved(manager: Any, kind: str, name: str) -> Any:
    """The magic registered as ``kind``/``name``, a lazily declared one imported first
    (IPython 9 declares its ``%%js`` lazily; putting back the placeholder after its provider
    was loaded would leave a magic that cannot load)."""
    find = getattr(manager, "find", None)
    return find(kind, name) if find is not None else manager.magics[kind].get(name)


def unload_ipython_extension(ip: Any) -> None:
    """Undo :func:`load_ipython_extension`: the agent magics, the widgets, the magics
    (IPython's ``%%js`` comes back), settings, formatters; close the lab the notebook opened,
    and say what became of the current run and how to reopen it."""
    state = _loaded.pop(id(ip), None)
    if state is None:
        return
    from tavernlab.notebook._agent_cell import unload_agent_magics
    from tavernlab.notebook.widgets import unload_widgets

    unload_agent_magics(ip)
    unload_widgets(ip)
    table = ip.magics_manager.magics
    for kind, name in _MAGIC_NAMES:
        table[kind].pop(name, None)
        if (kind, name) in state.replaced:
            table[kind][name] = state.replaced[(kind, name)]
    ip.magics_manager.registry.pop(TavernMagics.__name__, None)
    if state.magics in ip.configurables:
        ip.configurables.remove(state.magics)
    state.undo_formatters()
    state.undo_completion()
    farewell = state.magics.state.farewell()
    state.magics.state.close()
    if farewell:
        print(farewell)


def loaded_magics(ip: Any) -> TavernMagics | None:
    """The :class:`TavernMagics` loaded into ``ip`` (``None`` when the extension is not
    loaded): its ``state``, ``tavern_commands``,
    ``worktree_commands``."""
    state = _loaded.get(id(ip))
    return None if state is None else state.magics
