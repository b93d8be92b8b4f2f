"""The frozen host facts of a run: what scripts see as ``context`` and render with ``macros``.

The host (simulated in tavernlab) captures these facts when the run starts and stores them in
``input/prompt_snapshot.json``; sub-agents and resumed calls reuse the same values. A Session
run has no host context (``snapshot is None``): scripts still run, but reading
``context.worldInfo`` and friends fails with ``context.<field> is unavailable for this task.``

Snapshot shape (upstream V5 shape unknown; tavernlab chooses this and documents it)::

    {
      "worldInfoActivation": {"entries": [{uid, ref?, content, constant, position?,
                                           displayName?, world}]},
      "variables": {"local": {...}, "global": {...}},          # raw JSON values
      "macroContext": {"names": {...}, "character": {..., "alternateGreetings": [...]},
                       "system": {...}, "chat": {...},
                       "variableValues": {"local": {...}, "global": {...}},
                       "builtins": {...}},
      "extensionPrompts": {"customWIOutlet_<key>": {"value": "<text>"}, ...}
    }

``macroContext`` and ``extensionPrompts`` follow upstream's snapshot shape (docs/workspace.md;
the revision-1 shape is accepted too, see :mod:`tavernlab.workspace.macros._macro_snapshot`).

The snapshot is stored raw; each consumer validates the part it needs (the legacy
``skill.run_script`` reports a malformed one as ``agent.invalid_skill_script_context``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tavernlab.workspace.macros._macros import FrozenMacros


@dataclass(frozen=True, slots=True)
class FrozenContext:
    """A run's frozen host facts (``snapshot``, ``None`` without a host) and macro table."""

    snapshot: dict[str, Any] | None
    macros: FrozenMacros
