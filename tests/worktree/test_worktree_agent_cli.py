"""``worktree-agent run``: the command line, its approval rules, and the workflow driven
through a daemon agent host that speaks MCP to a real server made with the ``mcp`` package
(``agent_daemon.py``), whose scripted coding agent edits files in the worktree."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tavernlab.cli._worktree_agent import USAGE, CliUsageError, make_approve, parse_args
from tavernlab.worktree import DaemonAgentHost, DaemonUnreachableError

from .conftest import Repo

DAEMON = Path(__file__).with_name("agent_daemon.py")
PROMPT = "Gate passed. Approve worktree cleanup?"
REQUIRED = ["run", "--repo", "app", "--slug", "fix-it", "--task", "write agent.txt",
            "--gate", "test -f agent.txt"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Daemon:
    def __init__(self, url: str, log: Path) -> None:
        self.url = url
        self.log = log

    def calls(self, tool: str | None = None) -> list[dict[str, object]]:
        if not self.log.exists():
            return []
        rows = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [row for row in rows if tool is None or row["tool"] == tool]


def start_daemon(tmp_path: Path, mode: str) -> Iterator[Daemon]:
    port = free_port()
    log = tmp_path / f"daemon-{mode}.jsonl"
    proc = subprocess.Popen([sys.executable, str(DAEMON), str(port), str(log), mode],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the stand-in daemon did not start"
            time.sleep(0.05)
        yield Daemon(f"http://127.0.0.1:{port}/mcp", log)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()


@pytest.fixture
def daemon(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Daemon]:
    yield from start_daemon(tmp_path, getattr(request, "param", "commit"))


def run_cli(args: list[str], daemon_url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command in a new session: no controlling terminal, so ``/dev/tty`` fails."""
    env = {**os.environ, "AGENTPROTO_MCP_URL": daemon_url}
    return subprocess.run([sys.executable, "-m", "tavernlab.cli._worktree_agent", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
                          start_new_session=True, stdin=subprocess.DEVNULL)


# --- acceptance 1-3 of the command line --------------------------------------------------


def test_required_flags_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    parsed = parse_args(REQUIRED)
    assert parsed.input == {"repoRoot": str(tmp_path / "app"), "slug": "fix-it",
                            "task": "write agent.txt", "gateCmd": "test -f agent.txt",
                            "deleteBranch": True}
    assert parsed.yes is False


def test_all_flags() -> None:
    parsed = parse_args([
        *REQUIRED, "--base", "origin/dev", "--adapter", "codex", "--deps-cmd", "pnpm i",
        "--copy-glob", "envs/**/.env.local", "--copy-glob", "secrets/*.json",
        "--link", "node_modules", "--link", "projects/agentproto/ts",
        "--write-file", json.dumps({"path": "pnpm-workspace.yaml",
                                    "content": "virtualStoreDir: /abs/vstore\n",
                                    "mode": "append"}),
        "--no-cleanup", "--yes"])
    assert parsed.input["copyGlobs"] == ["envs/**/.env.local", "secrets/*.json"]
    assert parsed.input["linkPaths"] == ["node_modules", "projects/agentproto/ts"]
    assert parsed.input["writeFiles"] == [{"path": "pnpm-workspace.yaml",
                                           "content": "virtualStoreDir: /abs/vstore\n",
                                           "mode": "append"}]
    assert parsed.input["deleteBranch"] is False and parsed.yes is True
    assert (parsed.input["base"], parsed.input["adapter"], parsed.input["depsCmd"]) == (
        "origin/dev", "codex", "pnpm i")


@pytest.mark.parametrize(("answer", "approved"), [
    ("n", False), ("no", False), ("", False), ("nah", False), ("y", True), ("YES", True),
    ("  yes\n", True)])
def test_tty_answers(answer: str, approved: bool) -> None:
    asked: list[str] = []
    approve = make_approve(False, tty=lambda: True,
                           ask=lambda prompt: asked.append(prompt) or answer)
    assert approve(PROMPT) is approved
    assert asked == [f"{PROMPT} [y/N] "]


def test_yes_and_no_tty_messages(capsys: pytest.CaptureFixture[str]) -> None:
    assert make_approve(True, tty=lambda: False)(PROMPT) is True
    assert make_approve(False, tty=lambda: False)(PROMPT) is False
    assert capsys.readouterr().err == (
        f"{PROMPT} — auto-approved (--yes)\n"
        f"{PROMPT} — no TTY attached, not approving (worktree left in place)\n")


@pytest.mark.parametrize(("argv", "first_line"), [
    ([], "usage: worktree-agent run --repo <abs repo root> --slug <id> --task \"<prompt>\" "
         "--gate \"<check cmd>\""),
    (["start"], "unknown command 'start'"),
    (["run", "--repo"], "flag '--repo' requires a value"),
    (["run", "--force"], "unrecognized flag '--force'"),
    (["run", "--slug", "x", "--task", "t"], "missing required flag(s): --repo, --gate"),
    (["run", "--write-file", "{nope"], "--write-file value is not valid JSON: {nope"),
    (["run", "--write-file", '{"path": 1}'],
     '--write-file requires {"path": string, "content": string, "mode"?: "create"|"append"}: '
     '{"path": 1}'),
])
def test_usage_errors(argv: list[str], first_line: str) -> None:
    with pytest.raises(CliUsageError) as caught:
        parse_args(argv)
    text = str(caught.value)
    assert text.splitlines()[0] == first_line
    if "JSON" not in first_line and "--write-file requires" not in first_line:
        assert text.endswith(USAGE)


def test_usage_error_exits_1_on_stderr(tmp_path: Path) -> None:
    done = run_cli(["run", "--slug", "x"], "http://127.0.0.1:9/mcp", tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("missing required flag(s): --repo, --task, --gate\n\n")


def test_unreachable_daemon_fails_loudly(tmp_path: Path, repo: Repo) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(DaemonUnreachableError) as caught:
        DaemonAgentHost.connect(url)
    assert str(caught.value).startswith(
        f"worktree-agent: could not reach the agentproto daemon's MCP endpoint at {url}. "
        "Start the daemon (`agentproto daemon start`), or point at a running one via "
        "AGENTPROTO_MCP_URL, before running this command.\n(")
    done = run_cli([*REQUIRED[:2], repo.root, *REQUIRED[3:], "--yes"], url, tmp_path)
    assert done.returncode == 1
    assert "could not reach the agentproto daemon's MCP endpoint" in done.stderr
    assert repo.worktree_list().count("worktree ") == 1  # nothing was provisioned


# --- the workflow through the daemon (acceptance 1-3 of the workflow) ----------------------


def args_for(repo: Repo, slug: str, gate: str) -> list[str]:
    return ["run", "--repo", repo.root, "--slug", slug, "--task", "write agent.txt",
            "--gate", gate]


def test_gate_passes_and_cleanup_runs(tmp_path: Path, repo: Repo, daemon: Daemon) -> None:
    done = run_cli([*args_for(repo, "agent-ok", "test -f agent.txt"), "--yes"], daemon.url,
                   tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert done.stdout == json.dumps(out, indent=2) + "\n"
    assert out["gate"]["passed"] is True and out["cleanup"]["removed"] is True
    assert out["branch"] == "wt/agent-ok"
    assert not Path(out["cwd"]).exists() and repo.branches("wt/agent-ok") == ""
    assert f"{PROMPT} — auto-approved (--yes)" in done.stderr
    # spawn(adapter, {cwd, workspaceSlug: undefined, stepId: "code"}) → agent_start
    assert [c["args"] for c in daemon.calls("agent_start")] == [
        {"adapter": "claude-code", "cwd": out["cwd"], "label": "code"}]
    tools = [c["tool"] for c in daemon.calls()]
    assert tools[:3] == ["agent_start", "session_events_cursor", "agent_prompt"]
    assert daemon.calls("agent_prompt")[0]["args"] == {"sessionId": "sess_1",
                                                       "prompt": "write agent.txt"}
    monitor = daemon.calls("session_monitor")[0]["args"]
    assert monitor == {"sessionIds": ["sess_1"], "timeoutMs": 49000, "event": "any",
                       "since": 0}


def test_gate_failure_keeps_worktree(tmp_path: Path, repo: Repo, daemon: Daemon) -> None:
    done = run_cli([*args_for(repo, "agent-bad", "exit 1"), "--yes"], daemon.url, tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["gate"]["passed"] is False
    assert out["cleanup"] == {"removed": False, "reason": "gate_failed"}
    assert Path(out["cwd"], "agent.txt").read_text() == "write agent.txt"


def test_no_tty_rejects_cleanup(tmp_path: Path, repo: Repo, daemon: Daemon) -> None:
    done = run_cli(args_for(repo, "agent-ask", "true"), daemon.url, tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["cleanup"] == {"removed": False, "reason": "cleanup_rejected"}
    assert Path(out["cwd"]).is_dir() and repo.branches("wt/agent-ask") != ""
    assert f"{PROMPT} — no TTY attached, not approving (worktree left in place)" in done.stderr


@pytest.mark.parametrize("daemon", ["slow"], indirect=True)
def test_timed_out_polls_are_repeated_with_the_same_cursor(
        tmp_path: Path, repo: Repo, daemon: Daemon) -> None:
    done = run_cli([*args_for(repo, "agent-slow", "test -f agent.txt"), "--yes"], daemon.url,
                   tmp_path)
    assert done.returncode == 0, done.stderr
    polls = [c["args"] for c in daemon.calls("session_monitor")]
    assert len(polls) >= 2 and {p["since"] for p in polls} == {0}  # type: ignore[index]


@pytest.mark.parametrize("daemon", ["dirty"], indirect=True)
def test_uncommitted_agent_work_blocks_cleanup(tmp_path: Path, repo: Repo,
                                               daemon: Daemon) -> None:
    done = run_cli([*args_for(repo, "agent-dirty", "test -f agent.txt"), "--yes"], daemon.url,
                   tmp_path)
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "WorktreeNotRemovableError" in done.stderr
    worktree = Path(repo.root).parent / "_worktrees"
    assert any(p.name.endswith("agent-dirty") for p in worktree.rglob("*agent-dirty*"))


def test_tavernlab_worktree_agent_is_the_same_workflow(tmp_path: Path, repo: Repo,
                                                       daemon: Daemon) -> None:
    """``tavernlab worktree agent`` takes the same flags (from the one command table), with
    ``--repo`` defaulting to the current directory's repository."""
    env = {**os.environ, "AGENTPROTO_MCP_URL": daemon.url}
    done = subprocess.run(
        [sys.executable, "-m", "tavernlab.cli", "worktree", "agent", "--slug", "via-table",
         "--task", "write agent.txt", "--gate", "test -f agent.txt", "--yes", "--json"],
        cwd=repo.path, env=env, capture_output=True, text=True, timeout=120,
        start_new_session=True)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["branch"] == "wt/via-table" and out["cleanup"] == {"removed": True}
    assert f"{PROMPT} — auto-approved (--yes)" in done.stderr
    kept = subprocess.run(
        [sys.executable, "-m", "tavernlab.cli", "worktree", "agent", "--slug", "kept",
         "--task", "write agent.txt", "--gate", "exit 1"],
        cwd=repo.path, env=env, capture_output=True, text=True, timeout=120,
        start_new_session=True)
    assert kept.returncode == 0, kept.stderr
    assert kept.stdout == (f"{repo.path.parent / '_worktrees' / 'kept'}  (wt/kept): gate "
                           "failed, kept (gate_failed)\n")
    missing = subprocess.run(
        [sys.executable, "-m", "tavernlab.cli", "worktree", "agent", "--slug", "x"],
        cwd=repo.path, env=env, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2
    assert "tavernlab: error: missing required flag(s): --task, --gate" in missing.stderr


def test_tavernlab_worktree_agent_with_a_run_makes_its_calls_there(
        tmp_path: Path, repo: Repo, daemon: Daemon) -> None:
    from tavernlab.host import DEFAULT_TOOLS, Lab, worktree_tools

    with Lab(tmp_path / "lab", tools=[*DEFAULT_TOOLS, worktree_tools]) as lab:
        run_id = lab.start_run(chat_id="wt").id
    done = subprocess.run(
        [sys.executable, "-m", "tavernlab.cli", "worktree", "agent", "--slug", "in-run",
         "--task", "write agent.txt", "--gate", "test -f agent.txt", "--yes", "--json",
         "--run", run_id, "--lab", str(tmp_path / "lab")],
        cwd=repo.path, env={**os.environ, "AGENTPROTO_MCP_URL": daemon.url},
        capture_output=True, text=True, timeout=120, start_new_session=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cleanup"] == {"removed": True}
    with Lab(tmp_path / "lab") as lab:
        events = (lab.open_run(run_id).dir / "events.jsonl").read_text().splitlines()
    calls = [json.loads(line)["payload"] for line in events]
    assert [(c["toolId"], c["isError"]) for c in calls if "isError" in c] == [
        ("worktree.provision", False), ("worktree.run-gate", False),
        ("worktree.cleanup", False)]
