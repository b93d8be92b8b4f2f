"""The pins: the spec's versions, the registry's URLs, a cache key that follows them, and
where the environment puts the registry and the cache."""

from __future__ import annotations

import base64
import dataclasses
from pathlib import Path

import pytest

from tavernlab.js.kit import KIT_MODULES, kit_key
from tavernlab.js.kit._cache import cache_root
from tavernlab.js.kit._pins import DEFAULT_REGISTRY, PINS, PINS_BY_MODULE
from tavernlab.js.kit._registry import registry_url


def test_the_six_libraries_at_the_spec_versions() -> None:
    assert [(pin.module, pin.package, pin.version) for pin in PINS] == [
        ("@tauritavern/kit/dayjs", "dayjs", "1.11.21"),
        ("@tauritavern/kit/es-toolkit", "es-toolkit", "1.50.0"),
        ("@tauritavern/kit/fast-xml-parser", "fast-xml-parser", "5.10.1"),
        ("@tauritavern/kit/marked", "marked", "18.0.9"),
        ("@tauritavern/kit/papaparse", "papaparse", "5.6.0"),
        ("@tauritavern/kit/slugify", "slugify", "1.6.9"),
    ]
    assert tuple(pin.module for pin in PINS) == KIT_MODULES


def test_tarballs_and_integrities_have_the_registry_shape() -> None:
    for pin in PINS:
        assert pin.tarball == (f"{DEFAULT_REGISTRY}{pin.package}/-/{pin.package}-"
                               f"{pin.version}.tgz")
        assert pin.integrity.startswith("sha512-")
        assert len(base64.b64decode(pin.integrity.removeprefix("sha512-"))) == 64


def test_names_are_exact() -> None:
    assert PINS_BY_MODULE.get("@tauritavern/kit/marked") is PINS[3]
    for other in ("@tauritavern/kit/marked/lib.js", "@tauritavern/Kit/marked", "marked",
                  "@tauritavern/kit/lodash"):
        assert PINS_BY_MODULE.get(other) is None


def test_a_mirror_serves_the_same_path() -> None:
    assert PINS[5].tarball_url("http://127.0.0.1:8080/npm") == (
        "http://127.0.0.1:8080/npm/slugify/-/slugify-1.6.9.tgz")
    assert PINS[5].tarball_url(DEFAULT_REGISTRY) == PINS[5].tarball


def test_the_cache_key_changes_with_any_pin() -> None:
    key = kit_key()
    assert key.startswith("1-") and len(key) == 18
    assert kit_key() == key
    bumped = (*PINS[:5], dataclasses.replace(PINS[5], version="1.6.10"))
    assert kit_key(bumped) != key


def test_registry_from_the_environment() -> None:
    assert registry_url({}) == DEFAULT_REGISTRY
    assert registry_url({"npm_config_registry": "http://a/"}) == "http://a/"
    assert registry_url({"NPM_CONFIG_REGISTRY": "http://b/"}) == "http://b/"
    assert registry_url({"TAVERNLAB_NPM_REGISTRY": "http://c/",
                         "npm_config_registry": "http://a/"}) == "http://c/"


def test_cache_root_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_root({}) == tmp_path / ".cache/tavernlab/kit"
    assert cache_root({"XDG_CACHE_HOME": "/var/cache/u"}) == Path("/var/cache/u/tavernlab/kit")
    assert cache_root({"XDG_CACHE_HOME": "relative"}) == tmp_path / ".cache/tavernlab/kit"
    assert cache_root({"TAVERNLAB_KIT_CACHE": "/srv/kit", "XDG_CACHE_HOME": "/x"}) == Path(
        "/srv/kit")
