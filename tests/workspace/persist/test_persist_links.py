"""Persist states stored by changes: a run's ``persist/`` holds hard links
to its base state's files, publication links what did not change and copies what did, a
published state's bytes never change under any writer, and the lab's own links are served
while planted ones are refused."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tavernlab.errors import InvalidData
from tavernlab.host import Lab, Run
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.persist._persist_tree import STATE_FILE_MODE, link_or_copy
from tavernlab.workspace.storage._fs import WriteGuard

BASE_FILES = {"notes/a.md": "alpha\n", "notes/b.md": "bravo\n", "c.txt": "charlie\n"}


def finish(run: Run) -> str:
    """Commit (a foreground run needs it) and finish; returns the published state id."""
    run.internals.scope.write_text(WorkspacePath("output/main.md"), "body", WriteGuard.unchecked())
    assert not run.call_tool("workspace.commit", {}).is_error
    assert not run.finish().is_error
    assert run.persist_state_id is not None
    return run.persist_state_id


def base_state(lab: Lab) -> str:
    run = lab.start_run(chat_id="alice")
    for path, text in BASE_FILES.items():
        run.internals.scope.write_text(WorkspacePath(f"persist/{path}"), text,
                                       WriteGuard.unchecked())
    return finish(run)


def state_file(lab: Lab, state_id: str, path: str) -> Path:
    return lab.chat("alice").persist.state_dir(state_id) / "persist" / path


def state_bytes(lab: Lab, state_id: str) -> dict[str, bytes]:
    root = lab.chat("alice").persist.state_dir(state_id) / "persist"
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def base(lab: Lab) -> str:
    return base_state(lab)


def test_a_run_starts_with_links_to_its_base_state_and_serves_them(lab: Lab, base: str
                                                                     ) -> None:
    run = lab.start_run(chat_id="alice", persist_base=base)
    for path in BASE_FILES:
        mine = os.lstat(run.workspace_dir / "persist" / path)
        theirs = os.lstat(state_file(lab, base, path))
        assert (mine.st_ino, mine.st_nlink >= 2) == (theirs.st_ino, True)
    assert run.files("persist") == ["persist/c.txt", "persist/notes/a.md", "persist/notes/b.md"]
    read = run.call_tool("workspace.read_file", {"path": "persist/notes/a.md"})
    assert not read.is_error and read.structured["sha256"] is not None
    assert run.shell("cat /persist/notes/b.md").stdout == "bravo\n"
    tree = run.tree("persist")
    assert [n.kind for n in tree.walk() if n.kind == "refused"] == []


def test_publishing_links_unchanged_files_and_copies_changed_ones(lab: Lab, base: str) -> None:
    run = lab.start_run(chat_id="alice", persist_base=base)
    run.call_tool("workspace.read_file", {"path": "persist/c.txt"})
    run.call_tool("workspace.write_file", {"path": "persist/c.txt", "content": "changed\n"})
    state = finish(run)
    manifest = lab.chat("alice").persist.load(state)
    assert [(c.kind, c.path) for c in manifest.changes] == [("modified", "c.txt")]
    for path in ("notes/a.md", "notes/b.md"):  # unchanged: the base's inode, one more link
        assert os.lstat(state_file(lab, state, path)).st_ino == os.lstat(
            state_file(lab, base, path)).st_ino
    changed = os.lstat(state_file(lab, state, "c.txt"))
    assert changed.st_ino != os.lstat(state_file(lab, base, "c.txt")).st_ino
    assert stat.S_IMODE(changed.st_mode) == STATE_FILE_MODE and changed.st_nlink == 1
    assert state_bytes(lab, state) == {"c.txt": b"changed\n", "notes/a.md": b"alpha\n",
                                       "notes/b.md": b"bravo\n"}
    assert state_bytes(lab, base) == {p: t.encode() for p, t in BASE_FILES.items()}
    later = lab.start_run(chat_id="alice", persist_base=state)
    assert later.read("persist/c.txt") == "changed\n"


WRITERS = {
    "write_file replace": lambda run: run.call_tool(
        "workspace.write_file", {"path": "persist/notes/a.md", "content": "new\n"}),
    "write_file append": lambda run: run.call_tool(
        "workspace.write_file", {"path": "persist/notes/a.md", "content": "more\n",
                                 "mode": "append"}),
    "apply_patch": lambda run: run.call_tool(
        "workspace.apply_patch", {"path": "persist/notes/a.md", "old_string": "alpha",
                                  "new_string": "omega"}),
    "shell >": lambda run: run.shell("echo new > /persist/notes/a.md"),
    "shell >>": lambda run: run.shell("echo more >> /persist/notes/a.md"),
    "shell sed -i": lambda run: run.shell("sed -i 's/alpha/omega/' /persist/notes/a.md"),
    "shell python3 append": lambda run: run.shell(
        "python3 -c \"open('/persist/notes/a.md', 'a').write('more')\""),
    "shell mv then >>": lambda run: run.shell(
        "mv /persist/notes/a.md /persist/moved.md && echo more >> /persist/moved.md"),
    "shell cp over": lambda run: run.shell("cp /persist/c.txt /persist/notes/a.md"),
    "script writeText": lambda run: run.js(
        ["-e", "import { workspace } from '@tauritavern/runtime'; "
               "workspace.writeText('persist/notes/a.md', 'new');"]),
    "port append": lambda run: run.internals.fs.append_file(WorkspacePath("persist/notes/a.md"),
                                                  b"more"),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_published_state_never_changes_under_any_writer(lab: Lab, base: str,
                                                          writer: str) -> None:
    run = lab.start_run(chat_id="alice", persist_base=base)
    run.call_tool("workspace.read_file", {"path": "persist/notes/a.md"})
    before = state_bytes(lab, base)
    result = WRITERS[writer](run)
    assert not getattr(result, "is_error", False), getattr(result, "content", result)
    assert getattr(result, "exit_code", 0) == 0, result
    assert state_bytes(lab, base) == before
    written = next(p for p in ("persist/moved.md", "persist/notes/a.md")
                   if (run.workspace_dir / p).exists() and p != "persist/c.txt")
    mine = os.lstat(run.workspace_dir / written)
    assert mine.st_nlink == 1, "the write must have broken the link"
    assert (run.workspace_dir / written).read_bytes() != b"alpha\n"
    state = finish(run)
    assert state_bytes(lab, base) == before
    assert state_bytes(lab, state)["notes/b.md"] == b"bravo\n"


def test_a_reopened_run_tells_its_own_links_from_planted_ones(lab: Lab, base: str,
                                                              tmp_path: Path) -> None:
    run = lab.start_run(chat_id="alice", persist_base=base)
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret\n")
    os.link(outside, run.workspace_dir / "persist" / "alias.md")
    same_bytes = tmp_path / "copy-of-a.md"
    same_bytes.write_text("alpha\n")  # a base file's bytes: it can only show what the run has
    os.link(same_bytes, run.workspace_dir / "scratch" / "a-again.md")
    for handle in (run, Lab(lab.root).open_run(run.id)):
        names = {n.path: n.reason for n in handle.tree("persist").walk() if n.kind != "directory"}
        assert names == {"persist/alias.md": "hard_link", "persist/c.txt": None,
                         "persist/notes/a.md": None, "persist/notes/b.md": None}
        denied = handle.call_tool("workspace.read_file", {"path": "persist/alias.md"})
        assert denied.error_code == "workspace.invalid_data"
        assert not handle.call_tool("workspace.read_file",
                                    {"path": "persist/notes/a.md"}).is_error
        assert not handle.call_tool("workspace.read_file",
                                    {"path": "scratch/a-again.md"}).is_error
    (run.workspace_dir / "persist" / "alias.md").unlink()
    reopened = Lab(lab.root).open_run(run.id)
    state = finish(reopened)
    assert os.lstat(state_file(lab, state, "notes/a.md")).st_ino == os.lstat(
        state_file(lab, base, "notes/a.md")).st_ino
    assert outside.read_text() == "top secret\n"


def test_pruning_the_base_keeps_the_new_state_and_the_next_run_whole(lab: Lab, base: str
                                                                      ) -> None:
    run = lab.start_run(chat_id="alice", persist_base=base)
    run.call_tool("workspace.write_file", {"path": "persist/d.md", "content": "delta\n"})
    state = finish(run)
    repo = lab.chat("alice").persist
    assert repo.prune([base], referenced=set()) == [base]
    assert not repo.state_dir(base).exists()
    assert state_bytes(lab, state) == {"c.txt": b"charlie\n", "d.md": b"delta\n",
                                       "notes/a.md": b"alpha\n", "notes/b.md": b"bravo\n"}
    later = lab.start_run(chat_id="alice", persist_base=state)
    assert later.read("persist/notes/a.md") == "alpha\n"
    later.call_tool("workspace.write_file", {"path": "persist/notes/a.md",
                                             "content": "x", "mode": "append"})
    assert state_bytes(lab, state)["notes/a.md"] == b"alpha\n"


def test_link_or_copy_copies_across_devices(tmp_path: Path) -> None:
    source = Path("/dev/shm") / f"tavernlab-link-{os.getpid()}"  # tmpfs, another device
    assert os.stat(source.parent).st_dev != os.stat(tmp_path).st_dev
    source.write_bytes(b"bytes")
    try:
        assert link_or_copy(str(source), tmp_path / "copied") is False
        assert (tmp_path / "copied").read_bytes() == b"bytes"
        assert os.lstat(tmp_path / "copied").st_nlink == 1
        assert link_or_copy(str(tmp_path / "copied"), tmp_path / "linked") is True
        assert os.lstat(tmp_path / "linked").st_nlink == 2
    finally:
        source.unlink()


def test_a_planted_link_fails_the_publication_and_leaves_no_state(lab: Lab, base: str,
                                                                  tmp_path: Path) -> None:
    """Publication scans and stores ``persist/`` in one walk: a planted hard link found
    midway fails the finish with the containment error, as upstream fails a commit
    (``persistent_changes_commit_failed``, the run failed), and leaves neither a new state nor
    a half-built staging directory."""
    run = lab.start_run(chat_id="alice", persist_base=base)
    run.internals.scope.write_text(WorkspacePath("persist/notes/a.md"), "changed\n",
                                   WriteGuard.unchecked())
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret\n")
    os.link(outside, run.workspace_dir / "persist" / "zz-alias.md")  # walked last
    run.internals.scope.write_text(WorkspacePath("output/main.md"), "body", WriteGuard.unchecked())
    assert not run.call_tool("workspace.commit", {}).is_error
    with pytest.raises(InvalidData, match="regular files and directories"):
        run.finish()
    assert run.status == "failed"
    failed = [e for e in run.events() if e.type == "persistent_changes_commit_failed"]
    assert len(failed) == 1 and "regular files and directories" in failed[0].payload.message
    states = lab.chat("alice").persist.states_dir
    assert sorted(p.name for p in states.iterdir()) == [base]
    assert outside.read_text() == "top secret\n"
