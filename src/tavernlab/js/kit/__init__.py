"""The script kit: ``@tauritavern/kit/*``, six libraries every script may import.

No library code lives in this repository. :mod:`.pins` names each exact npm tarball and its
SHA-512; :mod:`.provider` downloads, verifies, builds (:mod:`.build`, :mod:`.bundle`) and
caches (:mod:`.cache`) one ES module per library, ahead of time (``tavernlab kit fetch``) or
on the first import. The built-in module set of :mod:`tavernlab.js.builtins` asks
:func:`kit_module_source` for the source of an exact kit name.
"""

from tavernlab.js.kit.pins import KIT_MODULES
from tavernlab.js.kit.provider import (
    KitSettings,
    fetch_kit,
    kit_module_source,
    kit_status,
)

__all__ = ["KIT_MODULES", "KitSettings", "fetch_kit", "kit_module_source",
           "kit_status"]
