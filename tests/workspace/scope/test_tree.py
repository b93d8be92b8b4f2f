"""run.tree(): the workspace as the model sees it, with an access answer at every node."""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path

import pytest

from tavernlab.errors import AccessDenied, InvalidData, NotFound
from tavernlab.host import Lab, Run
from tavernlab.workspace.roots import Access

SKILL_MD = "---\nname: demo\ndescription: Greets {{user}}.\n---\nHello {{user}}.\n"


def test_the_model_view_with_access_badges(run: Run) -> None:
    run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "hi"})
    tree = run.tree()
    assert (tree.path, tree.kind, tree.access) == ("", "directory", Access("read_only", False))
    assert [c.name for c in tree.children or []] == [
        "output", "persist", "plan", "scratch", "skills", "summaries", "tool-results"]
    output = tree.find("output")
    assert output is not None and output.access == Access("read_only", True)
    node = tree.find("output/a.md")
    assert node is not None
    assert (node.kind, node.size, node.access) == ("file", 2, Access("writable", False))
    assert node.sha256 == hashlib.sha256(b"hi").hexdigest()
    results = tree.find("tool-results")
    assert results is not None and results.access == Access("read_only", False)
    assert all(n.access.level == "read_only" for n in results.walk())
    assert tree.find("input") is None and tree.find("run.json") is None


def test_hidden_files_only_on_request(run: Run) -> None:
    run.call_tool("workspace.list_files", {})
    names = {c.name: c.access.level for c in run.tree(include_hidden=True).children or []}
    assert {k: v for k, v in names.items() if v == "hidden"} == {
        "events.jsonl": "hidden", "input": "hidden", "journal.jsonl": "hidden",
        "manifest.json": "hidden", "run.json": "hidden", "tool-args": "hidden"}
    snapshot = run.tree("input", include_hidden=True).find("input/prompt_snapshot.json")
    assert snapshot is not None and snapshot.access == Access("hidden", False)
    with pytest.raises(AccessDenied, match=r"`input` is not readable for this task\."):
        run.tree("input")


def test_depth_and_bad_paths(run: Run) -> None:
    run.shell("mkdir -p /scratch/a/b && echo x > /scratch/a/b/c.md")
    shallow = run.tree("scratch", depth=1)
    a = shallow.find("scratch/a")
    assert a is not None and a.kind == "directory" and a.children is None
    assert run.tree("scratch", depth=0).children is None
    full = run.tree("scratch")
    assert [n.path for n in full.walk()] == [
        "scratch", "scratch/a", "scratch/a/b", "scratch/a/b/c.md"]
    with pytest.raises(NotFound):
        run.tree("scratch/none")
    with pytest.raises(InvalidData):
        run.tree("../x")
    with pytest.raises(InvalidData, match="depth must be a non-negative integer"):
        run.tree(depth=-1)


def test_planted_nodes_are_refused_entries_not_failures(run: Run, tmp_path: Path) -> None:
    scratch = run.workspace_dir / "scratch"
    os.mkfifo(scratch / "pipe")
    os.symlink("/etc/passwd", scratch / "link.md")
    (tmp_path / "outside.md").write_text("x")
    os.link(tmp_path / "outside.md", scratch / "hard.md")
    sock = socket.socket(socket.AF_UNIX)
    here = os.getcwd()
    try:
        os.chdir(scratch)  # a relative name: the absolute path is too long for AF_UNIX
        sock.bind("sock")
        os.chdir(here)
        (scratch / "fine.md").write_text("ok")
        nodes = {n.name: n.kind for n in run.tree("scratch").children or []}
    finally:
        os.chdir(here)
        sock.close()
    assert nodes == {"fine.md": "file", "hard.md": "refused", "link.md": "refused",
                     "pipe": "refused", "sock": "refused"}
    reasons = {n.name: n.reason for n in run.tree("scratch").children or []}
    assert reasons == {"fine.md": None, "hard.md": "hard_link", "link.md": "symlink",
                       "pipe": "fifo", "sock": "socket"}
    refused = run.tree("scratch").find("scratch/pipe")
    assert refused is not None and refused.sha256 is None


def test_skills_show_the_projected_view(lab: Lab, tmp_path: Path) -> None:
    package = tmp_path / "demo"
    (package / "scripts").mkdir(parents=True)
    (package / "SKILL.md").write_text(SKILL_MD)
    (package / "scripts" / "main.js").write_text("console.log('{{user}}')\n")
    lab.skills.install(package)
    run = lab.start_run(chat_id="a", context={"macroContext": {"names": {"user": "Mika"}}})
    skills = run.tree("skills")
    md = skills.find("skills/demo/SKILL.md")
    assert md is not None and md.access == Access("read_only", False)
    projected = run.read("skills/demo/SKILL.md").encode()
    assert b"Hello Mika." in projected
    assert (md.size, md.sha256) == (len(projected), hashlib.sha256(projected).hexdigest())
    script = skills.find("skills/demo/scripts/main.js")
    assert script is not None and script.size == len("console.log('{{user}}')\n")


def test_a_sub_agent_sees_its_own_roots(run: Run) -> None:
    from tavernlab.workspace.roots import Profile

    critic = run.start_subagent("critic", Profile.model_validate(
        {"workspace": {"visibleRoots": ["output"], "writableRoots": []}}))
    from tavernlab.workspace.scope import build_tree

    names = [c.name for c in build_tree(critic.scope).children or []]
    assert names == ["output", "skills", "tool-results"]
    output = build_tree(critic.scope).find("output")
    assert output is not None and output.access == Access("read_only", False)
