"""``%%agent`` and ``%agent_models`` in the real tavernlab kernel: a scripted model file and
the real ``openai`` client against a local OpenAI-compatible server (in this process, on
127.0.0.1). The model's text streams into the cell before the answer ends, the reasoning is
a fold updated in place, each tool call is one line completed in place, the outcome ends the
cell, an interrupt mid-stream leaves the run ``cancelled``, and a missing credential names
the variable to set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from model_servers import ModelServer
from notebook_support import Kernel, Notebook, texts

from tavernlab.notebook._agent_cell import AgentMagics

TEXT = "I will write the answer to output/main.md and commit it."
REASONING = "The task wants one file."

Messages = list[tuple[float, dict[str, Any]]]


def _call(call_id: str, alias: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": alias, "arguments": json.dumps(arguments)}}


def answers(delay_ms: int = 0) -> list[dict[str, Any]]:
    """Write, commit and finish, in two rounds (the first with reasoning and text)."""
    first: dict[str, Any] = {
        "choices": [{"message": {
            "role": "assistant", "content": TEXT, "reasoning_content": REASONING,
            "tool_calls": [_call("call_write", "workspace_write_file",
                                 {"path": "output/main.md", "content": "forty-two\n"}),
                           _call("call_commit", "workspace_commit",
                                 {"path": "output/main.md"})]},
            "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
    if delay_ms:
        first["delayMs"] = delay_ms
    second = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
        _call("call_finish", "workspace_finish", {})]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
    return [first, second]


def scripted_file(tmp_path: Path, turns: list[dict[str, Any]]) -> Path:
    file = tmp_path / "answers.json"
    file.write_text(json.dumps(turns), encoding="utf-8")
    return file


def displays(messages: Messages) -> list[tuple[str, str | None, str]]:
    """``(msg_type, display_id, text/plain)`` of every display and update, in order."""
    return [(m["msg_type"], m["content"].get("transient", {}).get("display_id"),
             m["content"]["data"].get("text/plain", ""))
            for _, m in messages if m["msg_type"] in ("display_data", "update_display_data")]


def final_displays(messages: Messages) -> list[str]:
    """What the cell shows at the end: each display with its last update applied."""
    shown: list[tuple[str | None, str]] = []
    for kind, display_id, text in displays(messages):
        if kind == "display_data":
            shown.append((display_id, text))
        else:
            shown = [(i, text if i == display_id else t) for i, t in shown]
    return [text for _, text in shown]


def test_a_scripted_run_streams_its_text_and_completes_tool_lines_in_place(
        kernel: Kernel, tmp_path: Path) -> None:
    file = scripted_file(tmp_path, answers())
    reply, messages = kernel.execute(f"%%agent --model scripted:{file}\nWrite the answer.\n")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert texts(messages) == TEXT + "\n"
    shown = final_displays(messages)
    assert shown[0] == f"reasoning (5 words):\n  {REASONING}"
    assert [line.split("  ")[0] for line in shown[1:4]] == [
        '✓ workspace_write_file(path="output/main.md", content="forty-two\\n")',
        '✓ workspace_commit(path="output/main.md")', "✓ workspace_finish()"]
    assert shown[4].startswith("completed · 2 rounds · 2 model calls · tokens 20 in, 10 out, "
                               "30 total · run_")
    assert len(shown) == 5
    lines = displays(messages)
    started = [(i, t) for kind, i, t in lines if kind == "display_data" and t.startswith("▶")]
    assert [t for _, t in started] == [
        '▶ workspace_write_file(path="output/main.md", content="forty-two\\n")',
        '▶ workspace_commit(path="output/main.md")', "▶ workspace_finish()"]
    for display_id, _ in started:  # each line was completed in place, through its id
        updates = [t for kind, i, t in lines if kind == "update_display_data"
                   and i == display_id]
        assert len(updates) == 1 and updates[0].startswith("✓ ")
    html = [m["content"]["data"].get("text/html", "") for _, m in messages
            if m["msg_type"] in ("display_data", "update_display_data")]
    assert any(h.startswith('<details class="tl-agent-reasoning"><summary>reasoning (5 words)')
               for h in html)
    reply, messages = kernel.execute(
        "print(_agent.status, _agent_outcome.status, _agent_outcome.rounds, "
        "_agent.read('output/main.md'), end='')\n"
        "from tavernlab.notebook import current_state\n"
        "print(current_state().run is _agent)")
    assert texts(messages) == "completed completed 2 forty-two\nTrue\n"


def test_without_streaming_each_answer_is_shown_when_it_arrives(kernel: Kernel,
                                                                tmp_path: Path) -> None:
    file = scripted_file(tmp_path, answers())
    reply, messages = kernel.execute(
        f"%%agent --model scripted:{file} --no-stream --run r2 --out o2\nWrite the answer.\n")
    assert reply["content"]["status"] == "ok"
    assert texts(messages) == TEXT + "\n"
    assert final_displays(messages)[0] == f"reasoning (5 words):\n  {REASONING}"
    reply, messages = kernel.execute("print(o2.run is r2, o2.status)")
    assert texts(messages) == "True completed\n"


def test_text_from_a_local_server_reaches_the_cell_before_the_answer_ends(
        kernel: Kernel) -> None:
    seen: list[int] = []

    with ModelServer("openai", answers(delay_ms=100)) as server:
        def watch(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream" and not seen:
                seen.append(server.finished)

        reply, messages = kernel.execute(
            f"%%agent --model local:test-model --base-url {server.base_url} --rounds 4\n"
            "Write the answer.\n", on_message=watch)
        assert reply["content"]["status"] == "ok"
        assert seen == [0]  # the first text came while the server was still answering
        streams = [m["content"]["text"] for _, m in messages if m["msg_type"] == "stream"]
        assert len(streams) > 1  # it came in pieces
        assert "".join(streams) == TEXT + "\n"
        assert server.requests[0]["stream"] is True
        assert final_displays(messages)[-1].startswith("completed · 2 rounds")


def test_an_interrupt_mid_stream_cancels_the_run(kernel: Kernel) -> None:
    with ModelServer("openai", answers(delay_ms=300)) as server:
        sent: list[bool] = []

        def interrupt(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream" and msg["content"]["text"].strip() and not sent:
                sent.append(True)
                kernel.manager.interrupt_kernel()

        reply, messages = kernel.execute(
            f"%%agent --model local:test-model --base-url {server.base_url} --run r3\n"
            "Write the answer.\n", on_message=interrupt)
    assert (reply["content"]["status"], reply["content"]["ename"]) == ("error",
                                                                       "KeyboardInterrupt")
    assert final_displays(messages)[-1].startswith(
        "cancelled · 1 round · 0 model calls · tokens not reported · run_")
    errors = [m["content"]["traceback"] for _, m in messages if m["msg_type"] == "error"]
    assert errors == [["KeyboardInterrupt"]]
    reply, messages = kernel.execute("print(r3.status, [e.type for e in r3.events()][-1])")
    assert texts(messages) == "cancelled run_cancelled\n"


def test_a_missing_credential_names_the_variable_and_starts_nothing(kernel: Kernel) -> None:
    kernel.execute("%env OPENAI_API_KEY=\nfrom tavernlab.notebook import current_state\n"
                   "before = len(current_state().lab.runs())")
    reply, messages = kernel.execute("%%agent --model openai:gpt-4o-mini\nWrite.\n")
    assert (reply["content"]["status"], reply["content"]["evalue"]) == (
        "error", "`openai:` models read their API key from the environment variable "
                 "`OPENAI_API_KEY`, which is not set; set `OPENAI_API_KEY` and run again")
    assert reply["content"]["traceback"][0].startswith("model.credentials_missing: ")
    reply, messages = kernel.execute("print(len(current_state().lab.runs()) - before)")
    assert texts(messages) == "0\n"


def test_agent_models_lists_and_chooses_the_default_model(kernel: Kernel,
                                                          tmp_path: Path) -> None:
    reply, messages = kernel.execute("%env GROQ_API_KEY=gsk-never-shown\n%agent_models")
    result = next(m["content"]["data"] for _, m in messages
                  if m["msg_type"] == "execute_result")
    lines = result["text/plain"].splitlines()
    assert [line.split()[0] for line in lines][:5] == ["openai:", "openrouter:", "deepseek:",
                                                      "groq:", "ollama:"]
    assert lines[3].endswith("[GROQ_API_KEY (set)]")
    assert "gsk-never-shown" not in json.dumps(result)
    assert "<table>" in result["text/html"]
    reply, _ = kernel.execute("%env ANTHROPIC_API_KEY=\n%agent_models use anthropic:claude-x")
    assert reply["content"]["traceback"] == [
        "model.credentials_missing: `anthropic:` models read their API key from the "
        "environment variable `ANTHROPIC_API_KEY`, which is not set; set `ANTHROPIC_API_KEY` "
        "and run again"]
    file = scripted_file(tmp_path, answers())
    reply, messages = kernel.execute(f"%agent_models use scripted:{file}")
    assert reply["content"]["status"] == "ok"
    reply, messages = kernel.execute("%%agent\nWrite the answer.\n")
    assert final_displays(messages)[-1].startswith("completed · 2 rounds")


def test_bad_lines_are_usage_errors(nb: Notebook, tmp_path: Path) -> None:
    file = scripted_file(tmp_path, answers())
    assert "the cell is the task; it is empty" in str(
        nb.cell(f"%%agent --model scripted:{file}\n\n").error)
    assert "no model: pass --model PREFIX:MODEL" in str(nb.cell("%%agent\nWrite.\n").error)
    assert "give --model SPEC or -m VAR, not both" in str(
        nb.cell(f"%%agent --model scripted:{file} -m m\nWrite.\n").error)
    assert "--rounds must be at least 1" in str(
        nb.cell(f"%%agent --model scripted:{file} --rounds 0\nWrite.\n").error)
    error = nb.cell("%%agent --model nope:x\nWrite.\n").error
    assert getattr(error, "code", None) == "model.unknown_provider"
    assert not (tmp_path / ".tavernlab").exists()  # no lab, so no run, was made


def test_a_provider_from_the_namespace_drives_the_run(nb: Notebook) -> None:
    nb.cell("from tavernlab.models import Scripted\n"
            f"model = Scripted({answers()!r})")
    ran = nb.cell("%%agent -m model --presentation foreground\nWrite the answer.\n")
    assert ran.error is None
    assert ran.stdout == TEXT + "\n"
    assert nb.ns["_agent_outcome"].status == "completed"
    assert nb.ns["model"].remaining == 0


def test_the_magics_explain_themselves_with_examples() -> None:
    cell, line = AgentMagics.agent.__doc__ or "", AgentMagics.agent_models.__doc__ or ""
    assert "Examples\n" in cell and "%%agent --model scripted:answers.json\n" in cell
    assert "scripted:FILE.json …; %agent_models lists them)" in " ".join(cell.split())
    assert "Examples\n" in line and "%agent_models use ollama:qwen3\n" in line

