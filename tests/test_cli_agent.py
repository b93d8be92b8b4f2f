"""``tavernlab agent run`` and ``tavernlab agent models`` in real subprocesses: a scripted
model file and the real ``openai`` client against a local OpenAI-compatible server, the live
output (text streamed before the answer ends, one line per tool call, the outcome), ``--json``,
Ctrl-C, and bad input refused in one line before any run exists."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from model_servers import TEST_KEY, ModelServer

from tavernlab import Lab

REPO = Path(__file__).resolve().parents[1]
KEYS = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY", "GROQ_API_KEY",
        "ANTHROPIC_API_KEY", "TAVERNLAB_LOCAL_API_KEY", "TAVERNLAB_LOCAL_BASE_URL")
TEXT = "I will write the answer to output/main.md and commit it."


def _call(call_id: str, alias: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": alias, "arguments": json.dumps(arguments)}}


def _turn(text: str | None, *calls: dict[str, Any], delay_ms: int = 0,
          reasoning: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = list(calls)
    turn: dict[str, Any] = {
        "choices": [{"message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
    if delay_ms:
        turn["delayMs"] = delay_ms
    return turn


def answers(delay_ms: int = 0) -> list[dict[str, Any]]:
    """Write, commit and finish, in two rounds."""
    return [_turn(TEXT, _call("call_write", "workspace_write_file",
                              {"path": "output/main.md", "content": "forty-two\n"}),
                  _call("call_commit", "workspace_commit", {"path": "output/main.md"}),
                  delay_ms=delay_ms, reasoning="The task wants one file."),
            _turn(None, _call("call_finish", "workspace_finish", {}))]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"),
                                         *filter(None, [os.environ.get("PYTHONPATH")])])
    env.update(extra)
    return env


def cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tavernlab.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=_env(**env))


@contextlib.contextmanager
def started(*args: str, cwd: Path, **env: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen([sys.executable, "-m", "tavernlab.cli", *args], cwd=cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=_env(**env))
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=60)


def _run_id(stderr: str) -> str:
    first = stderr.splitlines()[0]
    assert first.startswith("run run_"), stderr
    return first.split()[1]


def _scripted(tmp_path: Path, turns: list[dict[str, Any]]) -> Path:
    file = tmp_path / "answers.json"
    file.write_text(json.dumps(turns), encoding="utf-8")
    return file


def test_a_scripted_run_shows_text_tool_lines_and_the_outcome(tmp_path: Path) -> None:
    file = _scripted(tmp_path, answers())
    done = cli("agent", "run", "Write the answer.", "--model", f"scripted:{file}", "--lab",
               "lab", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "thinking: The task wants one file.",
        TEXT,
        '✓ workspace_write_file(path="output/main.md", content="forty-two\\n")  '
        + done.stdout.splitlines()[2].rsplit("  ", 1)[1],
        '✓ workspace_commit(path="output/main.md")  '
        + done.stdout.splitlines()[3].rsplit("  ", 1)[1],
        "✓ workspace_finish()  " + done.stdout.splitlines()[4].rsplit("  ", 1)[1],
        f"completed · 2 rounds · 2 model calls · tokens 20 in, 10 out, 30 total · "
        f"{_run_id(done.stderr)}"]
    assert all(line.rsplit("  ", 1)[1].endswith(" ms") for line in done.stdout.splitlines()[2:5])
    with Lab(tmp_path / "lab") as lab:
        run = lab.open_run(_run_id(done.stderr))
        assert (run.status, run.read("output/main.md")) == ("completed", "forty-two\n")


def test_json_prints_only_the_outcome(tmp_path: Path) -> None:
    file = _scripted(tmp_path, answers())
    done = cli("agent", "run", "Write the answer.", "--model", f"scripted:{file}", "--lab",
               "lab", "--json", "--chat", "bob", "--presentation", "foreground", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert (outcome["status"], outcome["rounds"], outcome["usage"], outcome["failure"]) == (
        "completed", 2, {"inputTokens": 20, "outputTokens": 10, "totalTokens": 30}, None)
    assert [(c["path"], c["isExplicit"]) for c in outcome["commits"]] == [
        ("output/main.md", True)]
    assert outcome["runId"] == _run_id(done.stderr)
    assert "/chats/" in outcome["runDir"]


def test_a_run_that_does_not_complete_exits_1_with_its_failure(tmp_path: Path) -> None:
    file = _scripted(tmp_path, [_turn("Only talk.")] * 2)
    done = cli("agent", "run", "Write.", "--model", f"scripted:{file}", "--lab", "lab",
               "--rounds", "2", "--presentation", "background", cwd=tmp_path)
    assert done.returncode == 1
    last = done.stdout.splitlines()[-1]
    assert last.startswith("failed · 2 rounds · 2 model calls · tokens 20 in, 10 out, 30 total")
    assert last.endswith("model.tool_call_required: model must use Agent tools and complete "
                         "through workspace_finish")


def test_a_local_server_streams_text_before_its_answer_ends(tmp_path: Path) -> None:
    with ModelServer("openai", answers(delay_ms=150)) as server, started(
            "agent", "run", "Write the answer.", "--model", "local:test-model", "--base-url",
            server.base_url, "--lab", "lab", cwd=tmp_path) as process:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("thinking: ")
        second = process.stdout.read(8)  # the first piece of the text
        finished_then = server.finished
        rest = process.stdout.read()
        assert process.wait(60) == 0
    assert second == TEXT[:8]
    assert finished_then == 0  # nothing was answered to its end when the text was shown
    lines = (second + rest).splitlines()
    assert lines[0] == TEXT
    assert [line.split("(")[0] for line in lines[1:4]] == [
        "✓ workspace_write_file", "✓ workspace_commit", "✓ workspace_finish"]
    assert lines[4].startswith("completed · 2 rounds · 2 model calls · tokens 20 in, 10 out")
    assert server.requests[0]["model"] == "test-model"
    headers = {k.lower(): v for k, v in server.headers[0].items()}
    assert headers["authorization"] == "Bearer tavernlab-no-key"  # no key for a local server


def test_an_openai_model_reads_its_key_from_the_environment_and_writes_it_nowhere(
        tmp_path: Path) -> None:
    with ModelServer("openai", answers()) as server:
        done = cli("agent", "run", "Write the answer.", "--model", "openai:test-model",
                   "--base-url", server.base_url, "--lab", "lab", "--no-stream", "--json",
                   cwd=tmp_path, OPENAI_API_KEY=TEST_KEY)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    headers = {k.lower(): v for k, v in server.headers[0].items()}
    assert headers["authorization"] == f"Bearer {TEST_KEY}"
    assert server.requests[0]["stream"] is False
    for path in (tmp_path / "lab").rglob("*"):
        if path.is_file():
            assert TEST_KEY.encode() not in path.read_bytes(), path


def test_ctrl_c_cancels_the_run_and_exits_130(tmp_path: Path) -> None:
    with ModelServer("openai", answers(delay_ms=300)) as server, started(
            "agent", "run", "Write the answer.", "--model", "local:test-model", "--base-url",
            server.base_url, "--lab", "lab", cwd=tmp_path) as process:
        assert process.stdout is not None and process.stderr is not None
        header = process.stderr.readline()
        assert process.stdout.readline().startswith("thinking: ")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 130
    assert err.splitlines()[-1] == "cancelled"
    assert "Traceback" not in err
    with Lab(tmp_path / "lab") as lab:
        assert lab.open_run(_run_id(header)).status == "cancelled"


@pytest.mark.parametrize(("args", "env", "status", "line"), [
    (("--model", "mistral:large"), {}, 1,
     "error: model.unknown_provider: unknown model `mistral:large` (prefix `mistral:`); write "
     "PREFIX:MODEL with one of the known prefixes: openai:, openrouter:, deepseek:, groq:, "
     "ollama:, local:, vllm:, llamacpp:, anthropic:, claude:, scripted:"),
    (("--model", "openai:gpt-4o-mini"), {}, 1,
     "error: model.credentials_missing: `openai:` models read their API key from the "
     "environment variable `OPENAI_API_KEY`, which is not set; set `OPENAI_API_KEY` and run "
     "again"),
    (("--model", "anthropic:claude-sonnet-4-5"), {"ANTHROPIC_API_KEY": ""}, 1,
     "error: model.credentials_missing: `anthropic:` models read their API key from the "
     "environment variable `ANTHROPIC_API_KEY`, which is not set; set `ANTHROPIC_API_KEY` "
     "and run again"),
    (("--model", "scripted:missing.json"), {}, 1,
     "error: model.invalid_spec: scripted model file `missing.json` cannot be read: No such "
     "file or directory"),
])
def test_bad_input_is_one_line_and_creates_nothing(args: tuple[str, ...], env: dict[str, str],
                                                    status: int, line: str,
                                                    tmp_path: Path) -> None:
    done = cli("agent", "run", "Write.", *args, "--lab", "lab", cwd=tmp_path, **env)
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (status, "", [line])
    assert not (tmp_path / "lab").exists()


def test_an_empty_task_is_bad_usage(tmp_path: Path) -> None:
    file = _scripted(tmp_path, answers())
    done = cli("agent", "run", "  ", "--model", f"scripted:{file}", "--lab", "lab",
               cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == "tavernlab: error: the task is empty"
    assert not (tmp_path / "lab").exists()


def test_models_lists_the_prefixes_and_which_keys_are_set(tmp_path: Path) -> None:
    done = cli("agent", "models", cwd=tmp_path, GROQ_API_KEY="gsk-never-printed")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [
        "openai:", "openrouter:", "deepseek:", "groq:", "ollama:", "local:", "vllm:",
        "llamacpp:", "anthropic:", "claude:", "scripted:"]
    assert lines[0].endswith("[OPENAI_API_KEY (not set)]")
    assert lines[3].endswith("[GROQ_API_KEY (set)]")
    assert lines[4].endswith("[no key]")
    assert "gsk-never-printed" not in done.stdout
    listed = json.loads(cli("agent", "models", "--json", cwd=tmp_path).stdout)
    assert listed[5] == {"prefix": "local", "provider": "openai_compatible",
                         "description": "an OpenAI-compatible server at --base-url",
                         "baseUrl": "http://127.0.0.1:8000/v1",
                         "apiKeyEnv": "TAVERNLAB_LOCAL_API_KEY", "keyRequired": False,
                         "credentialSet": False}



def test_an_anthropic_model_streams_its_thinking_and_text(tmp_path: Path) -> None:
    with ModelServer("anthropic", answers()) as server:
        done = cli("agent", "run", "Write the answer.", "--model", "anthropic:test-model",
                   "--base-url", server.base_url, "--lab", "lab", cwd=tmp_path,
                   ANTHROPIC_API_KEY=TEST_KEY)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["thinking: The task wants one file.", TEXT]
    assert lines[-1].startswith("completed · 2 rounds · 2 model calls")
    headers = {k.lower(): v for k, v in server.headers[0].items()}
    assert TEST_KEY in (headers.get("x-api-key") or headers["authorization"])
