"""A run driven by an external agent, one tool call at a time (what tavernlab's MCP server
serves).

:class:`ExternalAgent` gives an outside agent (any MCP client) exactly what a model driving the
run sees and gets: the invocation's tool snapshot (aliases, descriptions, schemas), the
system prompt, and for each call the text a model receives (the result's content, or
``## Tool error\\n\\n`` and the content stripped, with ``is_error`` set). Each call is one
round of the agent loop (:meth:`AgentLoop.play_calls`): the same dispatch, gate, budgets,
records (``tool-args/``, ``tool-results/``, events, journal) and end-of-round automatic
commit as a call the model makes. An accepted ``workspace.finish`` ends the run as the loop
does; a later call gets a recoverable error naming the finished run, and so does a call on
a run that failed or was cancelled.

The run's model binding (``agent_model_binding_resolved``) names the provider ``mcp``:
tavernlab never asks it for a response.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass
from typing import Any

from tavernlab.agent._api import Presentation
from tavernlab.agent._api import _resolve as resolve_run_settings
from tavernlab.agent._frames import Frame, LoopCancelled
from tavernlab.agent._loop import AgentLoop
from tavernlab.cancel import CancelToken
from tavernlab.errors import AgentError, RunStateError
from tavernlab.host import Lab, Run
from tavernlab.models import (
    CANCELLED_MESSAGE,
    DeltaCallback,
    ModelRequest,
    ModelResponse,
    ModelTool,
    ToolInvocation,
)
from tavernlab.workspace.roots import Profile

#: The task a run started for an external agent records as its first user message.
EXTERNAL_TASK = "An external agent drives this run through tavernlab's MCP server."
#: The chat a run started for an external agent uses when none is named.
DEFAULT_EXTERNAL_CHAT = "mcp"


class ExternalClient:
    """The model binding of a run an external agent drives (provider ``mcp``)."""

    drives_externally = True

    def __init__(self, client: str = "mcp") -> None:
        self.client = client

    @property
    def provider_format(self) -> str:
        """``mcp``."""
        return "mcp"

    @property
    def model_id(self) -> str:
        """The external agent's name as its MCP client gives it (``mcp`` when unknown)."""
        return self.client

    def describe(self) -> dict[str, Any]:
        """``{provider: mcp, model: <client>}``."""
        return {"provider": "mcp", "model": self.client}

    def generate(self, request: ModelRequest, *, stream: bool,
                 on_delta: DeltaCallback | None, cancel: CancelToken,
                 timeout_s: float = 600.0) -> ModelResponse:
        """Never called: the external agent chooses the calls itself."""
        raise AgentError("agent.external_model: an externally driven run asks no model",
                         code="agent.external_model")

    def close_session(self, session_id: str) -> None:
        """Nothing is kept per session."""


@dataclass(frozen=True, slots=True)
class CallAnswer:
    """What one call gave the external agent: the text a model would read, and whether it
    is an error."""

    text: str
    is_error: bool


def model_text(content: str, is_error: bool) -> str:
    """The tool message's text: ``content``, or ``## Tool error\\n\\n`` + content stripped."""
    return "## Tool error\n\n" + content.strip() if is_error else content


class ExternalAgent:
    """One run's root invocation, driven call by call (thread-safe: calls run one at a
    time, in arrival order)."""

    def __init__(self, run: Run, loop: AgentLoop, frame: Frame, *, owns_run: bool) -> None:
        self.run = run
        self._loop = loop
        self._frame = frame
        self._owns_run = owns_run
        self._lock = threading.Lock()
        self._ended = False

    @classmethod
    def start(cls, lab: Lab, *, chat_id: str | None = None,
              profile: Profile | dict[str, Any] | None = None,
              presentation: Presentation | None = None, client: str = "mcp"
              ) -> ExternalAgent:
        """A new Chat run in ``chat_id`` (default ``mcp``) for an external agent, its
        context assembled and its root invocation started (the Profile is checked as for a
        model-driven run: directly runnable, and a foreground run needs
        ``workspace.commit``)."""
        resolved, chosen, _ = resolve_run_settings(lab, profile, presentation, False)
        run = lab.start_loop_run(chat_id or DEFAULT_EXTERNAL_CHAT, presentation=chosen,
                                 profile=resolved)
        return cls._drive(lab, run, owns_run=True, client=client)

    @classmethod
    def attach(cls, lab: Lab, run: Run | str, *, client: str = "mcp") -> ExternalAgent:
        """Drive an active run of ``lab`` (a run object or its id) from its current round;
        its root invocation keeps the tool snapshot it has (one is written if it has none).
        The invocation's call budget counts the calls made from now on."""
        opened = lab.open_run(run) if isinstance(run, str) else run
        core = opened._core
        core.require_active()
        if core.loop_cancel is not None:
            raise RunStateError(f"run `{opened.id}` is already driven by an agent loop")
        return cls._drive(lab, opened, owns_run=False, client=client)

    @classmethod
    def _drive(cls, lab: Lab, run: Run, *, owns_run: bool, client: str) -> ExternalAgent:
        core = run._core
        loop = AgentLoop(run, core, lab.tools, ExternalClient(client),
                         task=EXTERNAL_TASK, stream=False)
        try:
            if owns_run:
                frame = loop._bootstrap()
            else:
                frame = loop.new_frame(core.profile, kind="root", parent=None,
                                       first_message=EXTERNAL_TASK, invocation=core.main)
                frame.round = core.counters.round
                loop.foreground = frame
                loop.start_frame(frame)
        except BaseException as exc:
            loop._finalize(exc)
            raise
        agent = cls(run, loop, frame, owns_run=owns_run)
        core.loop_cancel = agent.cancel
        core.loop_done = threading.Event()
        return agent

    @property
    def instructions(self) -> str:
        """The system prompt a model driving this invocation reads (with its catalogs)."""
        first = self._frame.request.messages[0]
        return "".join(getattr(part, "text", "") or "" for part in first.parts)

    def tools(self) -> list[ModelTool]:
        """The invocation's tools, in snapshot order."""
        return self._frame.snapshot.model_tools()

    @property
    def ended(self) -> bool:
        """Whether the run has ended."""
        return self._ended or self.run.record.is_terminal

    def call(self, alias: str, arguments: Any, *, call_id: str | None = None) -> CallAnswer:
        """One call of the tool ``alias`` with ``arguments`` (a JSON object, or what the
        client sent), as its own round."""
        with self._lock:
            frame, loop = self._frame, self._loop
            if self.ended:
                record = self.run.record
                return CallAnswer(model_text(
                    f"Run `{self.run.id}` is {record.status}; it takes no more tool calls. "
                    "Start a new run to continue.", True), True)
            binding = next((b for b in frame.snapshot.bindings if b.alias == alias), None)
            if binding is None:
                return CallAnswer(model_text(f"Unknown tool `{alias}`.", True), True)
            call = ToolInvocation(call_id=call_id or f"call_{secrets.token_hex(8)}",
                                  tool_id=binding.tool_id,
                                  arguments=arguments if isinstance(arguments, dict | str)
                                  else str(arguments),
                                  provider_metadata={"modelAlias": alias})
            before = len(frame.request.messages)
            try:
                if self.run._core.record.status != "calling_model":
                    # as after a model step: the external agent is the model that answered
                    self.run._core.set_status("calling_model")
                loop.play_calls(frame, [call])
            except BaseException as exc:
                self._end(exc)
                failure = loop.failure or {}
                message = failure.get("message") or str(exc)
                code = failure.get("code")
                text = f"{code}: {message}" if code else message
                return CallAnswer(model_text(f"Run `{self.run.id}` ended "
                                             f"{self.run.record.status}: {text}", True), True)
            answer = self._answer(frame.request.messages[before:])
            if frame.exit is not None:
                self._finish()
            return answer

    @staticmethod
    def _answer(messages: list[Any]) -> CallAnswer:
        for message in messages:
            if message.role != "tool":
                continue
            for part in message.parts:
                result = getattr(part, "result", None)
                if result is not None:
                    return CallAnswer(model_text(result.content, result.is_error),
                                      result.is_error)
        raise AgentError("agent.internal_error: the call left no tool result",
                         code="agent.internal_error")

    def _finish(self) -> None:
        loop, frame = self._loop, self._frame
        try:
            loop._finish_run(frame)
        except BaseException as exc:
            self._end(exc)
            return
        self._end(None)

    def _end(self, error: BaseException | None) -> None:
        if self._ended:
            return
        self._ended = True
        if error is not None and self._loop.token.cancelled:
            error = LoopCancelled()
        try:
            self._loop._finalize(error)
        finally:
            self._release()

    def cancel(self, reason: str | None = None) -> int:
        """Cancel the run (from any thread): a call running now is cancelled and the run
        ends ``cancelled`` (saying ``reason``; ``Generation cancelled by user`` by
        default)."""
        reason = reason or CANCELLED_MESSAGE
        signalled = self._loop.cancel(reason)
        if self._lock.acquire(blocking=False):  # no call is running: end the run now
            try:
                self._end(LoopCancelled(reason))
            finally:
                self._lock.release()
        return signalled

    def _release(self) -> None:
        core = self.run._core
        core.loop_cancel = None
        done = core.loop_done
        if done is not None:
            done.set()

    def close(self) -> None:
        """Stop driving the run: a run this agent started and did not finish is cancelled
        (``Generation cancelled by user``); an attached run stays as it is. The MCP servers the
        invocation connected to are stopped."""
        with self._lock:
            if self._ended:
                return
            if self._owns_run and not self.run.record.is_terminal:
                self._loop.cancel()
                self._end(LoopCancelled())
                return
            self._ended = True
            self._loop.mcp.close()
            self._release()
