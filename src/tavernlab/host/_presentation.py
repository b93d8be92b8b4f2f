"""The one upward seam: what the host must reach above its floor, by name.

The host floor may not import the floors above it, yet four things it offers are done there:
showing a run as widgets, writing a replay bundle, and the agent loop. So the host calls
:func:`present` with one of the names of :data:`UPWARD`, and the layer that does the work
registers its function under that name when it is imported:

* ``run.show``: ``Run.show()``, the run's widgets (registered by ``tavernlab.notebook.widgets``);
* ``run.export``: ``Run.export(path)``, a ``.tavernrun`` bundle (by ``tavernlab.replay``);
* ``agent.run``, ``agent.start``, ``agent.tool_definitions``: ``Lab.run_agent``,
  ``Lab.start_agent``, ``Lab.tool_definitions`` (by ``tavernlab.agent``).

A layer may also be *loaded on demand*: :func:`register_provider` gives a name a function
that imports the layer (which then registers its presenter) the first time the name is
needed. The package face ``tavernlab/__init__.py`` registers those for ``run.export`` and the
three agent names, so they work without importing the layer by hand while the host never
names a higher floor; ``run.show`` needs the notebook layer (``%load_ext tavernlab``). With
neither registered, :func:`present` raises a clear error saying what to load. No other name
is accepted: a new upward need is added to :data:`UPWARD` (and to the table above), not
registered ad hoc.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tavernlab.errors import UsageError

Presenter = Callable[..., Any]

#: Every name the host reaches upward through, the only names this module accepts.
UPWARD: tuple[str, ...] = ("run.show", "run.export", "agent.run", "agent.start",
                           "agent.tool_definitions")

_PRESENTERS: dict[str, Presenter] = {}
_PROVIDERS: dict[str, Callable[[], object]] = {}


def _known(name: str) -> str:
    if name not in UPWARD:
        raise ValueError(f"{name!r} is not an upward name of the host (one of {', '.join(UPWARD)})")
    return name


def register_presenter(name: str, presenter: Presenter) -> None:
    """Make ``presenter`` the one that answers :func:`present` for ``name`` (replacing any
    earlier one, so reloading the notebook layer works). ``name`` must be in :data:`UPWARD`."""
    _PRESENTERS[_known(name)] = presenter


def unregister_presenter(name: str) -> None:
    """Forget the presenter of ``name`` (unloading the extension)."""
    _PRESENTERS.pop(_known(name), None)


def register_provider(name: str, load: Callable[[], object]) -> None:
    """Make ``load`` the function that loads the layer presenting ``name`` the first time
    :func:`present` needs it (the layer registers its presenter when it is imported).
    ``name`` must be in :data:`UPWARD`."""
    _PROVIDERS[_known(name)] = load


def present(name: str, *args: Any, **kwargs: Any) -> Any:
    """Call the presenter registered for ``name`` (loading its layer through a registered
    provider first, if that has not happened yet)."""
    presenter = _PRESENTERS.get(_known(name))
    if presenter is None and (load := _PROVIDERS.get(name)) is not None:
        load()
        presenter = _PRESENTERS.get(name)
    if presenter is None:
        raise UsageError(f"{name} needs the notebook layer: run `%load_ext tavernlab` (the "
                         "tavernlab kernel loads it) or `import tavernlab.notebook` first")
    return presenter(*args, **kwargs)
