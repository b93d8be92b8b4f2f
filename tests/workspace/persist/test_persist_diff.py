"""The change list of a publication (:func:`diff_trees`) against the straightforward walk
over every path it replaced (kept here as the oracle): only differing paths are visited now,
and the list must be the same for any pair of trees."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tavernlab.workspace.persist._persist_tree import (
    PersistChange,
    Tree,
    diff_trees,
    implied_directories,
)


def oracle(base_files: dict[str, tuple[str, int]], base_dirs: set[str], tree: Tree
           ) -> list[PersistChange]:
    """The change list as it was computed before: every path of both trees, in order."""
    changes: list[PersistChange] = []
    for path in sorted(set(base_files) | base_dirs | set(tree.files) | tree.directories):
        was_file, was_dir = path in base_files, path in base_dirs
        new = tree.files.get(path)
        is_dir = path in tree.directories
        if was_file and new is not None:
            if base_files[path][0] != new[0]:
                changes.append(PersistChange("modified", path, new[0], new[1]))
        elif was_file:
            changes.append(PersistChange("deleted", path))
            if is_dir:
                changes.append(PersistChange("directoryAdded", path))
        elif was_dir and not is_dir:
            changes.append(PersistChange("directoryDeleted", path))
            if new is not None:
                changes.append(PersistChange("added", path, new[0], new[1]))
        elif not was_dir and is_dir:
            changes.append(PersistChange("directoryAdded", path))
        elif not was_dir and new is not None:
            changes.append(PersistChange("added", path, new[0], new[1]))
    return changes


NAMES = st.sampled_from(["a", "b", "c", "d.md", "e.txt"])
PATHS = st.lists(NAMES, min_size=1, max_size=3).map("/".join)
CONTENT = st.sampled_from([("1" * 64, 1), ("2" * 64, 2), ("3" * 64, 3)])


def trees() -> st.SearchStrategy[tuple[dict[str, tuple[str, int]], set[str]]]:
    """A file inventory and a directory set (files never below files; empty dirs too)."""
    def build(files: dict[str, tuple[str, int]], extra: list[str]
              ) -> tuple[dict[str, tuple[str, int]], set[str]]:
        directories = implied_directories(files) | set(extra)
        files = {p: c for p, c in files.items()
                 if p not in directories and not any(p.startswith(f + "/") for f in files)}
        directories = {d for d in implied_directories(files) | set(extra) if d not in files
                       and not any(d.startswith(f + "/") for f in files)}
        return files, directories
    return st.builds(build, st.dictionaries(PATHS, CONTENT, max_size=8),
                     st.lists(PATHS, max_size=3))


@settings(max_examples=400, deadline=None)
@given(trees(), trees())
def test_the_change_list_is_the_oracles(base: tuple[dict[str, tuple[str, int]], set[str]],
                                        now: tuple[dict[str, tuple[str, int]], set[str]]
                                        ) -> None:
    tree = Tree(now[0], frozenset(now[1]))
    assert diff_trees(base[0], base[1], tree) == oracle(base[0], base[1], tree)


def test_one_change_in_a_large_tree_is_one_record() -> None:
    base = {f"d{i // 100}/f{i}.md": ("0" * 64, 1) for i in range(5000)}
    dirs = implied_directories(base)
    files = dict(base)
    files["d0/f0.md"] = ("9" * 64, 2)
    del files["d1/f100.md"]
    changes = diff_trees(base, dirs, Tree(files, frozenset(dirs | {"new"})))
    assert changes == [PersistChange("modified", "d0/f0.md", "9" * 64, 2),
                       PersistChange("deleted", "d1/f100.md"),
                       PersistChange("directoryAdded", "new")]
