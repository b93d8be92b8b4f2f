"""``tavernlab kit fetch|status|list`` (the CLI's rule: refused input -> ``error: <code>:
<message>``, exit 1)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tavernlab.cli import main
from tavernlab.js.kit import KitSettings, kit_key
from tavernlab.js.kit._cache import CACHE_ENV
from tavernlab.js.kit._pins import PINS, PINS_BY_MODULE
from tavernlab.js.kit._registry import REGISTRY_ENV, download_tarball

from .conftest import LocalRegistry

SLUGIFY = PINS_BY_MODULE["@tauritavern/kit/slugify"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``tavernlab kit ARGV`` in this process: status, stdout, stderr."""
    status = main(["kit", *argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache root named by the environment."""
    root = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(root))
    return root


@pytest.fixture
def mirror(local_registry: LocalRegistry, kit_settings: KitSettings,
           monkeypatch: pytest.MonkeyPatch) -> LocalRegistry:
    """A local registry named by the environment, serving the real slugify tarball."""
    local_registry.serve(SLUGIFY, download_tarball(SLUGIFY, kit_settings.registry))
    monkeypatch.setenv(REGISTRY_ENV, local_registry.url)
    return local_registry


def test_fetch_json_on_a_warm_cache(capsys: pytest.CaptureFixture[str],
                                    kit_env: KitSettings) -> None:
    status, out, err = run(capsys, "fetch", "--json")
    assert (status, err) == (0, "")
    document = json.loads(out)
    directory = kit_env.cache_root / kit_key()
    assert document["cacheDir"] == str(directory)
    assert [(m["module"], m["status"], m["path"]) for m in document["modules"]] == [
        (pin.module, "cached", str(directory / f"{pin.name}.js")) for pin in PINS]


def test_fetch_one_module_then_status(capsys: pytest.CaptureFixture[str], fresh: Path,
                                      mirror: LocalRegistry) -> None:
    directory = fresh / kit_key()
    status, out, err = run(capsys, "fetch", "slugify")
    size = (directory / "slugify.js").stat().st_size
    assert (status, err) == (0, "")
    assert out == (f"cache: {directory}\n"
                   f"@tauritavern/kit/slugify           slugify 1.6.9            fetched  "
                   f"{size} bytes\n")
    status, out, _ = run(capsys, "status")
    lines = out.splitlines()
    assert (status, lines[0], len(lines)) == (0, f"cache: {directory}", 7)
    assert lines[1] == "@tauritavern/kit/dayjs             dayjs 1.11.21            missing"
    assert lines[6].endswith(f"cached   {size} bytes")
    _, listed, _ = run(capsys, "list", "--json")
    assert [m["status"] for m in json.loads(listed)["modules"]] == ["missing"] * 5 + ["cached"]


def test_an_unreachable_registry_fails_with_nothing_cached(
        capsys: pytest.CaptureFixture[str], fresh: Path, closed_registry: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REGISTRY_ENV, closed_registry)
    status, _, err = run(capsys, "fetch")
    assert status == 1
    assert err.startswith(f"error: js.kit_download_failed: Downloading dayjs 1.11.21 from "
                          f"{closed_registry}dayjs/-/dayjs-1.11.21.tgz failed: ")
    assert not fresh.exists()


def test_a_tampered_tarball_is_refused(capsys: pytest.CaptureFixture[str], fresh: Path,
                                       mirror: LocalRegistry) -> None:
    path = next(iter(mirror.files))
    mirror.files[path] = mirror.files[path][:-1] + bytes([mirror.files[path][-1] ^ 1])
    status, _, err = run(capsys, "fetch", "slugify", "--json")
    assert status == 1
    assert err.startswith("error: js.kit_integrity_mismatch: The slugify 1.6.9 tarball failed "
                          "its integrity check: expected ")
    assert not fresh.exists()


def test_an_unknown_name_is_refused(capsys: pytest.CaptureFixture[str], fresh: Path) -> None:
    assert run(capsys, "fetch", "lodash") == (1, "", (
        "error: js.kit_unknown_module: `lodash` is not a kit module; the kit has dayjs, "
        "es-toolkit, fast-xml-parser, marked, papaparse, slugify.\n"))


def test_a_terminal_sees_the_download_progress(fresh: Path, mirror: LocalRegistry) -> None:
    leader, follower = pty.openpty()
    try:
        process = subprocess.run(
            [sys.executable, "-m", "tavernlab.cli", "kit", "fetch", "slugify"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=follower, env=dict(os.environ), timeout=60, check=False)
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert process.returncode == 0
    assert b"\rslugify 1.6.9: downloading 100%" in shown
    assert b"slugify 1.6.9: built" in shown
    assert process.stdout.decode().endswith(" bytes\n")
