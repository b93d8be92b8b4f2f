"""``%worktree agent`` in the real tavernlab kernel against a stand-in agentproto daemon (a
real MCP server made with the ``mcp`` package, whose scripted coding agent writes and commits
``agent.txt``): the gate passes and ``--yes`` cleans up, a failing gate keeps the worktree, a
front end that takes no input gets the approval refused (the worktree stays), an answer typed
into the notebook approves, and an unreachable daemon is one line naming AGENTPROTO_MCP_URL."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from notebook_support import Kernel, texts
from worktree.conftest import Repo, make_repo
from worktree.test_worktree_agent_cli import Daemon, start_daemon

PROMPT = "Gate passed. Approve worktree cleanup?"
Messages = list[tuple[float, dict[str, Any]]]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel: Kernel) -> Repo:
    """A repository with a bare origin; the kernel works inside it with a private HOME and
    git identity (which the stand-in daemon inherits too) and a lab elsewhere."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    for role in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{role}_NAME"] = "Tavern Lab"
        env[f"GIT_{role}_EMAIL"] = "lab@example.invalid"
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    base = tmp_path / "work"
    base.mkdir()
    made = make_repo(base)
    run(kernel, f"import os\nos.environ.update({env!r})\nos.chdir({str(made.path)!r})\n"
                f"%config TavernMagics.lab_path = {str(tmp_path / 'lab')!r}")
    return made


@pytest.fixture
def daemon(tmp_path: Path, repo: Repo, kernel: Kernel) -> Iterator[Daemon]:
    for started in start_daemon(tmp_path, "commit"):
        run(kernel, f"os.environ['AGENTPROTO_MCP_URL'] = {started.url!r}")
        yield started


def run(kernel: Kernel, code: str, **options: Any) -> Messages:
    reply, messages = kernel.execute(code, **options)
    assert reply["content"]["status"] == "ok", (reply["content"], texts(messages, "stderr"))
    return messages


def result_of(kernel: Kernel) -> dict[str, Any]:
    """The last ``%worktree agent`` result (``r``) and the current worktree's path."""
    messages = run(kernel, "from tavernlab.notebook import current_state\n"
                           "_w = current_state().worktree\n"
                           "print(json.dumps({**r.data, 'current': _w and _w.path}))")
    return json.loads(texts(messages))  # type: ignore[no-any-return]


def agent(kernel: Kernel, repo: Repo, slug: str, gate: str, *extra: str,
          **options: Any) -> Messages:
    return run(kernel, f"import json\nr = %worktree agent --slug {slug} --task 'write agent.txt' "
                       f"--gate {json.dumps(gate)} {' '.join(extra)}", **options)


def test_gate_passes_and_yes_cleans_up(kernel: Kernel, repo: Repo, daemon: Daemon) -> None:
    messages = agent(kernel, repo, "nb-ok", "echo gate-says-hi; test -f agent.txt", "--yes")
    out = result_of(kernel)
    assert out["gate"]["passed"] is True and out["cleanup"]["removed"] is True
    assert out["branch"] == "wt/nb-ok" and not Path(out["cwd"]).exists()
    assert repo.branches("wt/nb-ok") == "" and out["current"] is None
    assert "gate-says-hi\n" in texts(messages)  # the gate's output, streamed into the cell
    assert f"{PROMPT} — auto-approved (--yes)\n" in texts(messages, "stderr")
    shown = [m["content"]["data"].get("text/plain", "") for _, m in messages
             if m["msg_type"] in ("display_data", "update_display_data")]
    assert shown and shown[0].startswith("Worktree nb-ok: running")  # the provisioning widget
    assert [c["args"] for c in daemon.calls("agent_start")] == [
        {"adapter": "claude-code", "cwd": out["cwd"], "label": "code"}]
    assert daemon.calls("agent_prompt")[0]["args"]["prompt"] == "write agent.txt"


def test_a_failing_gate_keeps_the_worktree_as_the_current_one(
        kernel: Kernel, repo: Repo, daemon: Daemon) -> None:
    agent(kernel, repo, "nb-bad", "echo nope >&2; exit 1", "--yes")
    out = result_of(kernel)
    assert out["gate"] == {"passed": False, "exitCode": 1, "stdout": "", "stderr": "nope\n"}
    assert out["cleanup"] == {"removed": False, "reason": "gate_failed"}
    assert Path(out["cwd"], "agent.txt").read_text() == "write agent.txt"
    assert out["current"] == out["cwd"]


def test_without_yes_and_without_input_nothing_is_approved(
        kernel: Kernel, repo: Repo, daemon: Daemon) -> None:
    messages = agent(kernel, repo, "nb-ask", "true", allow_stdin=False)
    out = result_of(kernel)
    assert out["cleanup"] == {"removed": False, "reason": "cleanup_rejected"}
    assert Path(out["cwd"]).is_dir() and repo.branches("wt/nb-ask") != ""
    assert (f"{PROMPT} — this kernel takes no input, not approving (worktree left in place)\n"
            in texts(messages, "stderr"))


def test_an_answer_typed_into_the_notebook_approves(kernel: Kernel, repo: Repo,
                                                    daemon: Daemon) -> None:
    asked: list[dict[str, Any]] = []

    def answer() -> None:
        request = kernel.client.get_stdin_msg(timeout=120)
        asked.append(request["content"])
        kernel.client.input("yes")

    answering = threading.Thread(target=answer)
    answering.start()
    try:
        agent(kernel, repo, "nb-typed", "true", allow_stdin=True)
    finally:
        answering.join(130)
    assert [a["prompt"] for a in asked] == [f"{PROMPT} [y/N] "]
    out = result_of(kernel)
    assert out["cleanup"]["removed"] is True and not Path(out["cwd"]).exists()


def test_an_unreachable_daemon_is_one_line_and_provisions_nothing(
        kernel: Kernel, repo: Repo) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    run(kernel, f"os.environ['AGENTPROTO_MCP_URL'] = {url!r}")
    reply, messages = kernel.execute(
        "%worktree agent --slug nb-down --task t --gate true --yes")
    assert reply["content"]["status"] == "error"
    assert texts(messages) + texts(messages, "stderr") == ""
    assert reply["content"]["traceback"] == [
        f"worktree.daemon_unreachable: %worktree agent: could not reach the agentproto "
        f"daemon's MCP endpoint at {url} (start it with `agentproto daemon start`, or set "
        "AGENTPROTO_MCP_URL to a running one); nothing was provisioned"]
    assert repo.worktree_list().count("worktree ") == 1


def test_usage_errors_name_the_flag(kernel: Kernel, repo: Repo) -> None:
    reply, _ = kernel.execute("%worktree agent --slug x --task t")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["evalue"] == "%worktree agent: missing required flag(s): --gate"
    reply, _ = kernel.execute("%worktree agent --slug x --task t --gate g --write-file '{no'")
    assert reply["content"]["evalue"] == (
        "%worktree agent: --write-file value is not valid JSON: {no")


def test_inside_a_run_offering_the_tools_the_workflow_is_its_calls(
        kernel: Kernel, repo: Repo, daemon: Daemon, tmp_path: Path) -> None:
    run(kernel, "from tavernlab.host import DEFAULT_TOOLS, Lab, worktree_tools\n"
                "from tavernlab.notebook import current_state\n"
                f"tool_lab = Lab({str(tmp_path / 'tool-lab')!r}, "
                "tools=[*DEFAULT_TOOLS, worktree_tools])\n"
                "current_state().use_lab(tool_lab)\n"
                "tool_run = current_state().new_run(chat_id='wt')")
    messages = agent(kernel, repo, "nb-run", "echo in-run; test -f agent.txt", "--yes")
    out = result_of(kernel)
    assert out["gate"]["passed"] is True and out["cleanup"]["removed"] is True
    assert "in-run\n" not in texts(messages)  # the gate is the run's call: not streamed
    calls = json.loads(texts(run(kernel, (
        "_events = [json.loads(l) for l in (tool_run.dir / 'events.jsonl').read_text()"
        ".splitlines()]\n"
        "print(json.dumps([(e['payload']['toolId'], e['payload']['isError']) for e in _events"
        " if e['type'] in ('tool_call_completed', 'tool_call_failed')]))\n"
        "current_state().forget_lab(); tool_lab.close()"))).splitlines()[-1])
    assert calls == [["worktree.provision", False], ["worktree.run-gate", False],
                     ["worktree.cleanup", False]]
