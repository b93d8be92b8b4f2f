"""``tavernlab agent run`` and ``tavernlab agent models``: a model drives a run from a
terminal.

* ``tavernlab agent run TASK --model SPEC [--base-url URL] [--lab DIR] [--chat ID]
  [--rounds N] [--no-stream] [--presentation foreground|background] [--profile FILE]
  [--json]`` starts the agent loop on TASK in a new run of the lab (created if it does not
  exist yet) and shows it live: the model's text on stdout as it streams (its reasoning
  prefixed ``thinking:``), one line per tool call (on a terminal shown when it starts and
  rewritten in place when it ends; otherwise printed when it ends), then the outcome line.
  ``--json`` prints only the outcome, as JSON. The run's id and directory go to stderr
  first. Exit 0 when the run completed, 1 otherwise; Ctrl-C cancels the run (``cancelled``,
  exit 130).
* ``tavernlab agent models [--json]`` lists the model prefixes ``--model`` takes, with the
  variable each key is read from and whether it is set (never its value).

The model and its credential are checked before any run is created: an unknown prefix or a
missing key is one line ``error: <code>: <message>`` and exit 1.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any, TextIO, cast

import tavernlab.agent as agent
from tavernlab.cli._common import add_lab_argument, lab_path, print_json
from tavernlab.errors import UsageError
from tavernlab.events import Event
from tavernlab.host import Lab, order_key
from tavernlab.models import ModelResponse, from_spec, model_prefixes
from tavernlab.views import (
    arguments_at,
    follow,
    model_prefixes_text,
    outcome_json,
    outcome_line,
    tool_call_line,
)
from tavernlab.workspace.records import read_json


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``agent run`` and ``agent models``."""
    parser = subparsers.add_parser(
        "agent", help="let a model drive a run through the workspace tools",
        description="Let a model drive a run through the workspace tools.")
    commands = parser.add_subparsers(dest="agent_command", metavar="COMMAND", required=True)
    run = commands.add_parser(
        "run", help="run the agent loop on a task and show it live",
        description="Run the agent loop on TASK in a new run of the lab, showing the model's "
                    "text, each tool call and the outcome as they happen. Exit 0 when the "
                    "run completed, 1 otherwise.")
    run.add_argument("task", metavar="TASK", help="the user's task")
    run.add_argument("--model", required=True, metavar="SPEC",
                     help="PREFIX:MODEL (openai:…, openrouter:…, ollama:…, local:…, "
                          "anthropic:…, scripted:FILE.json; see `tavernlab agent models`)")
    run.add_argument("--base-url", metavar="URL", default=None,
                     help="the endpoint of the model's server (local:, vllm:, llamacpp: …)")
    add_lab_argument(run)
    run.add_argument("--chat", metavar="ID", default=None, help="the chat (default: agent)")
    run.add_argument("--rounds", type=int, metavar="N", default=None,
                     help="the most model rounds the run may use (default: the Profile's)")
    run.add_argument("--no-stream", dest="stream", action="store_false", default=None,
                     help="ask for whole answers instead of streamed ones")
    run.add_argument("--presentation", choices=("foreground", "background"), default=None,
                     help="foreground runs commit to the chat (default: the Profile's)")
    run.add_argument("--profile", metavar="FILE", default=None,
                     help="a Profile as a JSON file")
    run.add_argument("--json", action="store_true",
                     help="print the outcome as JSON instead of the live view")
    run.set_defaults(func=_run)
    models = commands.add_parser(
        "models", help="list the model prefixes and which credentials are set",
        description="List the model prefixes --model takes, the variable each key is read "
                    "from and whether it is set (never its value).")
    models.add_argument("--json", action="store_true", help="print the list as JSON")
    models.set_defaults(func=_models)


def _models(args: argparse.Namespace) -> int:
    if args.json:
        print_json([entry.to_json() for entry in model_prefixes()])
    else:
        print(model_prefixes_text(model_prefixes()))
    return 0


class TerminalView:
    """The live view on a terminal (or a pipe): fed with the loop's pieces and events."""

    def __init__(self, out: TextIO, run_dir: Path | None = None) -> None:
        self.out = out
        self.run_dir = run_dir
        self.tty = out.isatty()
        self._lock = threading.Lock()
        self._open: str | None = None  # "text", "reasoning" or "tool" (a tool line waiting)
        self._tools: dict[str, tuple[str, Any]] = {}
        self._streamed = False

    def _end_segment(self) -> None:
        if self._open == "reasoning" and self.tty:
            self.out.write("\x1b[0m")
        if self._open in ("text", "reasoning"):
            self.out.write("\n")
        self._open = None

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def on_delta(self, live: agent.LiveDelta) -> None:
        """A streamed piece: text and reasoning are written at once."""
        delta = live.delta
        if delta.kind not in ("text", "reasoning"):
            return
        with self._lock:
            self._streamed = True
            self._piece(delta.kind, delta.text)

    def _piece(self, kind: str, text: str) -> None:
        if self._open != kind:
            self._end_segment()
            if kind == "reasoning":
                self.out.write(("\x1b[2m" if self.tty else "") + "thinking: ")
            self._open = kind
        self._write(text)

    def on_event(self, record: Event) -> None:
        """Tool lines, retried attempts, and a response that was not streamed."""
        payload: Any = getattr(record, "payload", None)
        kind = record.type
        with self._lock:
            if kind == "model_completed":
                if not self._streamed:
                    self._response(str(payload.model_response_path))
                self._streamed = False
                self._end_segment()
            elif kind == "model_call_attempt_failed":
                self._end_segment()
                self._streamed = False
                then = "retrying" if payload.will_retry else "giving up"
                self._write(f"⟳ model call attempt {payload.attempt} failed: "
                            f"{payload.message} ({then})\n")
            elif kind == "tool_call_requested" and payload.call_id not in self._tools:
                self._end_segment()
                arguments = arguments_at(self.run_dir, payload.arguments_path)
                self._tools[payload.call_id] = (payload.name, arguments)
                if self.tty:
                    self._write(tool_call_line(payload.name, arguments))
                    self._open = "tool"
            elif kind in ("tool_call_completed", "tool_call_failed"):
                shown = self._tools.pop(payload.call_id, None)
                if shown is None:
                    return
                status = "ok" if not payload.is_error else (
                    "cancelled" if (payload.error_code or "").endswith(
                        ("cancelled", "interrupted")) else "error")
                line = tool_call_line(
                    shown[0], shown[1], status=status, elapsed_ms=payload.elapsed_ms,
                    error_code=payload.error_code,
                    message=payload.message if payload.is_error else None)
                if self.tty and self._open == "tool":
                    self.out.write("\r\x1b[2K")
                elif self._open is not None:
                    self._end_segment()
                self._open = None
                self._write(line + "\n")

    def _response(self, path: str) -> None:
        if self.run_dir is None:
            return
        try:
            response = ModelResponse.model_validate(read_json(self.run_dir / path)["response"])
        except (OSError, ValueError, KeyError, TypeError):
            return
        if response.message.reasoning.strip():
            self._piece("reasoning", response.message.reasoning)
        if response.text:
            self._piece("text", response.text)

    def finish(self) -> None:
        """Close an open line."""
        with self._lock:
            if self._open == "tool":
                self._write("\n")
                self._open = None
            self._end_segment()
            self.out.flush()


_SHOWN = frozenset({"tool_call_requested", "tool_call_completed", "tool_call_failed",
                    "model_call_attempt_failed", "model_completed"})


def _run(args: argparse.Namespace) -> int:
    if not args.task.strip():
        raise UsageError("the task is empty")
    model = from_spec(args.model, base_url=args.base_url)
    profile = agent.profile_from(args.profile, args.rounds)
    with Lab(lab_path(args)) as lab:
        view = None if args.json else TerminalView(sys.stdout)
        handle = cast(agent.AgentHandle, lab.start_agent(
            args.task, model=model, chat_id=args.chat, profile=profile,
            presentation=args.presentation, stream=args.stream,
            on_delta=None if view is None else view.on_delta))
        run = handle.run
        print(f"run {run.id} in {run.dir}", file=sys.stderr, flush=True)
        model_calls = 0
        if view is not None:
            view.run_dir = run.dir

        def show(record: Event) -> None:
            nonlocal model_calls
            model_calls += record.type == "model_completed"
            if view is not None:
                view.on_event(record)

        subscription = follow(run, show, _SHOWN, order_key)
        try:
            outcome = handle.wait()
        finally:
            subscription.close()
            if view is not None:
                view.finish()
        if args.json:
            print_json(outcome_json(outcome.run.id, outcome.status, outcome.rounds,
                                          outcome.usage, outcome.failure, outcome.commits,
                                          run_dir=str(outcome.run.dir)))
        else:
            print(outcome_line(outcome.status, outcome.rounds, outcome.usage,
                                     outcome.failure, model_calls=model_calls,
                                     run_id=outcome.run.id), flush=True)
        return 0 if outcome.status == "completed" else 1
