"""What a run asks of the surface floor, without the host knowing the surface.

``run.show()`` must display widgets and ``run.export()`` must write a replay bundle, but the
host floor may not import the notebook or replay layers. So those layers *register* their
presenters here when they are imported (the ``tavernlab`` extension and kernel import the
notebook layer; importing :mod:`tavernlab.replay` registers ``run.export``), and
:func:`present` looks them up.

A surface may also register a *provider* for a name: a function that loads the layer (which
then registers the presenter) the first time the name is needed. The public package
``tavernlab/__init__.py`` (floor 5) registers one for ``run.export`` when it is imported, so
``run.export(path)`` works without importing :mod:`tavernlab.replay` by hand, and the host
still never names a higher floor. With neither registered, a clear error says what to load.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tavernlab.errors import UsageError

Presenter = Callable[..., Any]

_PRESENTERS: dict[str, Presenter] = {}
_PROVIDERS: dict[str, Callable[[], object]] = {}


def register_presenter(name: str, presenter: Presenter) -> None:
    """Make ``presenter`` the one that answers :func:`present` for ``name`` (replacing any
    earlier one, so reloading the notebook layer works)."""
    _PRESENTERS[name] = presenter


def unregister_presenter(name: str) -> None:
    """Forget the presenter of ``name`` (unloading the extension)."""
    _PRESENTERS.pop(name, None)


def register_provider(name: str, load: Callable[[], object]) -> None:
    """Make ``load`` the function that loads the layer presenting ``name`` the first time
    :func:`present` needs it (the layer registers its presenter when it is imported)."""
    _PROVIDERS[name] = load


def present(name: str, *args: Any, **kwargs: Any) -> Any:
    """Call the presenter registered for ``name`` (loading its layer through a registered
    provider first, if that has not happened yet)."""
    presenter = _PRESENTERS.get(name)
    if presenter is None and (load := _PROVIDERS.get(name)) is not None:
        load()
        presenter = _PRESENTERS.get(name)
    if presenter is None:
        raise UsageError(f"{name} needs the notebook layer: run `%load_ext tavernlab` (the "
                         "tavernlab kernel loads it) or `import tavernlab.notebook` first")
    return presenter(*args, **kwargs)
