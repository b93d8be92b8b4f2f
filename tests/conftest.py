"""Shared fixtures: a fresh lab, a foreground Chat run in it, a shell-like writer and a
directory outside the lab (all under ``tmp_path``), and the session-wide check that the suite
leaves no process behind.

The rule of :func:`no_leftover_processes`: when the session ends, every process that
descends from the test process (the pytest process, or one pytest-xdist worker — each worker
checks its own descendants, so the workers themselves and their siblings are never looked
at) must be gone, except the worker processes of the JavaScript pool that lives for the
session (``tavernlab.js.default_pool().worker_pids()``: the pool owns them and closes
them at exit) and multiprocessing's resource tracker (started by the first process pool or
dask cluster of the session; it exits with the interpreter). Zombies count as gone. So that
a process that escaped its parent (a double-forked or orphaned grandchild) is still seen,
the test process makes itself the *child subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``):
orphans are re-parented to it instead of to init. Stragglers get up to 15 s to finish (a
detached trash drainer, a service in its stop grace); whatever still runs then is listed,
killed and fails the run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from process_tree import PROC, command_line, live_descendants, session_owned

from tavernlab.host import Lab, Run
from tavernlab.js.kit import KitSettings, fetch_kit
from tavernlab.js.kit._cache import CACHE_ENV
from tavernlab.js.kit._registry import REGISTRY_ENV, registry_url
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage._fs import WriteGuard


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    """An empty lab in the test's temporary directory."""
    return Lab(tmp_path / "lab")


@pytest.fixture
def run(lab: Lab) -> Run:
    """A foreground Chat run for the character chat ``alice`` with the default Profile."""
    return lab.start_run(chat_id="alice")


def _shell_write(run: Run, path: str, text: str = "x") -> None:
    run.internals.scope.write_text(WorkspacePath.parse(path), text, WriteGuard.unchecked())


@pytest.fixture
def put() -> Callable[[Run, str, str], None]:
    """``put(run, path, text)`` changes a file behind the model's back, exactly as the shell
    does: through the run's scoped view, unchecked, creating parents, with no read record
    (the auto-commit tracker does see it)."""
    return _shell_write


@pytest.fixture(scope="session")
def kit_settings(tmp_path_factory: pytest.TempPathFactory) -> KitSettings:
    """The session's kit cache, filled from the real registry."""
    reuse = os.environ.get(CACHE_ENV, "").strip()
    root = Path(reuse) if reuse else tmp_path_factory.mktemp("kit-cache")
    settings = KitSettings(root, registry_url())
    fetch_kit(settings=settings)
    return settings


@pytest.fixture
def kit_env(kit_settings: KitSettings, monkeypatch: pytest.MonkeyPatch) -> KitSettings:
    """The environment names the session's kit cache (and the real registry)."""
    monkeypatch.setenv(CACHE_ENV, str(kit_settings.cache_root))
    monkeypatch.setenv(REGISTRY_ENV, kit_settings.registry)
    return kit_settings


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the lab holding ``secret.md`` (``alpha secret``), for symlinks
    planted inside a workspace."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.md").write_text("alpha secret")
    return directory


# -- the suite leaves no process behind ----------------------------------------------------

PR_SET_CHILD_SUBREAPER = 36
LEFTOVER_GRACE_SECONDS = 15.0


def _become_subreaper() -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _leftovers(root: int) -> list[int]:
    """Live (non-zombie) descendants of ``root`` that the session does not own."""
    owned = session_owned()
    return [pid for pid in live_descendants(root) if pid not in owned]


@pytest.fixture(scope="session", autouse=True)
def no_leftover_processes() -> Iterator[None]:
    """Fail the run if a process started by the suite survives it (see the module doc)."""
    if not PROC.is_dir():
        yield
        return
    _become_subreaper()
    yield
    me = os.getpid()
    deadline = time.monotonic() + LEFTOVER_GRACE_SECONDS
    while (survivors := _leftovers(me)) and time.monotonic() < deadline:
        time.sleep(0.1)
    if not survivors:
        return
    report = "\n".join(f"  {pid}: {command_line(pid)}" for pid in survivors)
    for pid in survivors:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    pytest.fail(f"{len(survivors)} process(es) started by the test suite survived it:\n"
                f"{report}", pytrace=False)
