"""The widgets where users see them: JupyterLab 4 in headless Chromium.

One notebook installs a skill, runs its script and shows ``run.show()``; the test checks the
DOM (the written file with its writable badge, the call bars, a bar's result on click, a file
written by a later cell appearing without a reload, a running call while its cell blocks)
and saves screenshots. A second notebook provisions a worktree with a slow setup hook and
clicks Cancel while the cell still blocks; the worktree and its branch must be gone.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from lab_server import NotebookPage, write_notebook

GREET_JS = """import {workspace} from '@tauritavern/runtime';
const name = process.argv[2] ?? 'world';
await workspace.writeText('output/greeting.md', `Hello, ${name}!\\n`);
console.log(`greeted ${name}`);
"""
GREET_MD = "---\nname: greet\ndescription: Greets someone.\n---\n# greet\nRun scripts/greet.js.\n"


def greet_skill(root: Path) -> Path:
    (root / "scripts").mkdir(parents=True)
    (root / "SKILL.md").write_text(GREET_MD)
    (root / "scripts" / "greet.js").write_text(GREET_JS)
    return root


def run_cells(lab_dir: Path, skill: Path) -> list[str]:
    return [
        # 0: a lab, the skill, a run
        f"from tavernlab.host import Lab\nlab = Lab({str(lab_dir)!r})\n"
        f"lab.skills.install({str(skill)!r})\n"
        "run = lab.start_run(chat_id='alice', skills=['greet'])",
        # 1: the script, a tool call, a shell call, a failing call
        "print(run.js(['skills/greet/scripts/greet.js', 'Ada']).stdout)\n"
        "run.call_tool('workspace.write_file', {'path': 'output/notes.md',\n"
        "              'content': ''.join(f'line {i}\\n' for i in range(1, 301))})\n"
        "print(run.shell('mkdir -p scratch/data && echo a,b > scratch/data/t.csv && ls scratch')"
        ".stdout)\n"
        "run.call_tool('workspace.read_file', {'path': 'nope/missing.md'}).error_code",
        # 2: the view
        "run.show()",
        # 3: a later cell writes a file
        "print(run.shell('echo late > scratch/late.txt').exit_code)",
        # 4: a call that runs while the cell blocks
        "run.shell('sleep 3; echo slow').stdout",
    ]


def test_run_show_tree_and_timeline(notebook: NotebookPage, lab_root: Path,
                                    tmp_path: Path) -> None:
    page = notebook.page
    write_notebook(lab_root / "run.ipynb",
                   run_cells(tmp_path / "lab", greet_skill(tmp_path / "greet")))
    assert notebook.open("run.ipynb") == "tavernlab"
    assert notebook.run_cell(0) == ""
    assert "greeted Ada" in notebook.run_cell(1)
    notebook.run_cell(2)

    # the tree: the written file with its writable badge
    greeting = page.locator('.tl-node[data-path="output/greeting.md"]')
    greeting.wait_for()
    assert greeting.locator(".tl-badge-writable").inner_text() == "writable"
    assert page.locator('.tl-node[data-path="skills/greet"] .tl-badge-read_only').count() == 1
    # the timeline: one bar per call and job
    bars = page.locator(".tl-bar-row")
    bars.first.wait_for()
    kinds = [bars.nth(i).get_attribute("data-kind") for i in range(bars.count())]
    assert kinds == ["js", "tool", "shell", "tool"]
    assert bars.nth(3).get_attribute("data-status") == "error"
    notebook.shot("01-run-show")

    # clicking a bar shows its arguments and result
    page.locator('.tl-bar-row[data-kind="shell"]').click()
    page.locator(".tl-detail .tl-result").wait_for()
    assert page.locator(".tl-detail .tl-result").inner_text() == "Exit code: 0\ndata"
    assert "mkdir -p scratch/data" in page.locator(".tl-detail .tl-code").first.inner_text()
    assert "scratch/data/t.csv" in page.locator(".tl-detail .tl-files").inner_text()
    notebook.shot("02-bar-selected", ".tl-timeline")

    # selecting a text file shows its first 200 lines, "more" shows the rest
    page.locator('.tl-node[data-path="output/notes.md"]').click()
    more = page.locator(".tl-preview .tl-more")
    more.wait_for()
    assert more.inner_text() == "Show 100 more lines (200 of 300 shown)"
    notebook.shot("03-file-preview", ".tl-tree")
    more.click()
    page.wait_for_function(
        "() => document.querySelector('.tl-preview .tl-code').textContent.includes('line 300')")
    assert page.locator(".tl-preview .tl-more").count() == 0

    # a later cell's file appears without a reload, flashed
    assert notebook.run_cell(3).strip() == "0"
    late = page.locator('.tl-node[data-path="scratch/late.txt"]')
    late.wait_for()
    assert late.locator(".tl-badge-writable").count() == 1
    notebook.shot("04-late-file-flash", ".tl-tree")

    # the filter box narrows the tree by name; the hidden run files come on request
    page.locator(".tl-tree .tl-filter").fill("late")
    page.wait_for_function("() => document.querySelectorAll('.tl-node').length === 2")
    assert [n.get_attribute("data-path") for n in page.locator(".tl-node").all()] == [
        "scratch", "scratch/late.txt"]
    page.locator(".tl-tree .tl-filter").fill("")
    page.locator(".tl-tree .tl-check input").check()
    page.locator('.tl-node[data-path="run.json"] .tl-badge-hidden').wait_for()

    # a running call shows while its cell blocks, then ends
    notebook.start_cell(4)
    page.locator('.tl-bar-row[data-status="running"]').wait_for()
    notebook.shot("05-running-call", ".tl-timeline")
    assert "slow" in notebook.wait_cell(4)
    page.wait_for_function(
        "() => document.querySelectorAll('.tl-bar-row[data-status=\"running\"]').length === 0")
    # each cell is a round: the rounds of cells 1 and 3 end with their auto-commit
    bars = page.locator(".tl-bar-row")
    assert [bars.nth(i).get_attribute("data-kind") for i in range(bars.count())] == [
        "js", "tool", "shell", "tool", "commit", "shell", "commit", "shell"]

    # filters: hide the shell calls
    page.locator('.tl-chip[data-filter="kinds:shell"]').click()
    page.wait_for_function(
        "() => document.querySelectorAll('.tl-bar-row[data-kind=\"shell\"]').length === 0")
    assert page.locator(".tl-bar-row").count() == 5
    notebook.shot("06-filtered")


def git(cwd: Path, *args: str, env: dict[str, str]) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True, env=env)
    return done.stdout


def test_cancel_in_a_provisioning_widget_removes_the_worktree(
        notebook: NotebookPage, lab_root: Path, tmp_path: Path,
        kernel_env: dict[str, str]) -> None:
    page = notebook.page
    env = {"PATH": "/usr/bin:/bin", **kernel_env}
    repo = tmp_path / "work" / "app"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main", env=env)
    (repo / "README.md").write_text("hello\n")
    (repo / "agentproto.json").write_text(json.dumps(
        {"worktree": {"setup": "echo installing dependencies; echo started; sleep 120"}}))
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "-m", "initial", env=env)
    write_notebook(lab_root / "provision.ipynb", [
        f"%worktree new slow-setup --repo {repo} --base main"])  # the widget is the progress
    notebook.open("provision.ipynb")
    notebook.start_cell(0)
    page.locator("pre.tl-hook-output:has-text('started')").wait_for(timeout=60_000)
    worktree = repo.parent / "_worktrees" / "slow-setup"
    assert worktree.is_dir()
    assert git(repo, "branch", "--list", "wt/slow-setup", env=env).split() == ["+", "wt/slow-setup"]
    notebook.shot("07-provisioning", ".tl-provision")

    page.locator(".tl-provision button:has-text('Cancel')").click()
    output = notebook.wait_cell(0, timeout=60_000)
    assert "worktree.provision_cancelled" in output
    assert not worktree.exists()
    assert git(repo, "branch", "--list", "wt/slow-setup", env=env) == ""
    page.locator(".tl-provision:has-text('worktree and branch removed')").wait_for()
    notebook.shot("08-cancelled", ".tl-provision")
