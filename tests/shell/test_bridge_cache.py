"""The lean shell bridge: one lease of the workspace lock per call, and what
the storage port walked, stated and parsed in a call is reused only until something changes
it, so answers inside one call are never stale and containment is never weakened."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tavernlab.cancel import CancelToken
from tavernlab.errors import InvalidData
from tavernlab.paths import WorkspacePath
from tavernlab.shell import ShellOutcome
from tavernlab.workspace.storage import UNSUPPORTED_NODE, WorkspaceFs

from .conftest import Workspace


def test_answers_follow_every_change_within_one_call(ws: Workspace) -> None:
    result = ws.shell(
        "mkdir -p /scratch/d/e; echo one > /scratch/d/e/f.md; cat /scratch/d/e/f.md; "
        "ls /scratch/d; mv /scratch/d /scratch/moved; cat /scratch/d/e/f.md; "
        "cat /scratch/moved/e/f.md; rm -r /scratch/moved; ls /scratch; "
        "echo now a file > /scratch/moved; cat /scratch/moved; "
        "echo more >> /scratch/moved; wc -c < /scratch/moved; test -d /scratch/moved || "
        "echo not a dir")
    assert result.stdout.splitlines() == ["one", "e", "one", "now a file", "16", "not a dir"]
    assert "/scratch/d/e/f.md" in result.stderr  # the old path is gone inside the same call
    assert ws.read("scratch/moved") == "now a file\nmore\n"


def test_a_scripts_writes_are_seen_by_the_same_shell_call(ws: Workspace) -> None:
    result = ws.shell(
        "ls /scratch; js -e \"import { workspace } from '@tauritavern/runtime'; "
        "workspace.writeText('scratch/by-js.md', 'from js\\n');\"; cat /scratch/by-js.md; "
        "ls /scratch")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["from js", "by-js.md"]


def test_nodes_planted_before_a_call_are_refused_after_their_directory_was_walked(
        ws: Workspace, outside: Path) -> None:
    (ws.dir / "scratch" / "notes").mkdir()
    (ws.dir / "scratch" / "notes" / "fine.md").write_text("fine")
    os.symlink(outside / "secret.md", ws.dir / "scratch" / "notes" / "link.md")
    os.link(outside / "secret.md", ws.dir / "scratch" / "notes" / "hard.md")
    os.mkfifo(ws.dir / "scratch" / "notes" / "pipe")
    result = ws.shell("cat /scratch/notes/fine.md; ls /scratch/notes; cat /scratch/notes/link.md;"
                      " cat /scratch/notes/hard.md; cat /scratch/notes/pipe; "
                      "cat /scratch/notes/fine.md")
    assert "alpha secret" not in result.stdout
    assert result.stdout.startswith("fine") and result.stdout.endswith("fine")
    assert result.stderr.count(UNSUPPORTED_NODE) >= 3


def test_the_lock_is_held_once_for_the_whole_call(ws: Workspace) -> None:
    """During the call (here, its sleep) this process holds one flock on the lock file, and
    the port answers this process's other threads without waiting for the call."""
    token = CancelToken()
    box: dict[str, object] = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", ws.shell(
        "echo x > /scratch/started.md; sleep 30", token=token)))
    worker.start()
    while not (ws.dir / "scratch" / "started.md").exists():
        time.sleep(0.01)
    try:
        inode = os.stat(ws.fs.lock.path).st_ino
        held = [line for line in Path("/proc/locks").read_text().splitlines()
                if line.split()[-3].endswith(f":{inode}") and "->" not in line.split()
                and line.split()[4] == str(os.getpid())]
        assert len(held) == 1 and "FLOCK" in held[0] and "WRITE" in held[0]
        assert ws.fs.read_file(WorkspacePath("scratch/started.md"), None) == b"x\n"
    finally:
        token.cancel()
        worker.join(20)
    assert box["r"].outcome is ShellOutcome.CANCELLED  # type: ignore[attr-defined]
    assert not [line for line in Path("/proc/locks").read_text().splitlines()
                if line.split()[-3].endswith(f":{inode}")]


def test_a_lease_forgets_what_it_learnt_when_it_ends(tmp_path: Path) -> None:
    fs = WorkspaceFs(tmp_path / "ws")
    (tmp_path / "ws" / "scratch").mkdir()
    with fs.lease():
        assert fs.exists(WorkspacePath("scratch"))
        known = fs.containment.generation
        assert fs.containment.directories
    assert fs.containment.directories == set() and fs.containment.nodes == {}
    assert fs.containment.generation > known
    os.rmdir(tmp_path / "ws" / "scratch")  # behind the port, after the lease
    os.symlink("/etc", tmp_path / "ws" / "scratch")
    with pytest.raises(InvalidData, match=UNSUPPORTED_NODE):  # walked afresh, refused
        fs.exists(WorkspacePath("scratch/passwd"))
