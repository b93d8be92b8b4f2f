"""Processes never outlive their owner: services die with their whole process
group, stop is bounded, cleanup stops services first, and services are stopped when the
Python process that started them exits — a plain interpreter and a real Jupyter kernel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from jupyter_client.manager import KernelManager

from tavernlab.cancel import CancelToken
from tavernlab.worktree import call_tool
from tavernlab.worktree._process import group_members, pid_alive, run_shell
from tavernlab.worktree._services import ServiceRegistry, default_registry

from .conftest import Repo
from .netclient import wait_listening
from .test_scheduler_git import wait_until

ECHO = Path(__file__).with_name("echo_service.py")


def gone(pid: int) -> None:
    """Wait (bounded) until ``pid`` no longer runs: a killed process may still be finishing
    its exit for a moment after its pipes closed."""
    wait_until(lambda: not pid_alive(pid), f"process {pid} gone")


def read_pid(path: Path) -> int:
    wait_until(lambda: path.exists() and path.read_text().strip() != "", f"{path.name}")
    return int(path.read_text())


def service_config(repo: Repo, command: str) -> dict[str, str]:
    repo.commit_config({"scripts": {"web": {"command": command, "type": "service"}}})
    return {"repoRoot": repo.root, "worktreePath": repo.root, "branch": "main"}


def test_stop_kills_the_server_and_its_children(repo: Repo, tmp_path: Path) -> None:
    grandchild = tmp_path / "grandchild.pid"
    target = service_config(repo, f"sleep 300 & echo $! > {grandchild}; "
                                  f"exec {sys.executable} {ECHO}")
    status = call_tool("worktree.start-service", {**target, "script": "web"})
    wait_listening(status["port"])
    sleeper = read_pid(grandchild)
    assert call_tool("worktree.stop-service", {"worktreePath": repo.root, "script": "web"}) \
        == {"stopped": True}
    gone(sleeper)
    gone(status["pid"])
    assert group_members(status["pid"]) == []
    with __import__("socket").socket() as probe:  # the port is free again
        probe.bind(("127.0.0.1", status["port"]))
    stopped = default_registry().get(repo.root).status("web")  # type: ignore[union-attr]
    assert (stopped["exitCode"], stopped["signal"]) == (None, "SIGTERM")


def test_stop_is_bounded_when_everything_ignores_sigterm(repo: Repo, tmp_path: Path) -> None:
    grandchild = tmp_path / "stubborn.pid"
    target = service_config(repo, f"trap '' TERM; sleep 300 & echo $! > {grandchild}; "
                                  "while :; do wait; done")
    status = call_tool("worktree.start-service", {**target, "script": "web"})
    sleeper = read_pid(grandchild)
    assert call_tool("worktree.stop-service", {"worktreePath": repo.root, "script": "web"}) \
        == {"stopped": True}  # returns after the 5 s grace, not never
    gone(sleeper)
    gone(status["pid"])
    stopped = default_registry().get(repo.root).status("web")  # type: ignore[union-attr]
    assert (stopped["status"], stopped["exitCode"], stopped["signal"]) == (
        "exited", None, "SIGKILL")


def test_a_signal_death_reports_null_exit_code_and_the_signal(repo: Repo) -> None:
    target = service_config(repo, "exec sleep 300")
    status = call_tool("worktree.start-service", {**target, "script": "web"})
    os.kill(status["pid"], signal.SIGKILL)
    supervisor = default_registry().get(repo.root)
    assert supervisor is not None
    wait_until(lambda: supervisor.status("web")["status"] == "exited", "exit recorded")
    assert {k: supervisor.status("web")[k] for k in ("exitCode", "signal", "pid")} == {
        "exitCode": None, "signal": "SIGKILL", "pid": status["pid"]}


def test_leftovers_of_an_exited_shell_are_killed_by_stop(repo: Repo, tmp_path: Path) -> None:
    orphan = tmp_path / "orphan.pid"
    target = service_config(repo, f"sleep 300 & echo $! > {orphan}; exit 0")
    call_tool("worktree.start-service", {**target, "script": "web"})
    sleeper = read_pid(orphan)
    supervisor = default_registry().get(repo.root)
    assert supervisor is not None
    wait_until(lambda: supervisor.status("web")["status"] == "exited", "shell exited")
    assert pid_alive(sleeper)
    assert call_tool("worktree.stop-service", {"worktreePath": repo.root, "script": "web"}) \
        == {"stopped": False}  # it was not running, as upstream says, but nothing survives
    gone(sleeper)


def test_cleanup_stops_service_groups_before_removing(repo: Repo, tmp_path: Path) -> None:
    grandchild = tmp_path / "in-worktree.pid"
    repo.commit_config({"scripts": {"web": {
        "command": f"sleep 300 & echo $! > {grandchild}; wait", "type": "service"}}})
    cwd = call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "svc-clean"})["cwd"]
    status = call_tool("worktree.start-service", {
        "repoRoot": repo.root, "worktreePath": cwd, "branch": "wt/svc-clean", "script": "web"})
    sleeper = read_pid(grandchild)
    assert call_tool("worktree.cleanup", {"repoRoot": repo.root, "cwd": cwd}) == {
        "removed": True}
    gone(sleeper)
    gone(status["pid"])
    assert not Path(cwd).exists()


def test_cancel_timer_stays_armed_after_the_leader_exits(tmp_path: Path) -> None:
    pidfile = tmp_path / "survivor.pid"
    token = CancelToken()
    watcher = threading.Thread(target=lambda: (read_pid(pidfile), token.cancel()))
    watcher.start()
    result = run_shell(f"(trap '' TERM; exec sleep 300) & echo $! > {pidfile}; wait",
                       cwd=tmp_path, signal=token)
    watcher.join()
    assert result.exit_code == -1  # the shell died of SIGTERM at once
    gone(int(pidfile.read_text()))  # the stubborn child got SIGKILL


def test_registry_close_stops_only_its_own_services(repo: Repo, tmp_path: Path) -> None:
    service_config(repo, "exec sleep 300")
    mine, other = ServiceRegistry(), ServiceRegistry()
    first = mine.start(mine.get_or_create(repo.root, repo.root, "main"), "web")
    second = other.start(other.get_or_create(repo.root, str(tmp_path), "main"), "web")
    mine.close()
    gone(first["pid"])
    assert pid_alive(second["pid"])
    assert mine.get(repo.root) is None
    other.close()
    gone(second["pid"])


CHILD = """
import json, pathlib, sys, time
from tavernlab.worktree import call_tool
status = call_tool("worktree.start-service", json.loads(sys.argv[1]))
pidfile = pathlib.Path(sys.argv[2])
while not pidfile.exists() or not pidfile.read_text().strip():
    time.sleep(0.01)
print(status["pid"], flush=True)
"""


def test_services_stop_when_the_starting_interpreter_exits(repo: Repo, tmp_path: Path) -> None:
    grandchild = tmp_path / "exit-hook.pid"
    target = service_config(repo, f"sleep 300 & echo $! > {grandchild}; wait")
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps({**target, "script": "web"}),
                           str(grandchild)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    leader = int(done.stdout)
    assert done.stderr == ""  # the exit hook ran cleanly
    gone(leader)
    gone(read_pid(grandchild))


def test_services_stop_when_the_kernel_is_shut_down(repo: Repo, tmp_path: Path) -> None:
    grandchild = tmp_path / "kernel.pid"
    target = service_config(repo, f"sleep 300 & echo $! > {grandchild}; wait")
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env=dict(os.environ))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        code = textwrap.dedent(f"""
            from tavernlab.worktree import call_tool
            status = call_tool("worktree.start-service", {dict(target, script="web")!r})
            print(status["pid"])
        """)
        reply = client.execute_interactive(code, timeout=60, output_hook=_collect)
        assert reply["content"]["status"] == "ok"
        leader = int(_OUTPUT.pop())
        sleeper = read_pid(grandchild)
        assert pid_alive(leader) and pid_alive(sleeper)
    finally:
        client.stop_channels()
        manager.shutdown_kernel()
    gone(leader)
    gone(sleeper)


_OUTPUT: list[str] = []


def _collect(message: dict[str, object]) -> None:
    content = message.get("content")
    if message.get("msg_type") == "stream" and isinstance(content, dict):
        _OUTPUT.append(str(content.get("text", "")).strip())
