"""The tavernlab kernel for real: started from ``kernel-spec/`` through ``JUPYTER_PATH``, a
notebook executed by nbclient, an interrupt of ``while(true){}``, and output that streams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from notebook_support import Kernel, texts
from worktree.conftest import make_repo


def test_the_kernel_spec_is_found_through_jupyter_path(jupyter_path: Path) -> None:
    spec = KernelSpecManager().get_kernel_spec("tavernlab")
    assert Path(spec.resource_dir) == jupyter_path / "kernels" / "tavernlab"
    assert spec.argv[-1] == "--config={resource_dir}/kernel_config.py"
    assert spec.display_name == "tavernlab (Python 3)"


def _notebook() -> nbformat.NotebookNode:
    cells = [
        "%%js\nconsole.log(1 + 1)",
        "%ws_shell echo hi > /output/main.md; cat /output/main.md",
        "%tavern status",
        "%tavern tree output",
        "%%js\nconst x = 1;\nthrow new Error('boom ' + x)",
        "from tavernlab.errors import NotFound\nraise NotFound('gone')",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.metadata["kernelspec"] = {"name": "tavernlab", "display_name": "tavernlab",
                                       "language": "python"}
    return notebook


def test_a_notebook_runs_in_the_tavernlab_kernel(jupyter_path: Path, tmp_path: Path) -> None:
    notebook = _notebook()
    NotebookClient(notebook, timeout=120, allow_errors=True, record_timing=False,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    nbformat.validate(notebook)
    js, shell, status, tree, failing, one_line = (cell.outputs for cell in notebook.cells)
    assert [(o.output_type, o.name, o.text) for o in js] == [("stream", "stdout", "2\n")]
    assert [(o.output_type, o.text) for o in shell] == [("stream", "hi\n")]
    assert status[0].output_type == "execute_result"
    assert status[0].data["text/plain"].startswith(f"lab: {tmp_path / '.tavernlab'}\nRun run_")
    assert "<table" in status[0].data["text/html"]
    assert tree[0].data["text/plain"].startswith("<FileTree run_")  # the widget view
    assert "main.md" in tree[1].data["text/plain"] and "main.md" in tree[1].data["text/html"]
    error = failing[-1]
    assert (error.output_type, error.ename, error.evalue) == (
        "error", "JSError", "exit status 1: Error: boom 1")
    assert error.traceback == ["notebook.js_exit: exit status 1: Error: boom 1",
                               "  at <anonymous> (<cell 5>:3:27)",
                               "    3 | throw new Error('boom ' + x)",
                               "      | " + " " * 26 + "^"]
    assert one_line[0].traceback == ["workspace.not_found: gone"]
    assert (tmp_path / ".tavernlab" / "_tauritavern").is_dir()


def test_an_interrupt_cancels_the_job_and_the_next_cell_runs(kernel: Kernel) -> None:
    def interrupt_when_ready(msg: dict[str, object]) -> None:
        content = msg["content"]
        if msg["msg_type"] == "stream" and "ready" in content["text"]:  # type: ignore[index]
            kernel.manager.interrupt_kernel()

    reply, messages = kernel.execute("%%js\nconsole.log('ready');\nwhile (true) {}",
                                     on_message=interrupt_when_ready)
    assert (reply["content"]["status"], reply["content"]["ename"]) == ("error",
                                                                       "KeyboardInterrupt")
    stderr = texts(messages, "stderr")
    assert stderr.startswith("cancelled after ") and stderr.endswith(" s\n")
    assert stderr.count("\n") == 1
    errors = [m["content"] for _, m in messages if m["msg_type"] == "error"]
    assert [e["traceback"] for e in errors] == [["KeyboardInterrupt"]]
    reply, messages = kernel.execute("%%js\nconsole.log('next')")
    assert reply["content"]["status"] == "ok"
    assert texts(messages) == "next\n"


def test_an_interrupt_cancels_a_shell_call_and_the_next_cell_runs(kernel: Kernel) -> None:
    def interrupt_when_ready(msg: dict[str, object]) -> None:
        content = msg["content"]
        if msg["msg_type"] == "stream" and "ready" in content["text"]:  # type: ignore[index]
            kernel.manager.interrupt_kernel()

    reply, messages = kernel.execute("%ws_shell echo ready; sleep 60; echo never",
                                     on_message=interrupt_when_ready)
    assert (reply["content"]["status"], reply["content"]["ename"]) == ("error",
                                                                       "KeyboardInterrupt")
    assert "never" not in texts(messages)
    reply, messages = kernel.execute("%ws_shell echo next")
    assert reply["content"]["status"] == "ok"
    assert texts(messages) == "next\n"


def test_the_first_output_arrives_before_the_cell_ends(kernel: Kernel) -> None:
    code = ("%%js\nconsole.log('first');\nconst start = Date.now();\n"
            "while (Date.now() - start < 2000) {}\nconsole.log('last')")
    reply, messages = kernel.execute(code)
    assert reply["content"]["status"] == "ok"
    streams = [(at, m) for at, m in messages if m["msg_type"] == "stream"]
    idle = next(at for at, m in messages if m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle")
    first_at, first = streams[0]
    assert first["content"]["text"] == "first\n"
    assert first_at < streams[-1][0] < idle  # 'first' came while the loop still ran


def test_shell_output_from_the_helper_thread_lands_in_its_cell(kernel: Kernel) -> None:
    reply, messages = kernel.execute("%ws_shell echo a; sleep 1; echo b")
    assert reply["content"]["status"] == "ok"
    assert texts(messages) == "a\nb\n"  # only this cell's messages are collected
    assert len([m for _, m in messages if m["msg_type"] == "stream"]) == 2


def test_a_cell_router_sends_late_thread_output_to_its_cell(kernel: Kernel) -> None:
    started, _ = kernel.execute(
        "import threading, time\nfrom tavernlab.notebook import CellRouter\n"
        "router = CellRouter(get_ipython())\n"
        "def late():\n    time.sleep(0.5)\n"
        "    with router.routed():\n        print('late', flush=True)\n"
        "threading.Thread(target=late).start()")
    cell = started["parent_header"]["msg_id"]
    kernel.others.clear()
    reply, messages = kernel.execute("import time\ntime.sleep(1.5)")
    assert reply["content"]["status"] == "ok"
    assert texts(messages) == ""  # without routing, 'late' would land in this later cell
    late = [m for m in kernel.others if m["msg_type"] == "stream"]
    assert [(m["parent_header"]["msg_id"], m["content"]["text"]) for m in late] == [
        (cell, "late\n")]


def test_an_interrupt_cancels_a_provision_and_removes_its_worktree(
        kernel: Kernel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Tavern Lab")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "lab@example.invalid")
    repo = make_repo(tmp_path)
    lines: list[str] = []

    def interrupt_during_deps(msg: dict[str, Any]) -> None:
        if msg["msg_type"] in ("display_data", "update_display_data"):
            lines.append(msg["content"]["data"]["text/plain"])
            if lines[-1].endswith("slot granted, starting deps"):
                kernel.manager.interrupt_kernel()

    kernel.execute("from tavernlab.notebook import set_progress_factory; "
                   "set_progress_factory(None)")  # the text line, to watch for the phase
    reply, messages = kernel.execute(
        f"%worktree new slow --repo {repo.path} --deps-cmd 'sleep 60'",
        on_message=interrupt_during_deps)
    assert (reply["content"]["status"], reply["content"]["ename"]) == ("error",
                                                                       "KeyboardInterrupt")
    assert texts(messages, "stderr").startswith("cancelled after ")
    assert lines[-1].endswith("done: cancelled")
    assert not (tmp_path / "_worktrees" / "slow").exists()
    assert repo.branches("wt/slow") == ""


def test_a_provision_inside_a_run_is_its_call_and_an_interrupt_is_recorded(
        kernel: Kernel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Tavern Lab")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "lab@example.invalid")
    repo = make_repo(tmp_path)
    reply, _ = kernel.execute(
        "from tavernlab.host import DEFAULT_TOOLS, Lab, worktree_tools\n"
        "from tavernlab.notebook import current_state, set_progress_factory\n"
        "set_progress_factory(None)\n"
        f"tool_lab = Lab({str(tmp_path / 'lab')!r}, tools=[*DEFAULT_TOOLS, worktree_tools])\n"
        "session = current_state(get_ipython())\n"
        "session.use_lab(tool_lab)\n"
        "run = session.new_run(chat_id='wt')")
    assert reply["content"]["status"] == "ok"
    reply, _ = kernel.execute(f"%worktree new quick --repo {repo.path} --no-setup")
    assert reply["content"]["status"] == "ok"
    lines: list[str] = []

    def interrupt_during_deps(msg: dict[str, Any]) -> None:
        if msg["msg_type"] in ("display_data", "update_display_data"):
            lines.append(msg["content"]["data"]["text/plain"])
            if lines[-1].endswith("slot granted, starting deps"):
                kernel.manager.interrupt_kernel()

    reply, messages = kernel.execute(
        f"%worktree new slow --repo {repo.path} --deps-cmd 'sleep 60'",
        on_message=interrupt_during_deps)
    assert (reply["content"]["status"], reply["content"]["ename"]) == ("error",
                                                                       "KeyboardInterrupt")
    assert texts(messages, "stderr").startswith("cancelled after ")
    assert not (tmp_path / "_worktrees" / "slow").exists()
    assert repo.branches("wt/slow") == ""
    reply, messages = kernel.execute(
        "import json\n"
        "calls = [json.loads(l) for l in (run.dir / 'events.jsonl').read_text().splitlines()]\n"
        "print(json.dumps([(c['type'], c['payload']['toolId'], c['payload'].get('errorCode'))\n"
        "    for c in calls if c['type'] in ('tool_call_completed', 'tool_call_failed')]))\n"
        "session.forget_lab(); tool_lab.close()")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert json.loads(texts(messages).splitlines()[-1]) == [
        ["tool_call_completed", "worktree.provision", None],
        ["tool_call_failed", "worktree.provision", "tool.interrupted"]]
