"""A run's start checks the base state's tree against its manifest while it links it (one
walk): a file the manifest does not list, one of another size or one missing fails the
start with ``agent.persistent_state_root_invalid``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tavernlab.errors import PersistStateError
from tavernlab.host import Lab
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.persist._persist_tree import NotTheManifest, link_tree
from tavernlab.workspace.storage import link_key
from tavernlab.workspace.storage._fs import WriteGuard


def published(lab: Lab) -> tuple[str, Path]:
    """A state of three files in two folders; its ``persist/``."""
    run = lab.start_run(chat_id="alice")
    for path, text in (("persist/a/one.md", "one"), ("persist/a/b/two.md", "two!"),
                       ("persist/top.md", "top")):
        run.internals.scope.write_text(WorkspacePath(path), text, WriteGuard.unchecked())
    run.internals.scope.write_text(WorkspacePath("output/main.md"), "body", WriteGuard.unchecked())
    assert not run.call_tool("workspace.commit", {}).is_error
    assert not run.finish().is_error
    assert run.persist_state_id is not None
    return run.persist_state_id, lab.chat("alice").persist.state_dir(run.persist_state_id) / \
        "persist"


def extra(root: Path) -> None:
    (root / "a" / "planted.md").write_text("x")


def resized(root: Path) -> None:
    (root / "a" / "b" / "two.md").chmod(0o644)
    (root / "a" / "b" / "two.md").write_text("two!!")


def missing(root: Path) -> None:
    os.unlink(root / "top.md")


@pytest.mark.parametrize("tamper", [extra, resized, missing])
def test_a_tree_unlike_its_manifest_fails_the_start(tmp_path: Path,
                                                    tamper: Callable[[Path], None]) -> None:
    lab = Lab(tmp_path / "lab")
    state, root = published(lab)
    tamper(root)
    with pytest.raises(PersistStateError) as info:
        lab.start_run(chat_id="alice", persist_base=state)
    assert info.value.code == "agent.persistent_state_root_invalid"
    assert info.value.message == (f"agent.persistent_state_root_invalid: persist/ of "
                                  f"`{state}` does not match its manifest")
    lab.close()


def test_an_intact_state_starts_with_its_files(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab")
    state, _ = published(lab)
    run = lab.start_run(chat_id="alice", persist_base=state)
    snapshot = run.internals.persist_snapshot
    assert sorted(f.path for f in snapshot.files) == ["a/b/two.md", "a/one.md", "top.md"]
    assert (run.workspace_dir / "persist" / "a" / "b" / "two.md").read_text() == "two!"
    lab.close()


def test_link_tree_takes_the_expected_contents_and_refuses_an_unlisted_file(
        tmp_path: Path) -> None:
    source = tmp_path / "state"
    (source / "d").mkdir(parents=True)
    (source / "d" / "x.md").write_text("xyz")
    filled = link_tree(source, tmp_path / "one", expected={"d/x.md": ("ab" * 32, 3)})
    assert filled.files == 1
    assert filled.links == [(link_key(os.lstat(source / "d" / "x.md")), ("ab" * 32, 3))]
    with pytest.raises(NotTheManifest, match=r"d/x\.md"):
        link_tree(source, tmp_path / "two", expected={"d/x.md": ("ab" * 32, 4)})
    with pytest.raises(NotTheManifest, match=r"d/x\.md"):
        link_tree(source, tmp_path / "three", expected={"d/y.md": ("ab" * 32, 3)})


def manifest_of(lab: Lab, state: str) -> Path:
    return lab.chat("alice").persist.state_dir(state) / "manifest.json"


def test_runs_started_again_from_a_state_get_the_snapshot_of_its_manifest(
        tmp_path: Path) -> None:
    """The contents a start derives from a manifest are kept with it in this process; every
    later start from the state gets the same snapshot and the same recorded links."""
    lab = Lab(tmp_path / "lab")
    state, _ = published(lab)
    manifest = json.loads(manifest_of(lab, state).read_text())
    runs = [lab.start_run(chat_id="alice", persist_base=state) for _ in range(3)]
    texts = {(run.dir / "input" / "persist_snapshot.json").read_text() for run in runs}
    assert len(texts) == 1
    assert json.loads(texts.pop())["files"] == manifest["files"]
    for run in runs:
        known = run.internals.fs.containment.links.known()
        assert sorted(known.values()) == sorted((f["sha256"], f["bytes"])
                                                for f in manifest["files"])
    assert runs[0].internals.persist_snapshot.files is not runs[1].internals.persist_snapshot.files
    lab.close()


def test_a_manifest_listed_out_of_order_starts_with_a_sorted_snapshot(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab")
    state, _ = published(lab)
    path = manifest_of(lab, state)
    manifest = json.loads(path.read_text())
    manifest["files"].reverse()
    path.chmod(0o644)
    path.write_text(json.dumps(manifest, indent=4) + "\n")  # another size: surely changed
    for _ in range(2):  # parsed anew, then kept
        run = lab.start_run(chat_id="alice", persist_base=state)
        assert [f.path for f in run.internals.persist_snapshot.files] == [
            "a/b/two.md", "a/one.md", "top.md"]
    lab.close()


def test_a_manifest_changed_after_a_start_is_read_again(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab")
    state, _ = published(lab)
    lab.start_run(chat_id="alice", persist_base=state)  # its contents are kept
    path = manifest_of(lab, state)
    manifest = json.loads(path.read_text())
    manifest["files"][0]["bytes"] += 1
    path.chmod(0o644)
    path.write_text(json.dumps(manifest, indent=4) + "\n")  # another size: surely changed
    with pytest.raises(PersistStateError) as info:
        lab.start_run(chat_id="alice", persist_base=state)
    assert info.value.code == "agent.persistent_state_root_invalid"
    lab.close()
