"""The script kit: ``@tauritavern/kit/*``, six libraries every script may import.

No library code lives in this repository. :mod:`.pins` names each exact npm tarball and its
SHA-512; :mod:`.provider` downloads, verifies, builds (:mod:`.build`, :mod:`.bundle`) and
caches (:mod:`.cache`) one ES module per library, ahead of time (``tavernlab kit fetch``) or
on the first import. The built-in module set of :mod:`tavernlab.js._builtins` asks
:func:`kit_module_source` for the source of an exact kit name.
"""

from tavernlab.js.kit._cache import CachedModule
from tavernlab.js.kit._pins import KIT_MODULES, KitPin, kit_key
from tavernlab.js.kit._provider import (
    KitDeadlinePassed,
    KitProgress,
    KitSettings,
    fetch_kit,
    kit_module_source,
    kit_status,
    select_pins,
)

__all__ = [
    "KIT_MODULES",
    "CachedModule",
    "KitDeadlinePassed",
    "KitPin",
    "KitProgress",
    "KitSettings",
    "fetch_kit",
    "kit_key",
    "kit_module_source",
    "kit_status",
    "select_pins",
]
