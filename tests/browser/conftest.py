"""Browser tests: one JupyterLab server per session on 127.0.0.1 with the tavernlab kernel,
driven by Playwright through Debian's headless Chromium (``/usr/bin/chromium``; never
``playwright install``).

Without Chromium (or without the test extra's jupyterlab and playwright) every test here is
skipped with a reason naming the install command; ``.ci/run`` installs both, so CI runs them.
The kernel is the repository's own ``kernel-spec/tavernlab``. The server and its kernels
stop at the end of the session, the Playwright driver and Chromium at the end of each test
(the suite's leftover check in ``tests/conftest.py`` fails the run otherwise).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_server import (
    CHROMIUM,
    CHROMIUM_ARGS,
    JupyterLabServer,
    NotebookPage,
    kernel_spec_path,
)

INSTALL_CHROMIUM = "apt-get install -y --no-install-recommends chromium fonts-dejavu-core"


def _missing() -> str | None:
    if not os.access(CHROMIUM, os.X_OK):
        return f"Chromium is not installed at {CHROMIUM}: run `{INSTALL_CHROMIUM}` (.ci/run does)"
    for module in ("jupyterlab", "playwright"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed: run `pip install -e '.[test]'`"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the browser tests, with the reason, when their tools are missing."""
    reason = _missing()
    if reason is None:
        return
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def lab_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's root directory (notebooks are written here)."""
    return tmp_path_factory.mktemp("lab-root")


@pytest.fixture(scope="session")
def kernel_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What the server and its kernels see: a private HOME and a git identity."""
    home = tmp_path_factory.mktemp("home")
    env = {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    for role in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{role}_NAME"] = "Tavern Lab"
        env[f"GIT_{role}_EMAIL"] = "lab@example.invalid"
    return env


@pytest.fixture(scope="session")
def jlab(lab_root: Path, kernel_env: dict[str, str],
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLabServer]:
    """The session's JupyterLab server."""
    specs = kernel_spec_path(tmp_path_factory.mktemp("jupyter-path"))
    server = JupyterLabServer(lab_root, jupyter_path=specs, env=kernel_env).start()
    yield server
    how = server.stop()
    assert how == "api/shutdown", how


@pytest.fixture
def notebook(jlab: JupyterLabServer, tmp_path: Path) -> Iterator[NotebookPage]:
    """Headless Debian Chromium through Playwright with one page (1440 x 1000) for one
    notebook; console errors fail the test.

    Playwright lives only as long as the test: its sync API keeps an asyncio loop running
    in this thread, which would make every later ``asyncio.run`` of the session fail.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = chromium.new_context(viewport={"width": 1440, "height": 1000}).new_page()
        page.set_default_timeout(30_000)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        shots = tmp_path / "screenshots"
        shots.mkdir()
        opened = NotebookPage(page, jlab, shots)
        yield opened
        opened.shutdown_kernel()
        chromium.close()
    assert errors == [], errors
