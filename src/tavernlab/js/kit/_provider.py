"""Where kit modules come from: the cache, else the npm registry (docs/js-and-skills.md).

:func:`kit_module_source` is what :mod:`tavernlab.js._builtins` calls for an
``@tauritavern/kit/*`` name: it returns the built module from the per-user cache, fetching
and building it on demand the first time (only that library). :func:`fetch_kit` is
``tavernlab kit fetch``: every library (or the named ones), with progress events. Both read
their settings from the environment at call time (:meth:`KitSettings.from_environment`), so
a test or a user can point ``TAVERNLAB_KIT_CACHE`` / ``TAVERNLAB_NPM_REGISTRY`` elsewhere
without restarting anything.

Fetching one library: download (bounded, timed out) -> check the SHA-512 against the pin ->
read the tarball in memory -> build -> write atomically. Any failure before the write leaves
the cache untouched. Built sources are kept in memory per cache directory after the first
read; one lock per library keeps two threads from downloading the same tarball at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tavernlab.js._errors import KitDownloadFailed, KitUnavailable, UnknownKitModule
from tavernlab.js.kit._build import build_module
from tavernlab.js.kit._cache import CACHE_ENV, CachedModule, KitCache, cache_root
from tavernlab.js.kit._pins import PINS, PINS_BY_MODULE, KitPin
from tavernlab.js.kit._registry import download_tarball, registry_url
from tavernlab.js.kit._tarball import read_package, verify_integrity

Phase = Literal["cached", "download", "verified", "built"]


@dataclass(frozen=True, slots=True)
class KitProgress:
    """One step of fetching a library: ``download`` repeats with ``received``/``total`` bytes
    (``total`` is ``None`` when the registry sends no length)."""

    pin: KitPin
    phase: Phase
    received: int = 0
    total: int | None = None


ProgressCallback = Callable[[KitProgress], None]


@dataclass(frozen=True, slots=True)
class KitSettings:
    """The cache root and the registry base URL."""

    cache_root: Path
    registry: str

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> KitSettings:
        """``$TAVERNLAB_KIT_CACHE`` / XDG / ``~/.cache`` and ``$TAVERNLAB_NPM_REGISTRY`` /
        ``$npm_config_registry`` / the public registry."""
        return cls(cache_root(environ), registry_url(environ))

    @property
    def cache(self) -> KitCache:
        """The cache directory of the current pins."""
        return KitCache(self.cache_root)


@dataclass(frozen=True, slots=True)
class FetchResult:
    """What :func:`fetch_kit` did for one library: ``fetched`` now or already ``cached``."""

    module: CachedModule
    status: Literal["fetched", "cached"]


_MEMO: dict[tuple[Path, str], str] = {}
_LOCKS = {pin.module: threading.Lock() for pin in PINS}


def select_pins(names: Iterable[str] = ()) -> tuple[KitPin, ...]:
    """The pins named by module name or short name (``marked``); all of them for none."""
    wanted = list(names)
    if not wanted:
        return PINS
    chosen = []
    for name in wanted:
        pin = PINS_BY_MODULE.get(name) or PINS_BY_MODULE.get("@tauritavern/kit/" + name)
        if pin is None:
            raise UnknownKitModule(f"`{name}` is not a kit module; the kit has "
                                   + ", ".join(p.name for p in PINS) + ".")
        if pin not in chosen:
            chosen.append(pin)
    return tuple(chosen)


def fetch_module(pin: KitPin, settings: KitSettings, *, force: bool = False,
                 progress: ProgressCallback | None = None) -> FetchResult:
    """Make sure ``pin``'s module is cached (rebuilding it when ``force``)."""
    cache = settings.cache
    with _LOCKS[pin.module]:
        cached = None if force else cache.read(pin)
        if cached is not None:
            if progress is not None:
                progress(KitProgress(pin, "cached"))
            return FetchResult(cached, "cached")

        def downloaded(received: int, total: int | None) -> None:
            if progress is not None:
                progress(KitProgress(pin, "download", received, total))

        data = download_tarball(pin, settings.registry, downloaded)
        verify_integrity(pin, data)
        if progress is not None:
            progress(KitProgress(pin, "verified", len(data), len(data)))
        built = build_module(pin, read_package(pin, data))
        stored = cache.write(pin, built)
        _MEMO[(cache.directory, pin.module)] = stored.source
        if progress is not None:
            progress(KitProgress(pin, "built", len(data), len(data)))
        return FetchResult(stored, "fetched")


def fetch_kit(names: Iterable[str] = (), *, settings: KitSettings | None = None,
              force: bool = False, progress: ProgressCallback | None = None
              ) -> list[FetchResult]:
    """``tavernlab kit fetch``: cache every library (or the named ones), in pin order.

    Stops at the first failure (the libraries before it stay cached).
    """
    settings = settings or KitSettings.from_environment()
    return [fetch_module(pin, settings, force=force, progress=progress)
            for pin in select_pins(names)]


def kit_status(settings: KitSettings | None = None) -> list[tuple[KitPin, CachedModule | None]]:
    """Each library with its cached module, or ``None`` when it is not cached (yet)."""
    settings = settings or KitSettings.from_environment()
    cache = settings.cache
    return [(pin, cache.read(pin)) for pin in PINS]


class KitDeadlinePassed(Exception):
    """The kit module was not ready by the caller's deadline (its fetch goes on in the
    background and fills the cache for the next job)."""


def kit_module_source(module: str, settings: KitSettings | None = None, *,
                      deadline: float | None = None) -> str:
    """The source of the kit module ``module`` (an exact kit name), fetched on demand.

    Raises :class:`KitUnavailable` when it is not cached and cannot be downloaded, and the
    integrity/build errors of :func:`fetch_module` as they are (they name the package).
    With a ``deadline`` (a ``time.monotonic()`` instant, a ``js`` job's), a module not in
    memory yet is read or fetched on a helper thread and waited for until the deadline at
    most: then :class:`KitDeadlinePassed` (a slow registry, or another job holding the
    library's lock, never keeps the job past its deadline).
    """
    pin = PINS_BY_MODULE[module]
    settings = settings or KitSettings.from_environment()
    key = (settings.cache.directory, module)
    source = _MEMO.get(key)
    if source is None and deadline is not None:
        return _before(deadline, lambda: kit_module_source(module, settings))
    if source is None:
        try:
            source = fetch_module(pin, settings).module.source
        except KitDownloadFailed as exc:
            raise KitUnavailable(
                f"Cannot load `{module}`: it is not in the kit cache {settings.cache.directory} "
                f"and could not be fetched. {exc.message} Run `tavernlab kit fetch` "
                f"while the npm registry is reachable (or set {CACHE_ENV} to a directory that "
                "holds the kit).", package=pin.package) from None
        _MEMO[key] = source
    return source


def _before(deadline: float, fetch: Callable[[], str]) -> str:
    """``fetch()`` on a daemon thread, waited for until ``deadline`` at most."""
    box: dict[str, str | BaseException] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["value"] = fetch()
        except BaseException as exc:  # handed to the waiting job
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, daemon=True, name="tavernlab-kit-fetch").start()
    if not done.wait(max(0.0, deadline - time.monotonic())):
        raise KitDeadlinePassed
    error = box.get("error")
    if isinstance(error, BaseException):
        raise error
    value = box["value"]
    assert isinstance(value, str)
    return value
