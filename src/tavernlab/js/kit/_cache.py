"""The per-user cache of built kit modules.

Layout (tavernlab choice)::

    <root>/                          $TAVERNLAB_KIT_CACHE, else $XDG_CACHE_HOME/tavernlab/kit,
                                     else ~/.cache/tavernlab/kit
      <key>/                         kit_key(): the build format + a hash of every pin
        dayjs.js                     the built ES module
        dayjs.json                   its manifest: package, version, integrity, sha256, ...

Writes are atomic: each file goes to a temporary name in the same directory and is renamed
into place, the module first and the manifest last, so a reader sees either nothing or a
complete pair. A pair whose module does not match the manifest's SHA-256 (a truncated or
edited file), or whose manifest names other pins, reads as "not cached" and is rebuilt by
the next fetch. Nothing is created until there is something verified to store.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tavernlab.js.kit._build import BuiltModule
from tavernlab.js.kit._pins import BUILD_FORMAT, PINS, KitPin, kit_key
from tavernlab.workspace.storage import read_regular, replace_durably

#: Environment variable naming the cache root (tests and shared machines point it elsewhere).
CACHE_ENV = "TAVERNLAB_KIT_CACHE"
#: The largest manifest and module read back (tavernlab's bounds: every pinned library's
#: build is far smaller; anything larger is not a file this cache wrote).
MAX_MANIFEST_BYTES = 1 << 20
MAX_MODULE_BYTES = 32 << 20


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """The cache root chosen by the environment (see the module docstring)."""
    env = os.environ if environ is None else environ
    explicit = env.get(CACHE_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    xdg = env.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "tavernlab" / "kit"


@dataclass(frozen=True, slots=True)
class CachedModule:
    """A kit module read back from the cache, with its manifest."""

    pin: KitPin
    source: str
    manifest: dict[str, Any]
    path: Path


class KitCache:
    """The directory of one set of pins under a cache root."""

    def __init__(self, root: Path, pins: tuple[KitPin, ...] = PINS) -> None:
        self.root = root
        self.directory = root / kit_key(pins)

    def module_path(self, pin: KitPin) -> Path:
        """Where ``pin``'s built module lives."""
        return self.directory / f"{pin.name}.js"

    def manifest_path(self, pin: KitPin) -> Path:
        """Where ``pin``'s manifest lives."""
        return self.directory / f"{pin.name}.json"

    def read(self, pin: KitPin) -> CachedModule | None:
        """The cached module of ``pin``, or ``None`` when it is missing or does not match.

        Only regular files are read (a FIFO, socket or device planted in the cache reads as
        "not cached" at once, without waiting on it), and only up to
        :data:`MAX_MANIFEST_BYTES` / :data:`MAX_MODULE_BYTES`."""
        try:
            manifest = json.loads(read_regular(self.manifest_path(pin), MAX_MANIFEST_BYTES,
                                               follow=True).decode("utf-8"))
            data = read_regular(self.module_path(pin), MAX_MODULE_BYTES, follow=True)
        except (OSError, ValueError):
            return None
        if not isinstance(manifest, dict) or any(
                manifest.get(key) != value for key, value in _identity(pin).items()):
            return None
        if manifest.get("sha256") != hashlib.sha256(data).hexdigest():
            return None
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return CachedModule(pin, source, manifest, self.module_path(pin))

    def write(self, pin: KitPin, built: BuiltModule) -> CachedModule:
        """Store ``built`` atomically (module, then manifest) and return it as cached."""
        data = built.source.encode("utf-8")
        manifest: dict[str, Any] = {
            **_identity(pin),
            "module": pin.module,
            "tarball": pin.tarball,
            "entry": built.entry,
            "files": built.files,
            "exports": list(built.names),
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        self.directory.mkdir(parents=True, exist_ok=True)
        replace_durably(self.module_path(pin), data)
        replace_durably(self.manifest_path(pin),
                      (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
        return CachedModule(pin, built.source, manifest, self.module_path(pin))


def _identity(pin: KitPin) -> dict[str, Any]:
    """The manifest fields that must match the pin for a cached module to be used."""
    return {"package": pin.package, "version": pin.version, "integrity": pin.integrity,
            "buildFormat": BUILD_FORMAT}
