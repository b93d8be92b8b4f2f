"""FileTree without a frontend: the nodes after a scripted run, live updates from the tool,
the shell and a script, the side pane, selection, hidden files, closing."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import traitlets

from tavernlab.events import FileChange
from tavernlab.host import Run
from tavernlab.notebook.widgets import FileTree, TreeState
from tavernlab.workspace.roots import Access

Opened = Callable[[Any], Any]


def rows(tree: FileTree, below: str = "") -> list[tuple[str, str, int | None, str, bool]]:
    """``(path, kind, size, access, creates)`` of the nodes (outside tool-results/)."""
    return [(n["path"], n["kind"], n["size"], n["access"], n["creates"]) for n in tree.nodes
            if n["path"].startswith(below) and not n["path"].startswith("tool-results")]


def scripted(run: Run) -> None:
    run.call_tool("workspace.write_file", {"path": "output/main.md",
                                           "content": "# Notes\nline 2\n"})
    run.js(["skills/greet/scripts/greet.js", "Ada"])
    run.shell("mkdir -p scratch/data && printf 'a,b\\n1,2\\n' > scratch/data/t.csv")


def test_after_a_scripted_run_every_node_has_its_size_and_access(greet_run: Run,
                                                                   opened: Opened) -> None:
    scripted(greet_run)
    tree = opened(FileTree(greet_run))
    assert rows(tree) == [
        ("output", "directory", None, "read_only", True),
        ("output/greeting.md", "file", 12, "writable", False),
        ("output/main.md", "file", 15, "writable", False),
        ("persist", "directory", None, "read_only", True),
        ("plan", "directory", None, "read_only", True),
        ("scratch", "directory", None, "read_only", True),
        ("scratch/data", "directory", None, "writable", True),
        ("scratch/data/t.csv", "file", 8, "writable", False),
        ("skills", "directory", None, "read_only", False),
        ("skills/greet", "directory", None, "read_only", False),
        ("skills/greet/scripts", "directory", None, "read_only", False),
        ("skills/greet/scripts/greet.js", "file", 191, "read_only", False),
        ("skills/greet/SKILL.md", "file", 79, "read_only", False),
        ("summaries", "directory", None, "read_only", True),
    ]
    results = [n for n in tree.nodes if n["path"].startswith("tool-results/")]
    assert [n["kind"] for n in results] == ["directory", "file", "file"]
    assert {n["access"] for n in results} == {"read_only"}
    assert [n["depth"] for n in tree.nodes[:3]] == [0, 1, 1]
    assert tree.run_id == greet_run.id and tree.root == ""


def test_the_tree_matches_run_tree_and_shows_refused_nodes(run: Run, outside: Path,
                                                           opened: Opened) -> None:
    os.symlink(outside / "secret.md", run.workspace_dir / "scratch" / "link.md")
    tree = opened(FileTree(run))
    refused = [n for n in tree.nodes if n["kind"] == "refused"]
    assert [(n["path"], n["reason"]) for n in refused] == [("scratch/link.md", "symlink")]
    assert {n["path"] for n in tree.nodes} == {n.path for n in run.tree().walk()} - {""}


def test_a_subtree_shows_only_what_is_below_its_root(greet_run: Run, opened: Opened) -> None:
    scripted(greet_run)
    tree = opened(FileTree(greet_run, "scratch"))
    assert tree.root == "scratch"
    assert rows(tree) == [("scratch/data", "directory", None, "writable", True),
                          ("scratch/data/t.csv", "file", 8, "writable", False)]
    greet_run.call_tool("workspace.write_file", {"path": "output/elsewhere.md", "content": "x"})
    greet_run.shell("echo 1 > scratch/one.txt")
    tree.settle()
    assert [p for p, *_ in rows(tree)] == ["scratch/data", "scratch/data/t.csv",
                                           "scratch/one.txt"]


def test_hidden_run_files_show_only_when_asked(run: Run, opened: Opened) -> None:
    tree = opened(FileTree(run))
    assert "run.json" not in {n["path"] for n in tree.nodes}
    tree.show_hidden = True
    tree.settle()
    hidden = {n["path"]: n["access"] for n in tree.nodes if n["access"] == "hidden"}
    assert {"run.json", "events.jsonl", "manifest.json", "input"} <= set(hidden)
    tree.selected = "run.json"
    tree.settle()
    assert tree.preview["kind"] == "text" and tree.preview["access"] == "hidden"
    assert '"status"' in "\n".join(tree.preview["lines"])
    assert opened(FileTree(run, show_hidden=True)).nodes == tree.nodes


# -- live ---------------------------------------------------------------------------------


def test_a_file_the_tool_writes_appears_flashed(run: Run, opened: Opened) -> None:
    tree = opened(FileTree(run))
    run.call_tool("workspace.write_file", {"path": "output/new.md", "content": "hello"})
    assert tree.settle()
    assert ("output/new.md", "file", 5, "writable", False) in rows(tree)
    assert "output/new.md" in tree.flash["paths"]
    first = tree.flash["serial"]
    run.call_tool("workspace.write_file", {"path": "output/new.md", "content": "hello again"})
    tree.settle()
    assert ("output/new.md", "file", 11, "writable", False) in rows(tree)
    assert tree.flash["serial"] > first and "output/new.md" in tree.flash["paths"]


def test_the_shell_creates_changes_moves_and_removes(run: Run, opened: Opened) -> None:
    tree = opened(FileTree(run))
    run.shell("mkdir -p scratch/d/e && echo one > scratch/d/e/f.txt && echo x > scratch/g.txt")
    tree.settle()
    assert rows(tree, "scratch/") == [
        ("scratch/d", "directory", None, "writable", True),
        ("scratch/d/e", "directory", None, "writable", True),
        ("scratch/d/e/f.txt", "file", 4, "writable", False),
        ("scratch/g.txt", "file", 2, "writable", False)]
    run.shell("mv scratch/d plan/moved && echo longer > scratch/g.txt")
    tree.settle()
    assert rows(tree, "scratch/") + rows(tree, "plan/") == [
        ("scratch/g.txt", "file", 7, "writable", False),
        ("plan/moved", "directory", None, "writable", True),
        ("plan/moved/e", "directory", None, "writable", True),
        ("plan/moved/e/f.txt", "file", 4, "writable", False)]
    assert set(tree.flash["paths"]) >= {"plan/moved", "scratch/g.txt"}
    run.shell("rm -r plan/moved && rm scratch/g.txt")
    tree.settle()
    assert rows(tree, "scratch/") + rows(tree, "plan/") == []
    assert set(tree.flash["paths"]) >= {"plan", "scratch"}


def test_a_skill_script_s_file_appears(greet_run: Run, opened: Opened) -> None:
    tree = opened(FileTree(greet_run))
    assert rows(tree, "output/") == []
    greet_run.js(["skills/greet/scripts/greet.js", "Ada"])
    tree.settle()
    assert rows(tree, "output/") == [("output/greeting.md", "file", 12, "writable", False)]
    assert tree.flash["paths"] == ["output/greeting.md"]


def test_state_is_written_on_the_widget_thread_only(run: Run, opened: Opened) -> None:
    """Writers on several threads at once: every trait write happens on the pump thread and
    the final state is the workspace's."""
    tree = opened(FileTree(run))
    writers: set[str] = set()
    tree.observe(lambda change: writers.add(threading.current_thread().name),
                 names=["nodes", "flash"])
    threads = [threading.Thread(target=run.js, args=([
        "-e", f"import {{workspace}} from '@tauritavern/runtime';"
              f"for (let i = 0; i < 5; i++) await workspace.writeText('scratch/t{n}-' + i + "
              f"'.txt', 'x');"],)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    tree.settle()
    assert writers == {"tavernlab-widgets"}
    written = sorted(p for p, *_ in rows(tree, "scratch/"))
    assert written == sorted(f"scratch/t{n}-{i}.txt" for n in range(4) for i in range(5))


# -- selection and the side pane ----------------------------------------------------------


def test_selecting_a_text_file_shows_its_first_200_lines_and_more(run: Run,
                                                                  opened: Opened) -> None:
    text = "".join(f"line {i}\n" for i in range(1, 251))
    run.call_tool("workspace.write_file", {"path": "output/long.md", "content": text})
    tree = opened(FileTree(run, selected="output/long.md"))
    tree.settle()
    preview = tree.preview
    assert (preview["kind"], preview["total_lines"], len(preview["lines"])) == ("text", 250, 200)
    assert preview["lines"][0] == "line 1" and preview["lines"][-1] == "line 200"
    assert preview["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert (preview["size"], preview["access"]) == (len(text), "writable")
    tree.preview_lines = 400
    tree.settle()
    assert len(tree.preview["lines"]) == 250 and tree.preview["lines"][-1] == "line 250"


def test_a_binary_file_shows_its_size_and_sha256(run: Run, opened: Opened) -> None:
    data = bytes(range(256))
    (run.workspace_dir / "scratch" / "blob.bin").write_bytes(data)
    tree = opened(FileTree(run))
    tree.selected = "scratch/blob.bin"
    tree.settle()
    assert tree.preview == {
        "path": "scratch/blob.bin", "name": "blob.bin", "access": "writable",
        "creates": False, "size": 256, "sha256": hashlib.sha256(data).hexdigest(),
        "kind": "binary"}


def test_a_directory_and_a_skill_file_in_the_pane(greet_run: Run, opened: Opened) -> None:
    tree = opened(FileTree(greet_run, selected="skills/greet"))
    tree.settle()
    assert (tree.preview["kind"], tree.preview["entries"]) == ("directory", 2)
    tree.selected = "skills/greet/SKILL.md"
    tree.settle()
    assert tree.preview["lines"] == GREET_LINES
    assert tree.preview["access"] == "read_only"


GREET_LINES = ["---", "name: greet", "description: Greets someone.", "---", "# greet",
               "Run scripts/greet.js."]


def test_selected_is_checked_and_follows_the_file(run: Run, opened: Opened) -> None:
    tree = opened(FileTree(run))
    with pytest.raises(traitlets.TraitError, match=r"no node `output/none\.md` in the tree"):
        tree.selected = "output/none.md"
    assert tree.selected == ""
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "one"})
    tree.settle()
    tree.selected = "output/a.md"
    tree.settle()
    assert tree.preview["lines"] == ["one"]
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "two\nlines"})
    tree.settle()
    assert tree.preview["lines"] == ["two", "lines"]
    run.shell("rm output/a.md")
    tree.settle()
    assert tree.preview == {"path": "output/a.md", "kind": "missing",
                            "message": "no longer in the workspace"}
    tree.selected = ""
    tree.settle()
    assert tree.preview == {}


# -- closing --------------------------------------------------------------------------------


def test_closing_unsubscribes_and_nothing_changes_after(run: Run) -> None:
    feed = run._core.feed
    before = feed.subscribers
    tree = FileTree(run)
    assert feed.subscribers == before + 1
    nodes = list(tree.nodes)
    tree.close()
    assert tree.closed and feed.subscribers == before
    run.call_tool("workspace.write_file", {"path": "output/after.md", "content": "x"})
    run.shell("echo y > scratch/after.txt")
    assert tree.settle()
    assert tree.nodes == nodes and tree._inbox.drain() == []
    tree.close()  # twice is fine


# -- the state on its own ---------------------------------------------------------------------


def _access(path: str, directory: bool) -> Access:
    return Access("writable", directory)


def test_tree_state_applies_records_idempotently(run: Run) -> None:
    run.shell("mkdir -p scratch/a && echo 1 > scratch/a/x")
    state = TreeState(run.tree(), _access, include_hidden=False)
    created = FileChange(path="scratch/a/x", change="created", node="file", size=2,
                         sha256="0" * 64, writer="tool")
    moved = FileChange(path="scratch/b", change="moved", node="directory",
                       from_path="scratch/a", writer="tool")
    before = state.rows()
    assert state.apply(created) == ["scratch/a/x"] and state.rows() == before
    assert state.apply(moved) == ["scratch/b"]
    assert [r["path"] for r in state.rows() if r["path"].startswith("scratch/")] == [
        "scratch/b", "scratch/b/x"]
    assert state.apply(moved) == ["scratch/b"]
    deep = FileChange(path="plan/p/q/r.md", change="created", node="file", size=1,
                      writer="tool")
    state.apply(deep)
    assert [r["path"] for r in state.rows() if r["path"].startswith("plan/")] == [
        "plan/p", "plan/p/q", "plan/p/q/r.md"]
    removed = FileChange(path="plan/p", change="removed", node="directory", writer="tool")
    assert state.apply(removed) == ["plan"] and state.apply(removed) == []
    assert [r["path"] for r in state.rows() if r["path"].startswith("plan/")] == []
