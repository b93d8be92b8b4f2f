"""Fixtures for the notebook surface: IPython's testing shell with the extension loaded, and
the tavernlab kernel started from ``kernel-spec/`` through ``JUPYTER_PATH``.

In-process tests run cells in ``IPython.testing.globalipapp``'s shell (one per test process);
each test gets the extension freshly loaded, its working directory (so the default lab
``./.tavernlab``) in ``tmp_path``, and the extension unloaded afterwards. Real-kernel tests
share one kernel per module and shut it down at the end.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.terminal.interactiveshell import TerminalInteractiveShell
from IPython.testing.globalipapp import start_ipython
from notebook_support import KERNEL_SPEC, Kernel, Notebook, start_kernel, stop_kernel

import tavernlab


@pytest.fixture(scope="session")
def ipshell() -> TerminalInteractiveShell:
    """IPython's testing shell (one per test process)."""
    start_ipython()
    return TerminalInteractiveShell.instance()


@pytest.fixture
def nb(ipshell: TerminalInteractiveShell, tmp_path: Path,
       monkeypatch: pytest.MonkeyPatch) -> Iterator[Notebook]:
    """The testing shell with the extension loaded, working in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    tavernlab.load_ipython_extension(ipshell)
    try:
        yield Notebook(ipshell)
    finally:
        tavernlab.unload_ipython_extension(ipshell)
        ipshell.config.pop("TavernMagics", None)  # %config in a test stays in that test


# -- the real kernel -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def jupyter_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A Jupyter data directory holding ``kernels/tavernlab`` copied from ``kernel-spec/``,
    put first on ``JUPYTER_PATH`` for the session."""
    root = tmp_path_factory.mktemp("jupyter-path")
    shutil.copytree(KERNEL_SPEC, root / "kernels" / "tavernlab")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", os.pathsep.join(
            [str(root), *filter(None, [os.environ.get("JUPYTER_PATH")])]))
        yield root


@pytest.fixture(scope="module")
def kernel(jupyter_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    """One tavernlab kernel for the module, working in a fresh directory."""
    started = start_kernel(tmp_path_factory.mktemp("kernel-cwd"),
                           home=tmp_path_factory.mktemp("kernel-home"))
    try:
        yield started
    finally:
        stop_kernel(started)
