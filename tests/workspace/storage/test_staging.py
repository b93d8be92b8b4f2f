"""Atomic writes stage their bytes in a folder of the workspace the model never sees, so what a
killed writer leaves is never listed, read, exported or published, and is removed when the run
is opened again."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tavernlab.host import Lab, Run
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage import STAGING_DIR_NAME, WorkspaceFs, clear_staging
from tavernlab.workspace.storage._atomic import TEMP_PREFIX
from tavernlab.workspace.storage._fs import STALE_STAGED_S, WriteGuard


def leave_staged(run: Run, name: str, data: bytes = b"half") -> Path:
    """A staged file as a writer killed before its rename leaves it."""
    staging = run.dir / STAGING_DIR_NAME
    staging.mkdir(exist_ok=True)
    path = staging / name
    path.write_bytes(data)
    return path


def test_a_write_stages_outside_every_root_and_leaves_nothing_behind(tmp_path: Path) -> None:
    fs = WorkspaceFs(tmp_path / "ws")
    (tmp_path / "ws" / "output").mkdir()
    fs.write_file(WorkspacePath("output/a.md"), b"one", WriteGuard.unchecked())
    fs.write_file(WorkspacePath("output/a.md"), b"two", WriteGuard.unchecked())
    assert sorted(os.listdir(tmp_path / "ws" / "output")) == ["a.md"]
    assert os.listdir(tmp_path / "ws" / STAGING_DIR_NAME) == []
    assert [e.path for e in fs.read_dir(None, None)] == ["output"]


def test_a_killed_writers_leftover_is_invisible_to_the_model_and_never_published(
        run: Run) -> None:
    run.call_tool("workspace.write_file", {"path": "persist/notes.md", "content": "kept"})
    leave_staged(run, f"{TEMP_PREFIX}{'0' * 32}")
    listed = run.call_tool("workspace.list_files", {"depth": 5})
    assert STAGING_DIR_NAME not in listed.content and TEMP_PREFIX not in listed.content
    assert not [n for n in run.tree(include_hidden=True).walk()
                if STAGING_DIR_NAME in n.path or TEMP_PREFIX in n.path]
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "body"})
    run.call_tool("workspace.commit", {"path": "output/main.md"})
    run.finish()
    state = run._core.counters.persist_state_id
    assert state is not None
    assert run._core.chat is not None
    published = run._core.chat.persist.state_dir(state)
    names = {p.name for p in published.rglob("*")}
    assert "notes.md" in names
    assert not any(n.startswith(TEMP_PREFIX) or n == STAGING_DIR_NAME for n in names)


def test_opening_a_run_removes_what_killed_writers_staged(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    port = leave_staged(run, f"{TEMP_PREFIX}{'1' * 32}")
    live = leave_staged(run, f".run.json.tmp-{os.getpid()}-{'2' * 32}")
    stale = leave_staged(run, f".run.json.tmp-{os.getpid()}-{'3' * 32}")
    old = time.time() - STALE_STAGED_S - 60
    os.utime(stale, (old, old))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True, timeout=60)
    dead = leave_staged(run, f".run.json.tmp-{gone.stdout.strip()}-{'4' * 32}")
    Lab(lab.root).open_run(run.id)
    assert not port.exists() and not stale.exists() and not dead.exists()
    assert live.exists()  # a record's temp file of a live writer is left alone


def test_a_writer_holding_the_workspace_lock_keeps_its_staged_file(run: Run) -> None:
    port = leave_staged(run, f"{TEMP_PREFIX}{'4' * 32}")
    with run._core.fs.lock.exclusive():
        assert clear_staging(run.dir) == []
    assert port.exists()
    assert clear_staging(run.dir) == [port.name]
    assert not port.exists()
