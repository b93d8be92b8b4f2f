"""The worktree section of ``tavernlab demo``: an agent's worktree from start to finish.

It builds a throwaway repository with a bare ``origin`` (so the default ``origin/main`` base
exists) and a committed ``agentproto.json``, then provisions a worktree with a live progress
display, runs a gate, serves a service behind the ``*.localhost`` proxy and answers one HTTP
request through it, shows status and listings, and cleans everything up. Offline, no
configuration, a few seconds.
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import TextIO

from tavernlab.views import describe_event
from tavernlab.worktree import (
    ProgressEvent,
    ProvisionContext,
    call_tool,
    list_worktree_statuses,
    list_worktrees,
    run_with_provision_context,
    start_proxy,
)

#: Identity for the demo's own commits, so a machine without a git config works.
_IDENTITY = ["-c", "user.name=tavernlab demo", "-c", "user.email=demo@tavernlab.invalid",
             "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *_IDENTITY, *args], cwd=cwd, check=True, capture_output=True)


def make_repository(base: Path) -> Path:
    """A throwaway repository `shop` in ``base`` with a bare `origin` (so the default
    `origin/main` base exists) and a committed `agentproto.json` (a setup and a teardown hook,
    a `web` service on `$AGENTPROTO_PORT`, a `test` script); returns its path. The demo and
    the worktree notebook both start from it."""
    origin, repo = base / "origin.git", base / "shop"
    _git(base, "init", "-q", "--bare", "-b", "main", str(origin))
    _git(base, "init", "-q", "-b", "main", str(repo))
    (repo / "README.md").write_text("# shop\n")
    (repo / ".gitignore").write_text("node_modules/\n.agentproto/\nsetup-ran.txt\n")
    config = {
        "worktree": {
            "setup": 'echo "set up for $AGENTPROTO_BRANCH_NAME" > setup-ran.txt',
            "teardown": 'echo "tore down $AGENTPROTO_BRANCH_NAME"',
        },
        "scripts": {
            # ``python3`` from PATH, not this interpreter's path: the committed config (and so
            # the commit ids a notebook shows) must not depend on where the venv lives.
            "web": {"command": "exec python3 -m http.server $AGENTPROTO_PORT "
                               "--bind 127.0.0.1 >/dev/null 2>&1", "type": "service"},
            "test": {"command": "test -f setup-ran.txt"},
        },
    }
    (repo / "agentproto.json").write_text(json.dumps(config, indent=2) + "\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "shop: initial commit with agentproto.json")
    _git(repo, "remote", "add", "origin", str(origin))
    _git(repo, "push", "-q", "-u", "origin", "main")
    return repo


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _remove_previous(base: Path) -> None:
    """Delete the previous play's directory. Its worktrees' ``.trash`` drainer (docs/worktrees.md,
    detached on purpose) may still be deleting entries under it, so an entry vanishing
    mid-walk is expected: try again a few times, then let a real error through."""
    for _ in range(20):
        if not base.exists():
            return
        shutil.rmtree(base, ignore_errors=True)
        time.sleep(0.05)
    shutil.rmtree(base)


def run(root: Path, out: TextIO) -> None:
    """Play the worktree section in ``root/worktree`` (recreated on every run)."""
    base = root / "worktree"
    _remove_previous(base)
    base.mkdir(parents=True)
    print("\n== Worktrees for agents ==", file=out)
    repo = make_repository(base)
    print(f"repository {repo} with a bare origin and a committed agentproto.json", file=out)

    started = time.monotonic()

    def progress(event: ProgressEvent) -> None:
        line = describe_event(event)
        print(f"  [{time.monotonic() - started:5.2f}s] {line}", file=out)

    print("provision slug 'add-search' (depsCmd + setup hook):", file=out)
    result = run_with_provision_context(
        ProvisionContext(caller_key="demo", on_progress=progress),
        lambda: call_tool("worktree.provision", {
            "repoRoot": str(repo), "slug": "add-search",
            "depsCmd": "echo installing dependencies"}))
    cwd, branch = result["cwd"], result["branch"]
    print(f"  -> {cwd} on {branch}", file=out)
    print(f"  setup hook wrote: {Path(cwd, 'setup-ran.txt').read_text().strip()}", file=out)

    gate = call_tool("worktree.run-gate", {"cwd": cwd, "cmd": "test -f README.md"})
    print(f"gate 'test -f README.md': passed={gate['passed']} exit={gate['exitCode']}", file=out)

    _serve(repo, cwd, branch, out)

    print("worktrees:", file=out)
    for record in list_worktrees(str(repo)):
        print(f"  {record['path']}  {record.get('branch')}", file=out)
    for status in list_worktree_statuses(str(repo), sessions=[])[1:]:  # after the main checkout
        print(f"  status {Path(status['path']).name}: tree {status['tree']['state']}, "
              f"integration {status['integration']['state']}, GC class {status['class']}",
              file=out)

    cleanup = call_tool("worktree.cleanup", {"repoRoot": str(repo), "cwd": cwd,
                                             "branch": branch, "deleteBranch": True})
    print(f"cleanup: {cleanup}; worktree gone: {not Path(cwd).exists()}", file=out)


def _serve(repo: Path, cwd: str, branch: str, out: TextIO) -> None:
    """Start the ``web`` service behind a proxy, fetch a page through it, stop it."""
    proxy = start_proxy(port=0)
    try:
        service = call_tool("worktree.start-service", {
            "repoRoot": str(repo), "worktreePath": cwd, "branch": branch, "script": "web",
            "proxyPort": proxy.port})
        print(f"service web: {service['status']} on port {service['port']} -> {service['url']}",
              file=out)
        _wait_listening(service["port"])
        connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
        connection.request("GET", "/README.md", headers={"Host": service["hostname"]})
        response = connection.getresponse()
        body = response.read().decode()
        connection.close()
        print(f"GET {service['url']}/README.md through the proxy: {response.status} "
              f"{body.strip()!r}", file=out)
        listed = call_tool("worktree.list-services", {
            "repoRoot": str(repo), "worktreePath": cwd, "branch": branch,
            "proxyPort": proxy.port})
        for item in listed["services"]:
            print(f"  list-services: {item['name']} {item['status']} pid {item['pid']}",
                  file=out)
    finally:
        call_tool("worktree.stop-service", {"worktreePath": cwd, "script": "web"})
        proxy.close()
