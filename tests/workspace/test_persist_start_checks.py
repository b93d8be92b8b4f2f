"""A run's start checks the base state's tree against its manifest while it links it (one
walk): a file the manifest does not list, one of another size or one missing fails the
start with ``agent.persistent_state_root_invalid``."""

from __future__ import annotations

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
