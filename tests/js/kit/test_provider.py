"""Fetching and caching kit modules: the real registry once per session, a local mirror,
a dead registry, a tampered tarball and a damaged cache file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tavernlab.js._errors import KitDownloadFailed, KitIntegrityMismatch, KitUnavailable
from tavernlab.js.kit import KitProgress, KitSettings, fetch_kit, kit_key, kit_status
from tavernlab.js.kit._cache import KitCache
from tavernlab.js.kit._pins import PINS, PINS_BY_MODULE
from tavernlab.js.kit._provider import fetch_module, kit_module_source
from tavernlab.js.kit._registry import download_tarball
from tavernlab.js.kit._tarball import integrity_of

from .conftest import LocalRegistry

SLUGIFY = PINS_BY_MODULE["@tauritavern/kit/slugify"]


def files_under(root: Path) -> list[str]:
    """Every file below ``root`` (relative), sorted; empty when ``root`` does not exist."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.fixture(scope="session")
def slugify_tarball(kit_settings: KitSettings) -> bytes:
    """The real slugify 1.6.9 tarball (7 KiB) from the session's registry."""
    return download_tarball(SLUGIFY, kit_settings.registry)


def test_the_session_cache_holds_six_modules_with_manifests(kit_settings: KitSettings) -> None:
    directory = kit_settings.cache_root / kit_key()
    assert [name for name in files_under(directory) if not name.startswith(".")] == sorted(
        f"{pin.name}.{ext}" for pin in PINS for ext in ("js", "json"))
    manifest = json.loads((directory / "marked.json").read_text())
    assert {k: manifest[k] for k in ("module", "package", "version", "integrity", "entry")} == {
        "module": "@tauritavern/kit/marked", "package": "marked", "version": "18.0.9",
        "integrity": PINS_BY_MODULE["@tauritavern/kit/marked"].integrity,
        "entry": "lib/marked.esm.js"}
    assert [cached is not None for _, cached in kit_status(kit_settings)] == [True] * 6
    results = fetch_kit(settings=kit_settings)
    assert [r.status for r in results] == ["cached"] * 6


def test_a_mirror_registry_is_used_and_progress_is_reported(
        tmp_path: Path, local_registry: LocalRegistry, slugify_tarball: bytes) -> None:
    local_registry.serve(SLUGIFY, slugify_tarball)
    settings = KitSettings(tmp_path / "cache", local_registry.url)
    events: list[KitProgress] = []
    (result,) = fetch_kit(["slugify"], settings=settings, progress=events.append)
    assert result.status == "fetched"
    assert local_registry.requests == ["/slugify/-/slugify-1.6.9.tgz"]
    phases = [event.phase for event in events]
    assert phases[-2:] == ["verified", "built"] and set(phases[:-2]) == {"download"}
    assert events[-3].received == events[-3].total == len(slugify_tarball)
    assert files_under(settings.cache_root) == [f"{kit_key()}/slugify.js",
                                                f"{kit_key()}/slugify.json"]
    assert kit_module_source("@tauritavern/kit/slugify", settings) == result.module.source


def test_acceptance_5_a_changed_byte_is_refused_and_nothing_is_cached(
        tmp_path: Path, local_registry: LocalRegistry, slugify_tarball: bytes) -> None:
    altered = bytearray(slugify_tarball)
    altered[100] ^= 0xFF
    local_registry.serve(SLUGIFY, bytes(altered))
    settings = KitSettings(tmp_path / "cache", local_registry.url)
    for attempt in (lambda: fetch_kit(["slugify"], settings=settings),
                    lambda: kit_module_source("@tauritavern/kit/slugify", settings)):
        with pytest.raises(KitIntegrityMismatch) as caught:
            attempt()
        assert caught.value.message.startswith(
            "The slugify 1.6.9 tarball failed its integrity check: expected "
            f"{SLUGIFY.integrity}, got {integrity_of(bytes(altered))}.")
    assert not settings.cache_root.exists()


def test_an_unreachable_registry_names_the_command_and_the_cache(
        tmp_path: Path, closed_registry: str) -> None:
    settings = KitSettings(tmp_path / "cache", closed_registry)
    with pytest.raises(KitDownloadFailed) as download:
        fetch_module(PINS[0], settings)
    assert download.value.message.startswith(
        f"Downloading dayjs 1.11.21 from {closed_registry}dayjs/-/dayjs-1.11.21.tgz failed: ")
    with pytest.raises(KitUnavailable) as caught:
        kit_module_source("@tauritavern/kit/dayjs", settings)
    directory = tmp_path / "cache" / kit_key()
    assert caught.value.code == "js.kit_unavailable"
    assert caught.value.message == (
        f"Cannot load `@tauritavern/kit/dayjs`: it is not in the kit cache {directory} and "
        f"could not be fetched. {download.value.message} Run `tavernlab kit fetch` while the "
        "npm registry is reachable (or set TAVERNLAB_KIT_CACHE to a directory that holds the "
        "kit).")
    assert not settings.cache_root.exists()


def test_a_damaged_cache_file_reads_as_missing_and_is_rebuilt(
        tmp_path: Path, local_registry: LocalRegistry, slugify_tarball: bytes) -> None:
    local_registry.serve(SLUGIFY, slugify_tarball)
    settings = KitSettings(tmp_path / "cache", local_registry.url)
    fetch_kit(["slugify"], settings=settings)
    cache = KitCache(settings.cache_root)
    good = cache.module_path(SLUGIFY).read_text()
    cache.module_path(SLUGIFY).write_text(good.replace("slugify", "slugifx", 1))
    assert cache.read(SLUGIFY) is None
    assert [cached is None for pin, cached in kit_status(settings) if pin is SLUGIFY] == [True]
    (result,) = fetch_kit(["slugify"], settings=settings)
    assert (result.status, cache.module_path(SLUGIFY).read_text()) == ("fetched", good)


def test_force_rebuilds_a_cached_module(tmp_path: Path, local_registry: LocalRegistry,
                                        slugify_tarball: bytes) -> None:
    local_registry.serve(SLUGIFY, slugify_tarball)
    settings = KitSettings(tmp_path / "cache", local_registry.url)
    fetch_kit(["slugify"], settings=settings)
    assert fetch_kit(["slugify"], settings=settings)[0].status == "cached"
    assert fetch_kit(["slugify"], settings=settings, force=True)[0].status == "fetched"
    assert len(local_registry.requests) == 2


def test_registry_errors_and_oversized_bodies_are_download_failures(
        local_registry: LocalRegistry, slugify_tarball: bytes) -> None:
    url = f"{local_registry.url}slugify/-/slugify-1.6.9.tgz"
    with pytest.raises(KitDownloadFailed) as missing:
        download_tarball(SLUGIFY, local_registry.url)
    assert missing.value.message == (f"Downloading slugify 1.6.9 from {url} failed: HTTP 404 "
                                     "Not Found.")
    local_registry.serve(SLUGIFY, slugify_tarball)
    small = dataclasses.replace(SLUGIFY, max_tarball_bytes=100)
    with pytest.raises(KitDownloadFailed) as large:
        download_tarball(small, local_registry.url)
    assert large.value.message == (f"Downloading slugify 1.6.9 from {url} failed: the "
                                   "response exceeds 100 bytes.")
