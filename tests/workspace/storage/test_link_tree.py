"""Filling a run's persist/ from a state: directories made and files linked through
directory file descriptors, every node checked, no descriptor left open."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

from tavernlab.errors import InvalidData
from tavernlab.workspace.persist._persist_tree import link_tree
from tavernlab.workspace.storage import link_key


def open_fds() -> set[str]:
    """This process's open descriptors."""
    return set(os.listdir("/proc/self/fd"))


def open_fds_count() -> int:
    """The highest open descriptor + 1 (what a lower ``RLIMIT_NOFILE`` must leave room
    for)."""
    return max(int(fd) for fd in open_fds()) + 1


def state(root: Path) -> Path:
    """A small state tree: nested folders, an empty one, files at every level."""
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "top.md").write_text("top")
    (root / "a" / "one.md").write_text("one")
    (root / "a" / "b" / "two.md").write_text("two!")
    (root / "a" / "b" / "c" / "three.md").write_text("three")
    return root


def test_directories_made_and_files_linked_with_their_keys(tmp_path: Path) -> None:
    source = state(tmp_path / "state")
    before = open_fds()
    filled = link_tree(source, tmp_path / "run" / "persist")
    assert open_fds() == before
    target = tmp_path / "run" / "persist"
    assert filled.directories == {"a", "a/b", "a/b/c", "empty"}
    files = {"top.md": 3, "a/one.md": 3, "a/b/two.md": 4, "a/b/c/three.md": 5}
    assert filled.files == len(files)
    assert sorted(filled.links) == sorted((link_key(os.lstat(source / rel)), ("", size))
                                          for rel, size in files.items())
    for rel in files:
        assert os.path.samefile(source / rel, target / rel)
    assert (target / "empty").is_dir() and not any((target / "empty").iterdir())


def test_without_links_every_file_is_a_copy(tmp_path: Path) -> None:
    source = state(tmp_path / "state")
    filled = link_tree(source, tmp_path / "persist", link=False)
    assert filled.links == [] and filled.files == 4
    for rel in ("top.md", "a/one.md", "a/b/two.md", "a/b/c/three.md"):
        copy = tmp_path / "persist" / rel
        assert copy.read_bytes() == (source / rel).read_bytes()
        assert copy.stat().st_nlink == 1 and copy.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_a_planted_node_is_refused_and_no_descriptor_stays_open(tmp_path: Path,
                                                                plant: str) -> None:
    source = state(tmp_path / "state")
    planted = source / "a" / "b" / "c" / "zz"
    if plant == "symlink":
        planted.symlink_to("/etc/passwd")
    else:
        os.mkfifo(planted)
    before = open_fds()
    with pytest.raises(InvalidData):
        link_tree(source, tmp_path / "persist")
    assert open_fds() == before
    assert not (tmp_path / "persist" / "a" / "b" / "c" / "zz").exists()


def test_a_deep_tree_keeps_only_its_ancestors_open(tmp_path: Path) -> None:
    source = tmp_path / "state"
    deep = source.joinpath(*[f"d{i}" for i in range(120)])
    deep.mkdir(parents=True)
    (deep / "leaf.md").write_text("leaf")
    for i in range(300):  # many siblings at the top: their descriptors are never all open
        (source / f"wide{i:03d}").mkdir()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # room for the 2 x 121 descriptors of the deepest path, not for 2 x 300 siblings
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(open_fds_count() + 260, 64), hard))
    try:
        filled = link_tree(source, tmp_path / "persist")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert len(filled.directories) == 420
    assert [key for key, _ in filled.links] == [link_key(os.lstat(deep / "leaf.md"))]
