"""Persist versions (docs/persist.md) on real runs in a real lab."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tavernlab.errors import PersistStateError
from tavernlab.host import Lab, Run
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.records import read_json, write_json
from tavernlab.workspace.storage._fs import WriteGuard


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path / "lab")


def finish(run: Run) -> str:
    """Commit (foreground runs need it) and finish; returns the published state id."""
    run.internals.scope.write_text(WorkspacePath("output/main.md"), "body", WriteGuard.unchecked())
    assert not run.call_tool("workspace.commit", {}).is_error
    result = run.finish()
    assert not result.is_error, result.content
    assert run.persist_state_id is not None
    return run.persist_state_id


def put(run: Run, path: str, text: str) -> None:
    run.internals.scope.write_text(WorkspacePath(path), text, WriteGuard.unchecked())


def changes(lab: Lab, chat: str, state_id: str) -> list[tuple[str, str]]:
    manifest = lab.chat(chat).persist.load(state_id)
    return [(c.kind, c.path) for c in manifest.changes]


def seeded_state(lab: Lab) -> str:
    run = lab.start_run(chat_id="alice")
    put(run, "persist/keep.md", "keep")
    put(run, "persist/gone.md", "gone")
    put(run, "persist/move-me.md", "moving")
    put(run, "persist/becomes-dir", "file")
    run.internals.scope.create_dir(WorkspacePath("persist/becomes-file"), False)
    run.internals.scope.create_dir(WorkspacePath("persist/empty-old"), False)
    return finish(run)


def test_change_kinds_and_the_next_run_sees_the_new_tree(lab: Lab) -> None:
    base = seeded_state(lab)
    assert changes(lab, "alice", base) == [
        ("added", "becomes-dir"),
        ("directoryAdded", "becomes-file"),
        ("directoryAdded", "empty-old"),
        ("added", "gone.md"),
        ("added", "keep.md"),
        ("added", "move-me.md"),
    ]
    run = lab.start_run(chat_id="alice", persist_base=base)
    scope = run.internals.scope
    scope.remove(WorkspacePath("persist/gone.md"), False)
    scope.rename(WorkspacePath("persist/move-me.md"), WorkspacePath("persist/moved.md"))
    scope.remove(WorkspacePath("persist/empty-old"), False)
    scope.create_dir(WorkspacePath("persist/empty-new"), False)
    scope.remove(WorkspacePath("persist/becomes-dir"), False)
    scope.create_dir(WorkspacePath("persist/becomes-dir"), False)
    scope.remove(WorkspacePath("persist/becomes-file"), False)
    put(run, "persist/becomes-file", "now a file")
    put(run, "persist/keep.md", "kept and changed")
    state = finish(run)
    manifest = lab.chat("alice").persist.load(state)
    assert [(c.kind, c.path) for c in manifest.changes] == [
        ("deleted", "becomes-dir"),
        ("directoryAdded", "becomes-dir"),
        ("directoryDeleted", "becomes-file"),
        ("added", "becomes-file"),
        ("directoryAdded", "empty-new"),
        ("directoryDeleted", "empty-old"),
        ("deleted", "gone.md"),
        ("modified", "keep.md"),
        ("deleted", "move-me.md"),
        ("added", "moved.md"),
    ]
    added = next(c for c in manifest.changes if c.path == "moved.md")
    assert added.bytes == 6 and added.sha256 is not None
    assert manifest.version == 2 and manifest.base_state_id == base
    assert manifest.directories == ["becomes-dir", "empty-new"]
    nxt = lab.start_run(chat_id="alice", persist_base=state)
    assert nxt.files("persist") == ["persist/becomes-file", "persist/keep.md",
                                     "persist/moved.md"]
    assert nxt.read("persist/keep.md") == "kept and changed"
    assert (nxt.workspace_dir / "persist" / "empty-new").is_dir()
    snapshot = read_json(nxt.dir / "input" / "persist_snapshot.json")
    assert snapshot["baseStateId"] == state
    assert snapshot["directories"] == ["becomes-dir", "empty-new"]
    assert [f["path"] for f in snapshot["files"]] == ["becomes-file", "keep.md", "moved.md"]


def test_publishing_never_changes_the_base_state(lab: Lab) -> None:
    base = seeded_state(lab)
    run = lab.start_run(chat_id="alice", persist_base=base)
    run.internals.scope.remove(WorkspacePath("persist/gone.md"), False)
    run.internals.scope.remove(WorkspacePath("persist/empty-old"), False)
    finish(run)
    base_dir = lab.chat("alice").persist.state_dir(base) / "persist"
    assert (base_dir / "gone.md").read_text() == "gone"
    assert (base_dir / "empty-old").is_dir()


def test_revision_reuses_an_equal_earlier_state(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    put(run, "persist/a.md", "a")
    first = finish(run)
    run.resume()
    run.internals.scope.create_dir(WorkspacePath("persist/extra"), False)
    assert run.finish().structured["persistStateId"] != first
    second = run.persist_state_id
    assert second != first
    assert changes(lab, "alice", second) == [("added", "a.md"), ("directoryAdded", "extra")]
    run.resume()
    run.internals.scope.remove(WorkspacePath("persist/extra"), False)
    run.finish()
    assert run.persist_state_id == first
    assert lab.chat("alice").messages[0].persist_state_id == first
    reused = [e.payload.reused for e in run.events(types="persistent_changes_committed",
                                                   journal=False)]
    assert reused == [False, False, True]


def make_v1_state(lab: Lab, chat: str) -> str:
    """A version-1 state written the way an old host did: no directory inventory."""
    repo = lab.chat(chat).persist
    state_id = "pst_legacyv1"
    root = repo.state_dir(state_id) / "persist"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("a")
    (root / "empty").mkdir()
    import hashlib

    write_json(repo.state_dir(state_id) / "manifest.json", {
        "version": 1, "stateId": state_id, "runId": "run_old", "workspaceId": repo.workspace_id,
        "stableChatId": repo.stable_chat_id, "createdAt": "2025-01-01T00:00:00Z",
        "files": [{"path": "docs/a.md", "sha256": hashlib.sha256(b"a").hexdigest(),
                   "bytes": 1}],
        "changes": [{"kind": "added", "path": "docs/a.md"}],
    })
    return state_id


def test_version_1_base_is_used_and_a_removed_directory_is_directory_deleted(lab: Lab) -> None:
    v1 = make_v1_state(lab, "alice")
    run = lab.start_run(chat_id="alice", persist_base=v1)
    assert run.files("persist") == ["persist/docs/a.md"]
    run.internals.scope.remove(WorkspacePath("persist/empty"), False)
    state = finish(run)
    assert changes(lab, "alice", state) == [("directoryDeleted", "empty")]


def test_version_1_revision_is_reused_with_its_stored_change_list(lab: Lab) -> None:
    v1 = make_v1_state(lab, "alice")
    repo = lab.chat("alice").persist
    source = repo.state_dir(v1) / "persist"
    snapshot = repo.initialize(lab.root / "copy", v1)
    state, reused = repo.publish(run_id="run_old", persist_dir=source, snapshot=snapshot,
                                 revision_of=v1)
    assert reused and state.state_id == v1 and state.version == 1
    assert [(c.kind, c.path) for c in state.changes] == [("added", "docs/a.md")]


def test_runs_from_one_base_publish_independent_branches(lab: Lab) -> None:
    base = seeded_state(lab)
    left = lab.start_run(chat_id="alice", persist_base=base)
    right = lab.start_run(chat_id="alice", persist_base=base)
    put(left, "persist/left.md", "L")
    put(right, "persist/right.md", "R")
    left_state, right_state = finish(left), finish(right)
    assert left_state != right_state
    on_left = lab.start_run(chat_id="alice", persist_base=left_state)
    on_right = lab.start_run(chat_id="alice", persist_base=right_state)
    assert "persist/left.md" in on_left.files("persist")
    assert "persist/right.md" not in on_left.files("persist")
    assert "persist/right.md" in on_right.files("persist")
    assert "persist/left.md" not in on_right.files("persist")


def test_empty_root_and_projection_changes_only_after_publication(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice")
    empty = finish(run)
    assert changes(lab, "alice", empty) == []
    editing = lab.start_run(chat_id="alice", persist_base=empty)
    assert editing.files("persist") == []
    assert (editing.workspace_dir / "persist").is_dir()
    put(editing, "persist/draft.md", "unpublished")
    other = lab.start_run(chat_id="alice", persist_base=empty)
    assert other.files("persist") == []
    published = finish(editing)
    assert lab.start_run(chat_id="alice", persist_base=published).files("persist") == [
        "persist/draft.md"]


def test_bad_base_states_fail_with_upstream_codes_and_create_no_run(lab: Lab) -> None:
    chat = lab.chat("alice")
    cases = {"pst_missing": "agent.persistent_state_not_found"}
    repo = chat.persist
    (repo.state_dir("pst_broken")).mkdir(parents=True)
    (repo.state_dir("pst_broken") / "manifest.json").write_text("{not json")
    cases["pst_broken"] = "agent.persistent_state_invalid"
    for name, extra, code in (
        ("pst_other", {"stateId": "pst_else"}, "agent.persistent_state_manifest_mismatch"),
        ("pst_foreign", {"workspaceId": "chat_0000000000000000"},
         "agent.persistent_state_workspace_mismatch"),
        ("pst_future", {"version": 9}, "agent.persistent_state_version_unsupported"),
        ("pst_noroot", {}, "agent.persistent_state_root_missing"),
    ):
        manifest = {"version": 2, "stateId": name, "runId": "run_x",
                    "workspaceId": repo.workspace_id, "stableChatId": "alice",
                    "createdAt": "2025-01-01T00:00:00Z", "files": [], "directories": [],
                    "changes": [], **extra}
        write_json(repo.state_dir(name) / "manifest.json", manifest)
        if name != "pst_noroot":
            (repo.state_dir(name) / "persist").mkdir()
        cases[name] = code
    write_json(repo.state_dir("pst_fileroot") / "manifest.json", {
        "version": 2, "stateId": "pst_fileroot", "runId": "run_x",
        "workspaceId": repo.workspace_id, "stableChatId": "alice",
        "createdAt": "2025-01-01T00:00:00Z"})
    (repo.state_dir("pst_fileroot") / "persist").write_text("not a directory")
    cases["pst_fileroot"] = "agent.persistent_state_root_invalid"
    runs_dir = chat.workspace_dir / "runs"
    for state_id, code in cases.items():
        with pytest.raises(PersistStateError) as info:
            lab.start_run(chat_id="alice", persist_base=state_id)
        assert info.value.code == code
        assert info.value.message.startswith(code + ": ")
    assert not runs_dir.exists()
    assert lab.runs() == []


def test_chat_link_fork_and_pruning(lab: Lab) -> None:
    first = lab.start_run(chat_id="alice")
    put(first, "persist/a.md", "1")
    one = finish(first)
    swipe = lab.start_run(chat_id="alice", generation_type="swipe", persist_base=None)
    put(swipe, "persist/a.md", "2")
    two = finish(swipe)
    message = lab.chat("alice").messages[0]
    assert [s.agent["persistStateId"] for s in message.swipes] == [one, two]
    assert message.swipes[1].agent["persistStateStatus"] == "committed"
    assert message.persist_state_id == two
    link = [e.payload.state_id for e in swipe.events(
        types="persistent_state_metadata_update_requested")]
    assert link == [two]
    orphan_run = lab.start_run(chat_id="alice", presentation="background")
    put(orphan_run, "persist/a.md", "3")
    assert not orphan_run.finish().is_error
    orphan = orphan_run.persist_state_id
    assert orphan is not None

    fork = lab.chat("alice").fork("alice-fork")
    assert fork.messages[0].persist_state_id == two
    manifest = fork.persist.load(two)
    assert manifest.stable_chat_id == "alice-fork"
    assert manifest.workspace_id == fork.workspace_id
    on_fork = lab.start_run(chat_id="alice-fork", persist_base=two)
    assert on_fork.read("persist/a.md") == "2"

    chat = lab.chat("alice")
    assert chat.prune_persistent_states([one, orphan]) == [orphan]
    assert chat.persist.exists(one) and not chat.persist.exists(orphan)
    assert sorted(chat.persist.state_ids()) == sorted([one, two])
    (chat.persist.states_dir / "pst_afile").write_text("x")
    with pytest.raises(Exception, match="not a persist state directory"):
        chat.prune_persistent_states(["pst_afile", one])
    assert chat.persist.exists(one)
    with pytest.raises(Exception, match="group chats"):
        lab.chat("g", "group").prune_persistent_states([])


PUBLISHER = """
import sys
from tavernlab.host import Lab
run = Lab(sys.argv[1]).open_run(sys.argv[2])
print("publishing", flush=True)
run.call_tool("workspace.finish", {})
"""


def test_a_killed_publisher_leaves_no_visible_state_and_the_next_publish_works(lab: Lab
                                                                               ) -> None:
    run = lab.start_run(chat_id="alice")
    payload = "x" * 2048
    for index in range(3000):
        (run.workspace_dir / "persist" / f"f{index:05d}.txt").write_text(payload)
    put(run, "output/main.md", "body")
    assert not run.call_tool("workspace.commit", {}).is_error
    states = lab.chat("alice").persist.states_dir
    child = subprocess.Popen([sys.executable, "-c", PUBLISHER, str(lab.root), run.id],
                             stdout=subprocess.PIPE)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == b"publishing"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if states.exists() and any(".tmp-" in p.name for p in states.iterdir()):
            break
        time.sleep(0.001)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert any(".tmp-" in p.name for p in states.iterdir()), "kill landed after publication"
    repo = lab.chat("alice").persist
    assert repo.state_ids() == []
    assert lab.chat("alice").messages[0].persist_state_id is None
    again = lab.open_run(run.id)
    result = again.call_tool("workspace.finish", {})
    assert not result.is_error, result.content
    assert repo.state_ids() == [again.persist_state_id]
    assert not any(".tmp-" in p.name for p in states.iterdir())
    assert len(repo.load(again.persist_state_id).files) == 3000


@pytest.mark.parametrize(("entry", "detail"), [
    ({"path": "a.md", "sha256": "0" * 64}, "files[0] must be an object of path, sha256 and bytes"),
    ({"path": "a.md", "sha256": "0" * 64, "bytes": 1, "mode": 420},
     "files[0] must be an object of path, sha256 and bytes"),
    ({"path": "a.md", "sha256": "0" * 64, "bytes": "1"}, "bytes an integer"),
    ({"path": "a.md", "sha256": "0" * 64, "bytes": True}, "bytes an integer"),
    ({"path": 7, "sha256": "0" * 64, "bytes": 1}, "path and sha256 must be strings"),
    ("a.md", "files[0] must be an object"),
])
def test_a_malformed_file_entry_is_refused_with_the_entry_named(
        lab: Lab, entry: object, detail: str) -> None:
    """The manifest's file list is checked exactly (no coercion, no unknown keys): an entry
    that is not ``{path, sha256, bytes}`` with a string, a string and an integer fails the
    run's start with ``agent.persistent_state_invalid`` naming the entry."""
    repo = lab.chat("alice").persist
    write_json(repo.state_dir("pst_bad") / "manifest.json", {
        "version": 2, "stateId": "pst_bad", "runId": "run_x", "workspaceId": repo.workspace_id,
        "stableChatId": "alice", "createdAt": "2025-01-01T00:00:00Z", "files": [entry],
        "directories": [], "changes": []})
    (repo.state_dir("pst_bad") / "persist").mkdir()
    with pytest.raises(PersistStateError) as info:
        lab.start_run(chat_id="alice", persist_base="pst_bad")
    assert info.value.code == "agent.persistent_state_invalid"
    assert detail in info.value.message
    assert lab.runs() == []


def test_a_published_manifest_lists_files_as_path_sha256_bytes(lab: Lab) -> None:
    """The manifest's on-disk shape of a file entry: exactly ``path``, ``sha256``, ``bytes``,
    in that order (and the loaded manifest gives them back as entries)."""
    import hashlib

    run = lab.start_run(chat_id="alice")
    put(run, "persist/notes/a.md", "alpha")
    state = finish(run)
    repo = lab.chat("alice").persist
    raw = (repo.state_dir(state) / "manifest.json").read_text()
    digest = hashlib.sha256(b"alpha").hexdigest()
    assert (f'"files": [\n    {{\n      "path": "notes/a.md",\n      "sha256": "{digest}",\n'
            f'      "bytes": 5\n    }}\n  ]') in raw
    (entry,) = repo.load(state).files
    assert (entry.path, entry.sha256, entry.bytes) == ("notes/a.md", digest, 5)


@pytest.mark.parametrize(("change", "detail"), [
    ({"path": "a.md"}, "changes[0] must be an object of kind, path"),
    ({"kind": "added", "path": "a.md", "why": "x"}, "changes[0] must be an object of kind"),
    ({"kind": "renamed", "path": "a.md"}, "kind must be one of added, deleted"),
    ({"kind": "added", "path": "a.md", "bytes": 1.5}, "bytes an integer"),
])
def test_a_malformed_change_is_refused_with_the_change_named(
        lab: Lab, change: object, detail: str) -> None:
    """The manifest's change list is checked exactly too."""
    repo = lab.chat("alice").persist
    write_json(repo.state_dir("pst_bad") / "manifest.json", {
        "version": 2, "stateId": "pst_bad", "runId": "run_x", "workspaceId": repo.workspace_id,
        "stableChatId": "alice", "createdAt": "2025-01-01T00:00:00Z", "files": [],
        "directories": [], "changes": [change]})
    (repo.state_dir("pst_bad") / "persist").mkdir()
    with pytest.raises(PersistStateError) as info:
        lab.start_run(chat_id="alice", persist_base="pst_bad")
    assert info.value.code == "agent.persistent_state_invalid"
    assert detail in info.value.message


def test_a_manifest_rewritten_in_place_is_read_again(lab: Lab) -> None:
    """Loaded manifests are kept per process while the file is the same file: a manifest
    rewritten in place with its size and modification time restored is still noticed (its
    change time moved), and what a caller does to a loaded manifest never reaches the next
    load."""
    run = lab.start_run(chat_id="alice")
    put(run, "persist/a.md", "alpha")
    state = finish(run)
    repo = lab.chat("alice").persist
    first = repo.load(state)
    first.stable_chat_id = "changed by the caller"
    first.files.clear()
    again = repo.load(state)
    assert again.stable_chat_id == "alice" and [f.path for f in again.files] == ["a.md"]
    path = repo.state_dir(state) / "manifest.json"
    before = path.stat()
    text = path.read_text()
    other = "chat_" + "f" * 16
    assert repo.workspace_id != other and len(other) == len(repo.workspace_id)
    time.sleep(0.01)  # a change time the rewrite can move
    with open(path, "r+", encoding="utf-8") as handle:  # in place: same inode, same size
        handle.write(text.replace(repo.workspace_id, other))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    with pytest.raises(PersistStateError) as info:
        repo.load(state)
    assert info.value.code == "agent.persistent_state_workspace_mismatch"
