"""Nothing wedges: hostile inputs that once made a call wait forever, each a named case.

Every case runs the hostile call in a daemon thread (or a child process) joined with a
generous timeout, so a regression fails the test instead of hanging the suite; none of the
assertions is about time, only about what the call returned once it did return.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TypeVar

import pytest

import tavernlab.js.kit._registry as registry_module
from tavernlab.errors import InvalidData
from tavernlab.host import Lab, Run
from tavernlab.js import run_js_command
from tavernlab.js._errors import KitDownloadFailed
from tavernlab.js.kit import KitSettings, kit_key
from tavernlab.js.kit._cache import CACHE_ENV
from tavernlab.js.kit._pins import PINS_BY_MODULE
from tavernlab.js.kit._provider import fetch_module
from tavernlab.js.kit._registry import REGISTRY_ENV
from tavernlab.paths import MAX_PATH_BYTES, MAX_PATH_SEGMENTS, WorkspacePath
from tavernlab.skills._errors import InvalidSkillIndex
from tavernlab.workspace.macros import FrozenContext, FrozenMacros
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.scope._scope import Policy
from tavernlab.workspace.storage import NotRegularFile, WorkspaceFs, read_regular

T = TypeVar("T")

#: How long a hostile call may take before the test calls it wedged (far above any normal
#: run of it, so that the bound never decides a healthy run).
WEDGED_AFTER_S = 120.0

DAYJS = PINS_BY_MODULE["@tauritavern/kit/dayjs"]


def bounded(call: Callable[[], T], timeout: float = WEDGED_AFTER_S) -> T:
    """``call()`` in a daemon thread; fails the test if it has not returned by ``timeout``."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the test thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        pytest.fail(f"{call!r} was still waiting after {timeout} s (wedged)")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


@contextlib.contextmanager
def fifo(path: Path) -> Iterator[Path]:
    """A FIFO at ``path``, removed on the way out; a reader still blocked on it is released
    first (a writer opens and closes it) so that a failing test leaves no thread stuck."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        path.unlink()


# -- a path of a million bytes ------------------------------------------------------------

def test_long_path_is_refused_at_once_and_the_run_goes_on(run: Run) -> None:
    run.call_tool("workspace.write_file", {"path": "scratch/ok.md", "content": "fine"})
    huge = "scratch/" + "/".join(["a"] * 500_000)  # 1 MiB, 500 001 segments
    result = bounded(lambda: run.call_tool("workspace.read_file", {"path": huge}))
    assert (result.error_code, result.content) == (
        "workspace.invalid_path", f"Invalid data: Workspace path exceeds {MAX_PATH_BYTES} bytes")
    after = bounded(lambda: run.call_tool("workspace.read_file", {"path": "scratch/ok.md"}))
    assert after.error_code is None
    assert "fine" in after.content


def test_many_segments_within_the_byte_bound_are_refused(run: Run) -> None:
    deep = "scratch/" + "/".join(["a"] * MAX_PATH_SEGMENTS)
    assert len(deep) <= MAX_PATH_BYTES
    result = bounded(lambda: run.call_tool("workspace.write_file",
                                           {"path": deep, "content": "x"}))
    assert (result.error_code, result.content) == (
        "workspace.invalid_path",
        f"Invalid data: Workspace path exceeds {MAX_PATH_SEGMENTS} segments")
    assert not (run.workspace_dir / "scratch" / "a").exists()


def test_the_deepest_accepted_path_is_written_and_read(run: Run) -> None:
    deep = "/".join(["scratch", *["d"] * (MAX_PATH_SEGMENTS - 2), "f.md"])
    assert len(WorkspacePath.parse(deep).parts) == MAX_PATH_SEGMENTS
    written = bounded(lambda: run.call_tool("workspace.write_file",
                                            {"path": deep, "content": "deep"}))
    assert written.error_code is None
    read = bounded(lambda: run.call_tool("workspace.read_file", {"path": deep}))
    assert read.error_code is None
    assert "deep" in read.content


def test_long_path_through_the_shell_is_refused_and_the_shell_goes_on(run: Run) -> None:
    huge = "/scratch/" + "/".join(["a"] * 50_000)
    result = bounded(lambda: run.call_tool("workspace.shell",
                                           {"command": f"cat {huge}; echo done"}))
    assert result.content.startswith("Exit code: 0\ndone\nstderr:\ncat: /scratch/a/a/")
    again = bounded(lambda: run.call_tool("workspace.shell", {"command": "echo next"}))
    assert "next" in again.content


# -- FIFOs where tavernlab reads ----------------------------------------------------------

def test_fifo_in_the_workspace_is_refused_by_every_reader(run: Run) -> None:
    with fifo(run.workspace_dir / "scratch" / "pipe"):
        read = bounded(lambda: run.call_tool("workspace.read_file", {"path": "scratch/pipe"}))
        assert read.error_code is not None
        assert "workspace supports regular files and directories" in read.content
        search = bounded(lambda: run.call_tool("workspace.search_files",
                                               {"query": "x", "path": "scratch"}))
        assert search.content.endswith("Skipped 1 entry that is not a regular file or "
                                       "directory: scratch/pipe (fifo).")
        shell = bounded(lambda: run.call_tool("workspace.shell",
                                              {"command": "cat /scratch/pipe; echo after"}))
        assert shell.content == ("Exit code: 0\nafter\nstderr:\ncat: /scratch/pipe: "
                                 "workspace supports regular files and directories")
        listed = bounded(lambda: run.call_tool("workspace.list_files", {"path": "scratch"}))
        assert listed.content.endswith("scratch/pipe (fifo).")



def test_fifo_in_a_skill_folder_is_refused_when_read_and_when_installed(
        lab: Lab, tmp_path: Path) -> None:
    source = tmp_path / "sources" / "piped"
    source.mkdir(parents=True)
    (source / "SKILL.md").write_text("---\nname: piped\ndescription: Pipes.\n---\n# piped\n")
    with fifo(source / "references" / "pipe.md"):
        scan = bounded(lambda: lab.skills.validate(source))
        assert [p.message for p in scan.invalid] == [
            "Skill package cannot contain special file: references/pipe.md"]
    lab.skills.install(source)
    installed = lab.skills.package_dir("piped")
    run = lab.start_run(chat_id="alice")
    with fifo(installed / "references" / "planted.md"):
        read = bounded(lambda: run.call_tool(
            "workspace.read_file", {"path": "skills/piped/references/planted.md"}))
        assert read.error_code is not None
        assert "workspace supports regular files and directories" in read.content
        skill = bounded(lambda: run.call_tool("workspace.read_file",
                                              {"path": "skills/piped/SKILL.md"}))
        assert skill.error_code is None


# -- the kit cache ------------------------------------------------------------------------

@pytest.fixture
def closed_registry() -> str:
    """A registry URL on a 127.0.0.1 port that was free a moment ago (connection refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


@pytest.fixture
def planted_cache(kit_settings: KitSettings, tmp_path: Path, closed_registry: str,
                  monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the session's kit cache whose ``dayjs.js`` is a FIFO, named by the
    environment with a registry nothing listens on."""
    root = tmp_path / "kit"
    shutil.copytree(kit_settings.cache_root / kit_key(), root / kit_key())
    module = root / kit_key() / f"{DAYJS.name}.js"
    module.unlink()
    monkeypatch.setenv(CACHE_ENV, str(root))
    monkeypatch.setenv(REGISTRY_ENV, closed_registry)
    with fifo(module):
        yield module


def test_fifo_in_the_kit_cache_fails_the_js_job_instead_of_hanging(
        planted_cache: Path, tmp_path: Path) -> None:
    root = tmp_path / "run"
    for name in ("input", "output", "scratch", "plan", "summaries", "persist"):
        (root / name).mkdir(parents=True)
    scope = ScopedWorkspaceFs(WorkspaceFs(root), Policy.from_profile())
    context = FrozenContext(None, FrozenMacros.from_snapshot(None))
    source = "import dayjs from '@tauritavern/kit/dayjs'; console.log(dayjs('2026-01-01').year());"
    result = bounded(lambda: run_js_command(
        ["-e", source], scope=scope, context=context, cwd="/", stdin=None, command="js",
        token=None, deadline=time.monotonic() + 20))
    assert result.exit_code != 0
    assert "not in the kit cache" in result.stderr
    slugify = bounded(lambda: run_js_command(
        ["-e", "import slugify from '@tauritavern/kit/slugify'; console.log(slugify('a b'))"],
        scope=scope, context=context, cwd="/", stdin=None, command="js", token=None,
        deadline=time.monotonic() + 20))
    assert (slugify.exit_code, slugify.stdout) == (0, "a-b\n")


def test_fifo_in_the_kit_cache_reads_as_missing_in_kit_status(planted_cache: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "tavernlab.cli", "kit", "status"], capture_output=True, text=True,
        timeout=WEDGED_AFTER_S, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert process.returncode == 0, process.stderr
    lines = process.stdout.splitlines()
    assert lines[1] == "@tauritavern/kit/dayjs             dayjs 1.11.21            missing"
    assert all(line.split()[-3] == "cached" for line in lines[2:])


# -- the worktree proxy out of descriptors -----------------------------------------------

#: A child process: start a proxy (no routes), use up every descriptor, wait for a line on
#: stdin (the test has connected a client by then), give the proxy's accept loop a moment to
#: fail on it, free the descriptors, wait again. It prints ``port``, ``full`` and ``freed``.
EXHAUSTED_PROXY = textwrap.dedent("""\
    import os, resource, sys, time
    from tavernlab.worktree._proxy import start_proxy
    from tavernlab.worktree._proxy_table import ProxyTable
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    proxy = start_proxy(table=ProxyTable())
    print(proxy.port, flush=True)
    filler = []
    while True:
        try:
            filler.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            break
    print("full", flush=True)
    sys.stdin.readline()
    time.sleep(0.5)  # lets the accept loop meet EMFILE on the waiting client (no assertion)
    for fd in filler:
        os.close(fd)
    print("freed", flush=True)
    sys.stdin.readline()
    proxy.close()
""")


def _ask(port: int, sock: socket.socket | None = None) -> bytes:
    """One ``GET`` for an unknown host (the proxy answers it itself); the whole reply."""
    with sock or socket.create_connection(("127.0.0.1", port), timeout=WEDGED_AFTER_S) as conn:
        conn.settimeout(WEDGED_AFTER_S)
        conn.sendall(b"GET / HTTP/1.1\r\nHost: nobody.localhost\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
        return data


def test_proxy_accepts_again_after_running_out_of_descriptors() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", EXHAUSTED_PROXY], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert child.stdin is not None and child.stdout is not None
    try:
        port = int(child.stdout.readline())
        assert child.stdout.readline() == "full\n"
        # Connected (the kernel's backlog holds it) while the proxy cannot accept.
        waiting = socket.create_connection(("127.0.0.1", port), timeout=WEDGED_AFTER_S)
        child.stdin.write("free\n")
        child.stdin.flush()
        assert child.stdout.readline() == "freed\n"
        first = bounded(lambda: _ask(port, waiting))
        second = bounded(lambda: _ask(port))
        for reply in (first, second):
            assert reply.startswith(b"HTTP/1.1 502 Bad Gateway\r\n")
            assert b'worktree-proxy: no service for host "nobody.localhost"' in reply
        child.stdin.write("stop\n")
        child.stdin.flush()
        assert child.wait(timeout=WEDGED_AFTER_S) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_fifo_as_the_skill_index_is_refused(lab: Lab, tmp_path: Path) -> None:
    source = tmp_path / "sources" / "plain"
    source.mkdir(parents=True)
    (source / "SKILL.md").write_text("---\nname: plain\ndescription: Plain.\n---\n# plain\n")
    lab.skills.install(source)
    index = lab.root / "_tauritavern" / "skills" / "index" / "skills.json"
    index.unlink()
    with fifo(index):
        with pytest.raises(InvalidSkillIndex) as info:
            bounded(lambda: lab.skills.list())
        assert info.value.message == (f"Failed to read Skill index '{index}': Not a regular "
                                      "file")


@pytest.fixture
def trickling_registry() -> Iterator[str]:
    """A registry on 127.0.0.1 that answers every request with a large body sent one byte
    at a time, until the client goes away."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            with contextlib.suppress(OSError):
                while True:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.01)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_trickling_registry_fails_the_download_instead_of_holding_the_kit(
        trickling_registry: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "DOWNLOAD_DEADLINE", 0.5)
    settings = KitSettings(tmp_path / "kit", trickling_registry)
    with pytest.raises(KitDownloadFailed) as info:
        bounded(lambda: fetch_module(DAYJS, settings))
    assert info.value.message == (
        f"Downloading dayjs 1.11.21 from {trickling_registry}dayjs/-/dayjs-1.11.21.tgz "
        "failed: it took longer than 0.5 seconds.")
    assert not (tmp_path / "kit").exists()


def test_a_js_job_waiting_for_a_slow_kit_download_ends_at_its_deadline(
        trickling_registry: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "DOWNLOAD_DEADLINE", 5.0)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "kit"))
    monkeypatch.setenv(REGISTRY_ENV, trickling_registry)
    root = tmp_path / "run"
    for name in ("input", "output", "scratch", "plan", "summaries", "persist"):
        (root / name).mkdir(parents=True)
    scope = ScopedWorkspaceFs(WorkspaceFs(root), Policy.from_profile())
    context = FrozenContext(None, FrozenMacros.from_snapshot(None))
    result = bounded(lambda: run_js_command(
        ["-e", "import dayjs from '@tauritavern/kit/dayjs'; console.log(1)"], scope=scope,
        context=context, cwd="/", stdin=None, command="js", token=None,
        deadline=time.monotonic() + 0.5))
    assert (result.exit_code, result.timed_out, result.stdout) == (1, True, "")


def test_a_file_swapped_for_a_fifo_after_it_was_looked_at_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "run"
    (root / "scratch").mkdir(parents=True)
    (root / "scratch" / "a.txt").write_text("before")
    fs = WorkspaceFs(root)
    path = WorkspacePath.parse("scratch/a.txt")
    with fs.lease():  # what was looked at stays remembered for the whole lease
        assert fs.read_file(path, None) == b"before"
        (root / "scratch" / "a.txt").unlink()  # behind the lock's back
        with fifo(root / "scratch" / "a.txt"):
            with pytest.raises(InvalidData) as info:
                bounded(lambda: fs.read_file(path, None))
            assert info.value.message == "workspace supports regular files and directories"
            with pytest.raises(InvalidData):
                bounded(lambda: fs.digest(path))
    with pytest.raises(NotRegularFile), fifo(tmp_path / "plain-pipe"):
        bounded(lambda: read_regular(tmp_path / "plain-pipe"))


# --- a lock another process keeps --------------------------------------------------------

HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()  # until the test lets go (or the pipe closes)
"""


def test_a_lock_a_stopped_process_keeps_is_waited_for_a_bounded_time(
        lab: Lab, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    from tavernlab.errors import LockTimeout
    from tavernlab.locks import LOCK_WAIT_ENV
    from tavernlab.workspace.storage._fs import LOCK_FILE_NAME

    monkeypatch.setenv(LOCK_WAIT_ENV, "0.5")
    lock = run.workspace_dir / LOCK_FILE_NAME
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(LockTimeout) as caught:
            bounded(lambda: run.call_tool("workspace.write_file",
                                          {"path": "output/a.md", "content": "a"}))
        assert caught.value.code == "workspace.lock_timeout"
        assert str(caught.value) == (
            f"gave up waiting for the lock `{lock}` after 0.5 s: another process holds it "
            "(a stopped or hung tavernlab process, or a very long call)")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(30)
        if holder.stdout is not None:
            holder.stdout.close()
    # nothing waits any more: the call that could not record itself failed its run (a host
    # fault, recorded), the run reads, and the next run of the lab works
    assert run.status == "failed"
    assert [e.type for e in run.events()][-1] == "run_failed"
    later = lab.start_run(chat_id="after")
    assert not later.call_tool("workspace.write_file",
                               {"path": "output/b.md", "content": "b"}).is_error
    assert later.read("output/b.md") == "b"
