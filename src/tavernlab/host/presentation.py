"""How a run shows itself in a notebook, without the host knowing the notebook.

``run.show()`` must display widgets, but the host floor may not import the notebook layer.
So the notebook layer *registers* its presenters here when it is imported (the ``tavernlab``
extension and kernel import it), and :func:`present` looks them up; with none registered, a
clear error says how to load it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tavernlab.errors import UsageError

Presenter = Callable[..., Any]

_PRESENTERS: dict[str, Presenter] = {}


def register_presenter(name: str, presenter: Presenter) -> None:
    """Make ``presenter`` the one that answers :func:`present` for ``name`` (replacing any
    earlier one, so reloading the notebook layer works)."""
    _PRESENTERS[name] = presenter


def unregister_presenter(name: str) -> None:
    """Forget the presenter of ``name`` (unloading the extension)."""
    _PRESENTERS.pop(name, None)


def present(name: str, *args: Any, **kwargs: Any) -> Any:
    """Call the presenter registered for ``name``."""
    presenter = _PRESENTERS.get(name)
    if presenter is None:
        raise UsageError(f"{name} needs the notebook layer: run `%load_ext tavernlab` (the "
                         "tavernlab kernel loads it) or `import tavernlab.notebook` first")
    return presenter(*args, **kwargs)
