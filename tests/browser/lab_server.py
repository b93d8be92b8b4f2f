"""A throw-away JupyterLab on 127.0.0.1 for the browser tests, and the page helpers.

:class:`JupyterLabServer` starts ``python -m jupyterlab`` on an OS-chosen port with a token,
``--expose-app-in-browser`` (so tests drive ``window.jupyterapp``), every per-user directory
in a temporary folder (no state leaks in or out), autosave off and every cell kept in the DOM;
the server dies with the thread that started it (``PR_SET_PDEATHSIG``) even if the test run is
killed. :meth:`JupyterLabServer.stop` asks the server to shut down (which shuts its kernels
down), then SIGTERMs, then kills its process group.

:func:`kernel_spec_path` serves the repository's own ``kernel-spec/tavernlab`` (the kernel
loads the tavernlab extension, whose widgets plugin makes ``run.show()`` work in every
notebook).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import IO, Any

KERNEL_NAME = "tavernlab"
CHROMIUM = "/usr/bin/chromium"
#: Playwright adds --headless and --no-sandbox itself; the resolver rule is the one flag that
#: stops Chromium's own DNS lookups in a closed network (IP literals must be excluded).
CHROMIUM_ARGS = ["--disable-gpu", "--disable-quic", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update",
                 "--no-first-run",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost, "
                 "EXCLUDE *.localhost"]
USER_SETTINGS = {
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false",
                                                    "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}
#: The repository's kernel spec (what ``pip install`` ships as the tavernlab kernel).
KERNEL_SPEC = Path(__file__).resolve().parents[2] / "kernel-spec" / KERNEL_NAME


def kernel_spec_path(parent: Path) -> Path:
    """Copy the repository's ``kernel-spec/tavernlab`` to ``parent/kernels/tavernlab`` with
    ``argv[0]`` pinned to this Python (what ``tavernlab kernel install`` does); returns
    ``parent`` (what ``JUPYTER_PATH`` points at)."""
    spec = parent / "kernels" / KERNEL_NAME
    shutil.copytree(KERNEL_SPEC, spec)
    document = json.loads((spec / "kernel.json").read_text())
    document["argv"][0] = sys.executable
    (spec / "kernel.json").write_text(json.dumps(document, indent=2))
    return parent


def _die_with_parent() -> None:
    """``preexec_fn``: SIGTERM the server when the thread that started it exits."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class JupyterLabServer:
    """One JupyterLab server serving ``root_dir``."""

    def __init__(self, root_dir: Path, *, jupyter_path: Path, env: dict[str, str]) -> None:
        self.root_dir = root_dir
        self.jupyter_path = jupyter_path
        self.env = env
        self.token = secrets.token_hex(16)
        self.tmp = Path(tempfile.mkdtemp(prefix="tavernlab-jlab-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.log: IO[str] | None = None

    def start(self, timeout: float = 90.0) -> JupyterLabServer:
        """Start the server and wait until its API answers."""
        for key, value in USER_SETTINGS.items():
            path = self.tmp / "user-settings" / f"{key}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        env = {**os.environ, **self.env, "JUPYTER_PATH": str(self.jupyter_path),
               "JUPYTER_RUNTIME_DIR": str(self.tmp / "runtime"),
               "JUPYTER_CONFIG_DIR": str(self.tmp / "config"),
               "JUPYTER_DATA_DIR": str(self.tmp / "data"), "JUPYTER_PLATFORM_DIRS": "1"}
        env.pop("JUPYTER_TOKEN", None)
        command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
                   "--port=0", "--ServerApp.port_retries=0",
                   f"--IdentityProvider.token={self.token}",
                   f"--ServerApp.root_dir={self.root_dir}", "--expose-app-in-browser",
                   f"--LabApp.user_settings_dir={self.tmp / 'user-settings'}",
                   f"--LabApp.workspaces_dir={self.tmp / 'workspaces'}",
                   "--LabApp.news_url=None", "--LabApp.extension_manager=readonly",
                   "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                   "--ServerApp.terminals_enabled=False",
                   *(["--allow-root"] if os.geteuid() == 0 else [])]
        self.log = open(self.tmp / "server.log", "w")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(command, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, cwd=self.root_dir,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited {self.proc.returncode}:\n{self.tail()}")
            if self._ready():
                return self
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"jupyter lab did not become ready:\n{self.tail()}")

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.port is None:
            info = self.tmp / "runtime" / f"jpserver-{self.proc.pid}.json"
            with contextlib.suppress(OSError, ValueError, KeyError):
                self.port = int(json.loads(info.read_text())["port"])
        if self.port is None:
            return False
        try:
            with urllib.request.urlopen(self.api("api/status"), timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def tail(self, chars: int = 3000) -> str:
        """The end of the server's log."""
        if self.log is not None and not self.log.closed:
            self.log.flush()
        path = self.tmp / "server.log"
        return path.read_text()[-chars:] if path.exists() else ""

    def url(self, path: str) -> str:
        """A browser URL (``&reset``: start from an empty workspace layout)."""
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}&reset"

    def api(self, path: str) -> str:
        """A REST URL with the token."""
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    def stop(self, timeout: float = 20.0) -> str:
        """Shut down: ``/api/shutdown``, then SIGTERM, then SIGKILL; returns which did it."""
        how = "already exited"
        if self.proc is not None and self.proc.poll() is None:
            how = "api/shutdown"
            try:
                request = urllib.request.Request(self.api("api/shutdown"), method="POST",
                                                 data=b"")
                urllib.request.urlopen(request, timeout=5).close()
                self.proc.wait(timeout)
            except (OSError, subprocess.TimeoutExpired):
                how = "SIGTERM"
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    how = "SIGKILL"
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
        if self.log is not None:
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return how


# -- JavaScript run in the page (JupyterLab 4 with --expose-app-in-browser) -----------------

JS_KERNEL_READY = """async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  await panel.context.ready;
  await panel.sessionContext.ready;
  return panel.sessionContext.session.kernel.name;
}"""

JS_KERNEL_IDLE = """() => {
  const kernel = window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel;
  return !!kernel && kernel.status === 'idle' && kernel.connectionStatus === 'connected';
}"""

#: Start running cell ``i`` without awaiting it (an awaited evaluate has no timeout);
#: ``window.__ran[i]`` turns true when the run resolves.
JS_START_CELL = """(i) => {
  const panel = window.jupyterapp.shell.currentWidget;
  panel.content.activeCellIndex = i;
  window.__ran = window.__ran || {};
  window.__ran[i] = false;
  window.jupyterapp.commands.execute('notebook:run-cell').then(() => { window.__ran[i] = true; });
}"""

JS_CELL_OUTPUT = """(i) => {
  const cell = window.jupyterapp.shell.currentWidget.content.widgets[i];
  const area = cell.node.querySelector('.jp-OutputArea');
  return area ? area.innerText : '';
}"""


def write_notebook(path: Path, cells: list[str]) -> None:
    """A notebook of code cells for the tavernlab kernel."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    notebook = new_notebook(cells=[new_code_cell(source) for source in cells])
    notebook.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "tavernlab",
                                       "language": "python"}
    nbformat.write(notebook, path)


class NotebookPage:
    """A Playwright page with one notebook open on its kernel."""

    def __init__(self, page: Any, server: JupyterLabServer, shots: Path) -> None:
        self.page = page
        self.server = server
        self.shots = shots

    def open(self, name: str) -> str:
        """Open ``name`` and wait until its kernel is idle; returns the kernel's name."""
        self.page.goto(self.server.url(f"lab/tree/{name}"))
        self.page.wait_for_function(
            "() => window.jupyterapp?.shell?.currentWidget?.sessionContext", timeout=90_000)
        kernel = str(self.page.evaluate(JS_KERNEL_READY))
        self.page.wait_for_function(JS_KERNEL_IDLE, timeout=90_000)
        return kernel

    def start_cell(self, index: int) -> None:
        """Start running a cell (returns at once)."""
        self.page.evaluate(JS_START_CELL, index)

    def wait_cell(self, index: int, timeout: float = 90_000) -> str:
        """Wait until a started cell has run; returns its output text."""
        self.page.wait_for_function(f"() => window.__ran && window.__ran[{index}] === true",
                                    timeout=timeout)
        return self.output(index)

    def run_cell(self, index: int, timeout: float = 90_000) -> str:
        """Run a cell and return its output text."""
        self.start_cell(index)
        return self.wait_cell(index, timeout)

    def output(self, index: int) -> str:
        """A cell's output text as shown."""
        return str(self.page.evaluate(JS_CELL_OUTPUT, index))

    def shot(self, name: str, selector: str | None = None) -> Path:
        """Save a screenshot (of the page, or of one element) and print its path."""
        path = self.shots / f"{name}.png"
        if selector is None:
            self.page.screenshot(path=str(path), full_page=True)
        else:
            self.page.locator(selector).first.screenshot(path=str(path))
        print(f"screenshot: {path}")
        return path

    def shutdown_kernel(self) -> None:
        """Shut this notebook's kernel down (the server would at exit anyway)."""
        self.page.evaluate(
            "() => window.jupyterapp?.shell?.currentWidget?.sessionContext?.shutdown()")
