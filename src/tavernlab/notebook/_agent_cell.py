"""``%%agent`` and ``%agent_models``: a model drives a run from a cell, watched live.

``%%agent`` starts the agent loop in the notebook's current lab with the cell body as the
user's task (``Lab.start_agent``) and shows the run in the cell while it happens:

* the model's text streams into the cell's output as it arrives; its reasoning is one folded
  display per model call (``<details>``, with a plain-text form), updated in place;
* each tool call is one line, shown when it starts (``▶ workspace_write_file(path=…)``) and
  completed in place when it ends (``✓ … 3 ms`` / ``✗ … code: message``), through a display
  id; a failed model attempt that is retried gets a line too;
* the cell ends with the outcome line (status, rounds, model calls, tokens, and for a failure
  its code and message). The run becomes the notebook's current run (so ``%tavern`` and the
  timeline show it) and is stored in ``--run VAR`` (default ``_agent``), the outcome in
  ``--out VAR`` (default ``_agent_outcome``).

Without streaming, each response's text and reasoning are shown when the call ends (read
from the run's ``model-responses/``). A kernel interrupt cancels the run (``cancelling`` then
``cancelled``: the loop stops at its next check, a model call mid-stream at once), shows the
outcome and re-raises ``KeyboardInterrupt`` so "Run all" stops.

``%agent_models`` lists the model prefixes (see :func:`tavernlab.models.from_spec`) and
whether each credential's variable is set; ``%agent_models use SPEC`` sets the model
``%%agent`` uses when no ``--model`` is given (checking its credential first).
"""

from __future__ import annotations

import argparse
import shlex
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from IPython.core import magic_arguments
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import display
from traitlets import Unicode

import tavernlab.agent as agent
from tavernlab.events import Event
from tavernlab.host import order_key
from tavernlab.models import ModelProvider, ModelResponse, from_spec, model_prefixes
from tavernlab.notebook._errors import cell_interrupted
from tavernlab.notebook._output import CellRouter
from tavernlab.notebook._state import NotebookState
from tavernlab.views import (
    COLOURS,
    arguments_at,
    escape,
    follow,
    model_prefixes_html,
    model_prefixes_text,
    outcome_line,
    tool_call_line,
)
from tavernlab.workspace.records import read_json

#: The shortest time between two in-place updates of a streamed reasoning display.
REASONING_REFRESH_S = 0.05

#: The events the cell shows as lines.
_SHOWN = frozenset({"tool_call_requested", "tool_call_started", "tool_call_completed",
                    "tool_call_failed", "model_call_attempt_failed", "model_completed"})


class Bundle:
    """A display object with a plain-text and an optional HTML form."""

    def __init__(self, text: str, html: str | None = None) -> None:
        self.text = text
        self.html = html

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        bundle = {"text/plain": self.text}
        if self.html is not None:
            bundle["text/html"] = self.html
        return bundle


def reasoning_bundle(text: str, *, done: bool) -> Bundle:
    """The folded reasoning of one model call: ``<details>`` in HTML, the text indented
    under ``reasoning:`` in plain text."""
    words = len(text.split())
    state = "" if done else " …"
    summary = f"reasoning ({words} word{'' if words == 1 else 's'}){state}"
    plain = summary + ":\n" + "\n".join("  " + line for line in text.splitlines())
    html = (f"<details class=\"tl-agent-reasoning\"><summary>{escape(summary)}</summary>"
            f"<pre style=\"white-space:pre-wrap\">{escape(text)}</pre></details>")
    return Bundle(plain, html)


class _Handle:
    """A display id's ``update`` (typed)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def update(self, value: Bundle) -> None:
        self._handle.update(value)


def _show(value: Bundle) -> _Handle:
    return _Handle(display(value, display_id=True))  # type: ignore[no-untyped-call]


class AgentCellView:
    """What one ``%%agent`` cell shows while its run goes: fed with ``on_delta`` pieces and
    the run's events (on the loop's thread), written to the cell that started it."""

    def __init__(self, shell: Any, run_dir: Path | None = None) -> None:
        self.router = CellRouter(shell)
        #: The run's directory (set once the run exists; tool arguments are read under it).
        self.run_dir = run_dir
        self._lock = threading.Lock()
        self._tools: dict[str, tuple[_Handle, str, Any]] = {}
        self._reasoning: _Handle | None = None
        self._reasoning_text = ""
        self._reasoning_shown = 0.0
        self._text_open = False
        self._streamed_call = False

    # -- the stream -----------------------------------------------------------------------

    def on_delta(self, live: agent.LiveDelta) -> None:
        """A streamed piece: text is written at once, reasoning updates its fold."""
        delta = live.delta
        with self._lock, self.router.routed():
            self._streamed_call = True
            if delta.kind == "text":
                self._close_reasoning()
                _write(delta.text)
                self._text_open = not delta.text.endswith("\n")
            elif delta.kind == "reasoning":
                self._reasoning_text += delta.text
                now = time.monotonic()
                if self._reasoning is None:
                    self._reasoning = _show(reasoning_bundle(self._reasoning_text, done=False))
                    self._reasoning_shown = now
                elif now - self._reasoning_shown >= REASONING_REFRESH_S:
                    self._reasoning.update(reasoning_bundle(self._reasoning_text, done=False))
                    self._reasoning_shown = now

    def _close_reasoning(self) -> None:
        if self._reasoning is not None:
            self._reasoning.update(reasoning_bundle(self._reasoning_text, done=True))
        self._reasoning, self._reasoning_text = None, ""

    def _close_text(self) -> None:
        if self._text_open:
            _write("\n")
            self._text_open = False

    # -- the events -----------------------------------------------------------------------

    def on_event(self, record: Event) -> None:
        """A record of the run: tool calls, retried attempts and the end of a model call."""
        kind = record.type
        if kind not in _SHOWN:
            return
        payload: Any = getattr(record, "payload", None)
        with self._lock, self.router.routed():
            if kind == "model_completed":
                if not self._streamed_call:
                    self._show_response(str(payload.model_response_path))
                self._close_reasoning()
                self._close_text()
                self._streamed_call = False
            elif kind == "model_call_attempt_failed":
                self._close_reasoning()
                self._close_text()
                self._streamed_call = False
                then = "retrying" if payload.will_retry else "giving up"
                display(Bundle(f"⟳ model call attempt {payload.attempt} failed: "  # type: ignore[no-untyped-call]
                               f"{payload.message} ({then})"))
            elif kind in ("tool_call_requested", "tool_call_started"):
                if payload.call_id in self._tools:
                    return
                self._close_reasoning()
                self._close_text()
                arguments = arguments_at(self.run_dir, payload.arguments_path)
                line = tool_call_line(payload.name, arguments)
                self._tools[payload.call_id] = (_show(Bundle(line)), payload.name, arguments)
            else:
                shown = self._tools.pop(payload.call_id, None)
                if shown is None:
                    return
                handle, name, arguments = shown
                status = "ok" if not payload.is_error else (
                    "cancelled" if (payload.error_code or "").endswith(
                        ("cancelled", "interrupted")) else "error")
                handle.update(Bundle(tool_call_line(
                    name, arguments, status=status, elapsed_ms=payload.elapsed_ms,
                    error_code=payload.error_code,
                    message=payload.message if payload.is_error else None)))

    def _show_response(self, path: str) -> None:
        """A response that was not streamed: its reasoning (folded) and text, from the
        stored ``model-responses/`` file."""
        if self.run_dir is None:
            return
        try:
            stored = read_json(self.run_dir / path)
            response = ModelResponse.model_validate(stored["response"])
        except (OSError, ValueError, KeyError, TypeError):
            return
        if response.message.reasoning.strip():
            display(reasoning_bundle(response.message.reasoning,  # type: ignore[no-untyped-call]
                                     done=True))
        if response.text:
            _write(response.text)
            self._text_open = not response.text.endswith("\n")

    def finish(self) -> None:
        """Close what is still open (a fold, a line of text) when the run ends."""
        with self._lock, self.router.routed():
            self._close_reasoning()
            self._close_text()


def _write(text: str) -> None:
    import sys

    sys.stdout.write(text)
    sys.stdout.flush()


def outcome_bundle(outcome: agent.AgentOutcome, model_calls: int) -> Bundle:
    """The outcome line, plain and with the status as a badge in HTML."""
    line = outcome_line(outcome.status, outcome.rounds, outcome.usage, outcome.failure,
                              model_calls=model_calls, run_id=outcome.run.id)
    tone = {"completed": COLOURS["ok"], "cancelled": COLOURS["muted"]}.get(outcome.status,
                                                                      COLOURS["error"])
    rest = escape(line.removeprefix(outcome.status))
    html = (f"<div class=\"tl-agent-outcome\"><b style=\"color:{tone}\">"
            f"{escape(outcome.status)}</b>{rest}</div>")
    return Bundle(line, html)


# -- the magics ---------------------------------------------------------------------------

_F = Callable[..., Any]


def _magic_arguments() -> Callable[[_F], _F]:
    return cast(Callable[[_F], _F], magic_arguments.magic_arguments())  # type: ignore[no-untyped-call]


def _argument(*names: str, **options: Any) -> Callable[[_F], _F]:
    return cast(Callable[[_F], _F],
                magic_arguments.argument(*names, **options))  # type: ignore[no-untyped-call]


def _parse(magic: Any, name: str, line: str) -> argparse.Namespace:
    try:
        parsed: argparse.Namespace = magic.parser.parse_args(shlex.split(line))
        return parsed
    except (UsageError, ValueError) as exc:
        raise UsageError(f"{name}: {exc}") from None


def _identifier(magic: str, option: str, name: str) -> str:
    if not name.isidentifier():
        raise UsageError(f"{magic}: {option} {name}: not a Python identifier")
    return name


@magics_class
class AgentMagics(Magics):
    """``%%agent`` and ``%agent_models`` (see :mod:`tavernlab.notebook._agent_cell`)."""

    default_model = Unicode("", help="The model %%agent uses when no --model is given (a "
                            "PREFIX:MODEL name; %agent_models use SPEC sets it).").tag(
                                config=True)
    default_base_url = Unicode("", help="The base URL given with the default model (empty: "
                               "the prefix's own).").tag(config=True)

    def __init__(self, shell: Any, state: NotebookState, **kwargs: Any) -> None:
        super().__init__(shell, **kwargs)
        self.state = state

    @property
    def _namespace(self) -> dict[str, Any]:
        assert self.shell is not None
        return self.shell.user_ns  # type: ignore[no-any-return]

    def _model(self, args: argparse.Namespace) -> ModelProvider:
        if args.model is not None and args.model_var is not None:
            raise UsageError("%%agent: give --model SPEC or -m VAR, not both")
        if args.model_var is not None:
            value = self._namespace.get(args.model_var)
            if args.model_var not in self._namespace:
                raise UsageError(f"%%agent: -m {args.model_var}: no variable "
                                 f"{args.model_var!r} in the namespace")
            if isinstance(value, str):
                return from_spec(value, base_url=args.base_url)
            if not isinstance(value, ModelProvider):
                raise UsageError(f"%%agent: -m {args.model_var}: expected a model provider or "
                                 f"a model name, got {type(value).__name__}")
            return value
        spec = args.model or self.default_model
        if not spec:
            raise UsageError("%%agent: no model: pass --model PREFIX:MODEL (see "
                             "%agent_models) or choose one with %agent_models use SPEC")
        base_url = args.base_url if args.model is not None or args.base_url else (
            self.default_base_url or None)
        return from_spec(spec, base_url=base_url)

    @_magic_arguments()
    @_argument("--model", metavar="SPEC", default=None,
               help="the model, PREFIX:MODEL (openai:gpt-4o-mini, ollama:qwen3, "
                    "local:NAME, anthropic:NAME, scripted:FILE.json …; %%agent_models lists them)")
    @_argument("-m", dest="model_var", metavar="VAR", default=None,
               help="a model provider (or a model name) from the namespace")
    @_argument("--base-url", metavar="URL", default=None,
               help="the endpoint of the model's server (local:, vllm:, llamacpp: …)")
    @_argument("--rounds", type=int, metavar="N", default=None,
               help="the most model rounds the run may use (default: the Profile's, 80)")
    @_argument("--stream", dest="stream", action="store_true", default=None,
               help="stream the model's answers (the Profile's default)")
    @_argument("--no-stream", dest="stream", action="store_false",
               help="ask for whole answers; each is shown when it arrives")
    @_argument("--presentation", choices=("foreground", "background"), default=None,
               help="foreground runs commit to the chat (default: the Profile's)")
    @_argument("--chat", metavar="ID", default=None, help="the chat (default: agent)")
    @_argument("--run", metavar="VAR", default="_agent",
               help="store the Run in VAR (default _agent)")
    @_argument("--out", metavar="VAR", default="_agent_outcome",
               help="store the outcome in VAR (default _agent_outcome)")
    @_argument("--profile", metavar="FILE", default=None,
               help="a Profile as a JSON file (budgets, tools, retry, stream …)")
    @cell_magic
    def agent(self, line: str, cell: str) -> None:
        """Let a model do the cell's task in a new run of the current lab, live: its text
        streams into the cell, its reasoning folds, each tool call is one line completed
        in place, and the outcome ends the cell. The Run is kept in ``_agent`` (``--run``)
        and the outcome in ``_agent_outcome`` (``--out``); a kernel interrupt cancels the
        run. ``$name`` in the options is expanded from the namespace (the task is taken as
        written).

        Examples
        --------
        ::

          %%agent --model scripted:answers.json
          Count the words of story.md with the wordcount skill and commit the answer.

          %%agent --model ollama:qwen3 --rounds 8
          Write a two-line poem about lighthouses to output/main.md and commit it.

          %%agent --model local:my-model --base-url http://127.0.0.1:8080/v1 --no-stream
          Summarise the files under /output.

          %agent_models use openrouter:openai/gpt-4o-mini
        """
        args = _parse(self.agent, "%%agent", line)
        task = cell.removesuffix("\n")
        if not task.strip():
            raise UsageError("%%agent: the cell is the task; it is empty")
        run_var = _identifier("%%agent", "--run", args.run)
        out_var = _identifier("%%agent", "--out", args.out)
        model = self._model(args)
        profile = agent.profile_from(args.profile, args.rounds, label="%%agent: ")
        lab = self.state.lab
        view = AgentCellView(self.shell)
        handle = cast(agent.AgentHandle, lab.start_agent(
            task, model=model, chat_id=args.chat, profile=profile,
            presentation=args.presentation, stream=args.stream, on_delta=view.on_delta))
        run = handle.run
        view.run_dir = run.dir
        model_calls = 0

        def show(record: Event) -> None:
            nonlocal model_calls
            model_calls += record.type == "model_completed"
            view.on_event(record)

        subscription = follow(run, show, _SHOWN, order_key)
        self.state.use_run(run)
        self._namespace[run_var] = run
        interrupted = False
        try:
            while True:  # a second interrupt while the run stops only waits again
                try:
                    outcome = handle.wait()
                    break
                except KeyboardInterrupt:
                    interrupted = True
        finally:
            subscription.close()
            view.finish()
        self._namespace[out_var] = outcome
        display(outcome_bundle(outcome, model_calls))  # type: ignore[no-untyped-call]
        if interrupted:
            raise cell_interrupted()

    @line_magic
    def agent_models(self, line: str) -> Any:
        """List the model prefixes ``%%agent --model`` takes, with the variable each one's
        key is read from and whether it is set (never its value); ``use SPEC [--base-url
        URL]`` makes SPEC the model of every ``%%agent`` without ``--model`` (a missing
        credential is reported at once, naming the variable to set).

        Examples
        --------
        ::

          %agent_models
          %agent_models use ollama:qwen3
          %agent_models use local:my-model --base-url http://127.0.0.1:8080/v1
          %agent_models use anthropic:claude-sonnet-4-5
        """
        words = shlex.split(line)
        if not words:
            return Bundle(model_prefixes_text(model_prefixes(), self.default_model),
                          model_prefixes_html(model_prefixes(), self.default_model))
        if words[0] != "use" or len(words) not in (2, 4) or (
                len(words) == 4 and words[2] != "--base-url"):
            raise UsageError("%agent_models: usage: %agent_models [use SPEC [--base-url URL]]")
        base_url = words[3] if len(words) == 4 else None
        from_spec(words[1], base_url=base_url)  # the credential and the name, checked now
        self.default_model = words[1]
        self.default_base_url = base_url or ""
        return Bundle(f"%%agent now uses {words[1]}" + (f" at {base_url}" if base_url else ""))


_registered: dict[int, AgentMagics] = {}


def load_agent_magics(ip: Any, state: NotebookState) -> None:
    """Register ``%%agent`` and ``%agent_models`` with ``ip`` (the extension does it when it
    loads): they use the extension's ``state``, so its current lab."""
    if id(ip) in _registered:
        return
    magics = AgentMagics(ip, state)
    ip.register_magics(magics)
    _registered[id(ip)] = magics


def unload_agent_magics(ip: Any) -> None:
    """Remove ``%%agent`` and ``%agent_models`` and their settings."""
    magics = _registered.pop(id(ip), None)
    if magics is None:
        return
    table = ip.magics_manager.magics
    table["cell"].pop("agent", None)
    table["line"].pop("agent_models", None)
    ip.magics_manager.registry.pop(AgentMagics.__name__, None)
    if magics in ip.configurables:
        ip.configurables.remove(magics)


__all__ = ["AgentCellView", "AgentMagics", "Bundle", "outcome_bundle", "reasoning_bundle"]
