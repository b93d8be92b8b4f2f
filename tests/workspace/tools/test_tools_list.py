"""``workspace.list_files`` (docs/workspace.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tavernlab.host import Lab, Run

#: The ``put`` fixture (tests/conftest.py): a shell-like unchecked write.
Put = Callable[[Run, str, str], None]


ROOTS = ["output", "persist", "plan", "scratch", "skills", "summaries", "tool-results"]


@pytest.mark.parametrize("args", [{}, {"path": ""}, {"path": "."}, {"path": "./"},
                                  {"path": "   "}, {"path": " . "}, {"path": "\t./\n"},
                                  {"path": None}, {"depth": 1}])
def test_the_root_lists_the_visible_roots(run: Run, args: dict[str, object]) -> None:
    """Acceptance 1 and 2."""
    result = run.call_tool("workspace.list_files", args)
    assert not result.is_error
    assert result.content == "\n".join(f"{r}/" for r in ROOTS)
    assert result.structured == {"entries": [{"path": r, "kind": "directory"} for r in ROOTS],
                                 "truncated": False}
    assert result.resource_refs == ROOTS


def test_depth_too_large(run: Run) -> None:
    """Acceptance 3."""
    result = run.call_tool("workspace.list_files", {"depth": 5})
    assert (result.is_error, result.error_code, result.content) == (
        True, "workspace.list_depth_too_large", "depth must be <= 4")
    assert run.call_tool("workspace.list_files", {"depth": 4}).is_error is False


def test_depth_zero(run: Run) -> None:
    """tavernlab choice for depth 0."""
    result = run.call_tool("workspace.list_files", {"depth": 0})
    assert (result.error_code, result.content) == ("tool.invalid_arguments",
                                                   "depth must be >= 1")


def test_negative_depth_and_a_non_string_path(run: Run) -> None:
    """Acceptance 5."""
    negative = run.call_tool("workspace.list_files", {"depth": -1})
    assert (negative.error_code, negative.content) == (
        "tool.invalid_arguments", "depth must be a non-negative integer")
    number = run.call_tool("workspace.list_files", {"path": 7})
    assert (number.error_code, number.content) == ("tool.invalid_arguments",
                                                   "path must be a string")


def test_a_listing_path_is_trimmed(run: Run, put: Put) -> None:
    put(run, "scratch/b.md")
    result = run.call_tool("workspace.list_files", {"path": "  scratch  "})
    assert (result.content, result.resource_refs) == ("scratch/b.md", ["scratch/b.md"])


def test_directories_files_and_missing_paths(run: Run, put: Put) -> None:
    """Acceptance 4, plus content and structured payload of a nested listing."""
    put(run, "scratch/b.md")
    put(run, "scratch/a/one.md")
    put(run, "scratch/a/deeper/two.md")
    put(run, "scratch/a/deeper/deepest/three.md")
    result = run.call_tool("workspace.list_files", {"path": "scratch"})
    assert result.content == "scratch/a/\nscratch/a/deeper/\nscratch/a/one.md\nscratch/b.md"
    assert result.structured == {"entries": [
        {"path": "scratch/a", "kind": "directory"},
        {"path": "scratch/a/deeper", "kind": "directory"},
        {"path": "scratch/a/one.md", "kind": "file"},
        {"path": "scratch/b.md", "kind": "file"},
    ], "truncated": False}
    assert result.resource_refs == ["scratch/a", "scratch/a/deeper", "scratch/a/one.md",
                                    "scratch/b.md"]
    deep = run.call_tool("workspace.list_files", {"path": "scratch/", "depth": 4})
    assert "scratch/a/deeper/deepest/three.md" in deep.content.split("\n")
    single = run.call_tool("workspace.list_files", {"path": "scratch/b.md"})
    assert (single.content, single.structured) == (
        "scratch/b.md", {"entries": [{"path": "scratch/b.md", "kind": "file"}],
                         "truncated": False})
    missing = run.call_tool("workspace.list_files", {"path": "scratch/nope"})
    assert (missing.error_code, missing.content) == (
        "workspace.path_not_found", "workspace path `scratch/nope` was not found.")


def test_root_listing_at_depth_two_includes_children(run: Run, put: Put) -> None:
    put(run, "output/main.md")
    result = run.call_tool("workspace.list_files", {})
    assert result.content.split("\n") == [f"{r}/" for r in ROOTS] + ["output/main.md"]


def test_empty_directories(run: Run) -> None:
    for path in ("plan", "skills"):
        result = run.call_tool("workspace.list_files", {"path": path})
        assert result.content == "No visible workspace files found."
        assert result.structured == {"entries": [], "truncated": False}
        assert result.resource_refs == []


def test_at_most_200_entries(run: Run, put: Put) -> None:
    for i in range(205):
        put(run, f"scratch/f{i:03d}.md")
    result = run.call_tool("workspace.list_files", {"path": "scratch"})
    lines = result.content.split("\n")
    assert len(lines) == 201
    assert lines[0] == "scratch/f000.md"
    assert lines[199] == "scratch/f199.md"
    assert lines[-1] == "... truncated at 200 entries"
    assert result.structured["truncated"] is True
    assert len(result.structured["entries"]) == 200
    assert len(result.resource_refs) == 200


def test_exactly_200_entries_is_not_truncated(run: Run, put: Put) -> None:
    for i in range(200):
        put(run, f"scratch/f{i:03d}.md")
    result = run.call_tool("workspace.list_files", {"path": "scratch"})
    assert result.structured["truncated"] is False
    assert "truncated" not in result.content


def test_a_narrow_profile_lists_its_roots(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice", profile={"workspace": {
        "visibleRoots": ["scratch", "output"], "writableRoots": ["scratch"]}})
    result = run.call_tool("workspace.list_files", {})
    assert result.content == "output/\nscratch/\nskills/\ntool-results/"


def test_session_roots(lab: Lab) -> None:
    run = lab.start_run(session=lab.sessions.create("t").id)
    result = run.call_tool("workspace.list_files", {"depth": 1})
    assert result.content == "skills/\ntmp/\ntool-results/\nwork/"
