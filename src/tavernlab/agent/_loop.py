"""The agent loop over a run: rounds of one model call and the tool calls it asked for.

:class:`AgentLoop` drives a Chat run the way upstream's runtime does (see
:mod:`tavernlab.agent`): bootstrap (the invocation, ``input/resolved_skills.json``, the tool
snapshot, the model binding, ``context_assembled``), then per round a model step (the request,
the call with the retry policy, ``model-responses/``, the response appended to the transcript,
drift recovery for a response without tool calls) and a tools step (each call, in the model's
order, through the host's dispatch with a :class:`~tavernlab.host.LoopCall`, its
result appended as its own ``tool`` message, the round's auto-commit candidate, the automatic
commit at the end of the round), until a completion tool is accepted; then ``finish_run``
(persist publication, the metadata link) and the finalisation that chooses the terminal status
(``completed``, ``partial_success``, ``failed``, ``cancelled``) and closes the model sessions.

Cancellation (:meth:`AgentLoop.cancel`, from any thread) is observed at the start of every
model step, during model calls and retry pauses, before and after every tool call and inside
the tools; the run ends ``cancelled`` with ``Generation cancelled by user``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import tavernlab.layout as layout
from tavernlab.agent._delegation import Delegation
from tavernlab.agent._failure import LoopError, failure_payload
from tavernlab.agent._frames import Frame, LoopCancelled
from tavernlab.agent._mcp import McpTools
from tavernlab.agent._prompt import (
    completion_tool_name,
    default_system_prompt,
    drift_nudge,
    prompt_snapshot,
    runtime_catalogs,
)
from tavernlab.agent._tools import Mode, build_snapshot
from tavernlab.cancel import CancelToken
from tavernlab.errors import ToolError, WorkspaceError
from tavernlab.events import (
    AgentInvocationCancelled,
    AgentInvocationCompleted,
    AgentInvocationFailed,
    AgentInvocationStarted,
    AgentInvocationTransferred,
    AgentLoopFinished,
    AgentModelBindingResolved,
    ContextAssembled,
    DirectOutput,
    DirectOutputCaptured,
    DriftRecovery,
    DriftRecoveryAttempted,
    EventScope,
    InvocationRef,
    InvocationStart,
    LoopContext,
    LoopFinish,
    MessageText,
    ModelAttempt,
    ModelAttemptFailure,
    ModelBindingResolved,
    ModelCallAttemptFailed,
    ModelCallAttemptStarted,
    ModelCallRetryScheduled,
    ModelCompleted,
    ModelRequestCreated,
    ModelRequestSummary,
    ModelResponseStored,
    ModelRetryScheduled,
    ModelTurn,
    ProviderStateSummary,
    ProviderStateUpdated,
    RoundEnd,
    RoundEnded,
    RunCancelled,
    RunCancelRequested,
    RunCompleted,
    RunFailed,
    RunFailure,
    RunPartialSuccess,
    StoredModelResponse,
    TaskReturnFacts,
    TaskReturnRecorded,
    ToolCallFailed,
    ToolCallOutcome,
    WorkspaceFileWritten,
    WorkspacePatchApplied,
)
from tavernlab.host import (
    CallContext,
    CommitLedger,
    Invocation,
    LoopCall,
    Run,
    RunCore,
    ToolGate,
    ToolRegistry,
    call_tool,
    host_commit,
    publish_persist,
    write_new_json,
)
from tavernlab.models import (
    CANCELLED_MESSAGE,
    Delta,
    ModelCallError,
    ModelCancelled,
    ModelMessage,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ToolInvocation,
    ToolResultPart,
    Usage,
)
from tavernlab.models import ToolResult as ModelToolResult
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.records import write_json
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.scope import is_text_file
from tavernlab.workspace.storage import WriteGuard
from tavernlab.workspace.text import text_metrics
from tavernlab.workspace.tools import ToolResult, ToolSpec

#: Where a failing ``on_delta`` observer is reported (it never breaks the run).
LOG = logging.getLogger("tavernlab.subscribers")
#: How much of a response's text ``model_completed.narration`` quotes.
NARRATION_CHARS = 280


@dataclass(frozen=True, slots=True)
class LiveDelta:
    """A streamed piece of a model call, for a live view (never written to the run's
    records): which invocation, round and attempt it belongs to, and the piece."""

    run_id: str
    invocation_id: str
    round: int
    attempt: int
    delta: Delta


DeltaObserver = Callable[[LiveDelta], None]


@dataclass(slots=True)
class Candidate:
    """The round's auto-commit candidate: the path and the call that made it one."""

    call_id: str
    path: str


@dataclass(slots=True)
class Totals:
    """What the outcome reports besides the status."""

    usage: Usage = field(default_factory=Usage)
    rounds: int = 0
    model_calls: int = 0


class AgentLoop:
    """The loop driving one run with one model provider."""

    def __init__(self, run: Run, core: RunCore, registry: ToolRegistry,
                 provider: ModelProvider, *, task: str, stream: bool,
                 on_delta: DeltaObserver | None = None,
                 review: Callable[[dict[str, Any]], str | None] | None = None,
                 agents: Mapping[str, Profile] | None = None,
                 owns_provider: bool = False) -> None:
        self.run = run
        self.core = core
        self.registry = registry
        #: The lab's tools; ``registry`` adds the MCP tools the run's invocations listed.
        self.base_registry = registry
        self.mcp = McpTools()
        self._external: dict[str, ToolSpec] = {}
        self.provider = provider
        self.task = task
        self.stream = stream
        self.on_delta = on_delta
        self.owns_provider = owns_provider
        self.token = CancelToken()
        self.ledger = CommitLedger(review=review)
        self.totals = Totals()
        self.frames: list[Frame] = []
        self.foreground: Frame | None = None
        self.delegation = Delegation(self, dict(agents or {}))
        self.failure: dict[str, Any] | None = None
        self._cancel_lock = threading.Lock()
        self._cancel_requested = False

    # -- control ------------------------------------------------------------------------------

    def cancel(self, reason: str | None = None) -> int:
        """Cancel the run from any thread: ``run_cancel_requested``, status ``cancelling``,
        the loop's signal and every tool call running now; ``run_cancelled`` will say
        ``reason`` (``Generation cancelled by user`` by default). Returns how many pieces of
        work were signalled (0 once the run has ended)."""
        reason = reason or CANCELLED_MESSAGE
        core = self.core
        with self._cancel_lock:
            if core.record.is_terminal or self._cancel_requested:
                return 0
            self._cancel_requested = True
        core.emit(RunCancelRequested, None)
        core.set_status("cancelling")
        tokens = core.inflight.live()
        self.token.cancel(reason)
        for token in tokens:
            token.cancel(reason)
        return 1 + len(tokens)

    def _check(self) -> None:
        if self.token.cancelled:
            raise LoopCancelled()

    # -- the whole run ------------------------------------------------------------------------

    def execute(self) -> str:
        """Bootstrap, run the invocation chain and finalise; returns the terminal status."""
        error: BaseException | None = None
        try:
            frame = self._bootstrap()
            while True:
                self.run_frame(frame)
                if frame.exit != "transferred" or frame.transfer is None:
                    break
                self.delegation.handoff_finished(frame, "completed")
                frame = frame.transfer.child
                self.foreground = frame
                self.start_frame(frame)
            self._check()
            self._finish_run(frame)
        except LoopCancelled as exc:
            error = exc
        except ModelCancelled:
            error = LoopCancelled()
        except Exception as exc:
            error = LoopCancelled() if self.token.cancelled else exc
        return self._finalize(error)

    def _bootstrap(self) -> Frame:
        core = self.core
        profile = core.profile
        self._check()
        skills = self._skills()
        stored_skills: list[dict[str, Any]] = []
        if skills:  # the skill engine is loaded only by a run that binds skills
            from tavernlab.skills import bindings_to_json

            stored_skills = bindings_to_json(core.skills)
        write_json(core.dir / layout.RESOLVED_SKILLS, stored_skills)
        frame = self.new_frame(profile, kind="root", parent=None, first_message=self.task,
                               invocation=core.main, announce_binding=True)
        self.foreground = frame
        self.start_frame(frame)
        return frame

    def _skills(self) -> list[Any]:
        return [self.core.skills[name] for name in sorted(self.core.skills)]

    def new_frame(self, profile: Profile, *, kind: str, parent: Frame | None,
                  first_message: str, invocation: Invocation | None = None,
                  announce_binding: bool = False) -> Frame:
        """An invocation ready to run: announced, its tool snapshot written
        (``input/invocations/<id>/tool_snapshot.json``, never rewritten: an invocation
        driven again by an external agent keeps the one it has), its request built (the
        system prompt with its catalogs, then ``first_message``) and ``context_assembled``
        recorded."""
        core = self.core
        mode: Mode = "child" if kind == "subagent" else "root"
        if invocation is None:
            for root in profile.policy().materialized_roots:
                (core.workspace_dir / root).mkdir(exist_ok=True)
            invocation = core.new_invocation(profile.id, "return" if mode == "child"
                                             else "main", profile, announce=False)
        exit_policy = "task_return_required" if mode == "child" else "run_finish_allowed"
        parent_id = None if parent is None else parent.invocation.id
        scope = EventScope(invocation_id=invocation.id)
        core.announce(invocation, InvocationStart(
            invocation_id=invocation.id, parent_invocation_id=parent_id,
            profile_id=profile.id, kind=kind, status="created", exit_policy=exit_policy))
        external = self.mcp.tools_for(profile) if profile.mcp.servers else []
        if external:
            self._external.update((spec.id, spec) for spec in external)
            self.registry = ToolRegistry([*self.base_registry, *self._external.values()])
        snapshot = build_snapshot(self.registry, profile, invocation.id, mode=mode,
                                  chat=core.is_chat, external=external)
        snapshot_path = layout.tool_snapshot_path(invocation.id)
        driven_externally = bool(getattr(self.provider, "drives_externally", False))
        if not (driven_externally and (core.dir / snapshot_path).exists()):
            write_new_json(core.dir / snapshot_path, snapshot.to_json(), core.staging)
        if announce_binding:
            binding = self.provider.describe()
            core.emit(AgentModelBindingResolved, ModelBindingResolved(
                mode="configured", chat_completion_source=self._source(),
                custom_api_format=self.provider.provider_format,
                model_id=self.provider.model_id, binding=binding))
            self._check()
        system = default_system_prompt(profile, snapshot, mode=mode)
        described = self.provider.describe().get("params")
        params = {"model": self.provider.model_id,
                  **(described if isinstance(described, dict) else {}),
                  **(profile.model.params if profile.model is not None else {})}
        if kind == "root" and not driven_externally:
            write_json(core.dir / layout.PROMPT_SNAPSHOT,
                       prompt_snapshot(system, self.task, params))
        ops = tuple(op for op, tool in (("delegate", "agent.delegate"),
                                        ("handoff", "agent.handoff")) if snapshot.has(tool))
        agents = self.delegation.catalog(profile, ops) if ops else None  # type: ignore[arg-type]
        messages = [ModelMessage.of_text("system",
                                         system + runtime_catalogs(self._skills(), agents))]
        if kind == "handoff":
            messages.append(ModelMessage.of_text("user", self.task))
        messages.append(ModelMessage.of_text("user", first_message))
        request = ModelRequest(
            payload=params, messages=messages, tools=snapshot.model_tools(),
            tool_choice="auto",
            provider_state={"sessionId": f"{core.id}:{invocation.id}", "runId": core.id,
                            "invocationId": invocation.id})
        frame = Frame(invocation, kind, exit_policy, mode, profile, snapshot, request,
                      ToolGate(profile.tools.max_calls_per_run,
                               dict(profile.tools.max_calls_per_tool)),
                      profile.tools.max_rounds, parent_id=parent_id)
        self.frames.append(frame)
        if frame.owns_run_status:
            core.set_status("assembling_context")
        retry = profile.run.model_retry
        core.emit(ContextAssembled, LoopContext(
            has_host_context=False, request=self._summary(frame), invocation_id=invocation.id,
            tool_snapshot=snapshot.summary(), tool_snapshot_path=snapshot_path,
            tool_turn=snapshot.turn(), max_rounds=frame.max_rounds or 0,
            context_policy={"initialChatHistoryMessages": -1,
                            "includeActivatedWorldInfo": True},
            model_retry={"maxRetries": retry.max_retries, "intervalMs": retry.interval_ms}),
            scope=scope)
        return frame

    def start_frame(self, frame: Frame) -> None:
        """``agent_invocation_started``."""
        self._check()
        self.core.emit(AgentInvocationStarted, self._invocation_ref(
            frame, "running", exit_policy=frame.exit_policy),
            scope=EventScope(invocation_id=frame.invocation.id))

    def end_frame(self, frame: Frame, status: str) -> None:
        """``agent_invocation_<status>`` for an invocation that is not the run's last."""
        kind = {"completed": AgentInvocationCompleted, "failed": AgentInvocationFailed,
                "cancelled": AgentInvocationCancelled,
                "transferred": AgentInvocationTransferred}[status]
        self.core.emit(kind, self._invocation_ref(frame, status),
                       scope=EventScope(invocation_id=frame.invocation.id))

    def _invocation_ref(self, frame: Frame, status: str, *, exit_policy: str | None = None
                        ) -> InvocationRef:
        ref = InvocationRef(invocation_id=frame.invocation.id,
                            parent_invocation_id=frame.parent_id,
                            profile_id=frame.profile.id, kind=frame.kind, status=status)
        if exit_policy is None:
            return ref
        return InvocationStart(**dict(ref), exit_policy=exit_policy)

    def _cancel_message(self, error: LoopCancelled) -> str:
        """What ``run_cancelled`` says: the reason ``cancel(reason)`` was given (upstream's
        ``Generation cancelled by user`` by default), else the error's own message."""
        return self.token.reason if self.token.cancelled and self.token.reason else (
            error.message)

    def _source(self) -> str:
        return str(getattr(self.provider, "source", self.provider.provider_format))

    def _summary(self, frame: Frame) -> dict[str, Any]:
        return {"chatCompletionSource": str(getattr(self.provider, "source",
                                                    self.provider.provider_format)),
                "customApiFormat": self.provider.provider_format,
                "model": self.provider.model_id, "messageCount": len(frame.request.messages),
                "toolCount": len(frame.request.tools)}

    # -- one invocation -----------------------------------------------------------------------

    def run_frame(self, frame: Frame) -> None:
        """Play an invocation's rounds until a completion tool ends its turn."""
        while frame.exit is None:
            self._model_step(frame)

    def _model_step(self, frame: Frame) -> None:
        core, invocation = self.core, frame.invocation
        scope = EventScope(invocation_id=invocation.id)
        self._check()
        if frame.max_rounds is not None and frame.round > frame.max_rounds:
            if frame.mode == "child":
                raise LoopError("agent.max_tool_rounds_exceeded", "task.return was not called "
                                f"within {frame.max_rounds} rounds")
            tool = completion_tool_name(frame.snapshot, frame.mode)
            raise LoopError("agent.max_tool_rounds_exceeded",
                            f"{tool} was not completed within {frame.max_rounds} rounds")
        if frame.owns_run_status:
            core.set_status("calling_model")
        core.emit(ModelRequestCreated, ModelRequestSummary(
            round=frame.round, invocation_id=invocation.id, tool_turn=frame.snapshot.turn(),
            request=self._summary(frame)), scope=scope)
        # the round has started once its request is made: a run cancelled or failed during
        # this model call used it
        self.totals.rounds = max(self.totals.rounds, frame.round)
        response, attempts, elapsed_ms = self._generate(frame)
        self.totals.model_calls += 1
        self.totals.usage = self.totals.usage + response.usage
        path = self._store_response(frame, response)
        core.emit(ModelResponseStored, StoredModelResponse(
            round=frame.round, invocation_id=invocation.id, path=path,
            response_id=response.response_id, model=response.model), scope=scope)
        state = response.provider_state
        core.emit(ProviderStateUpdated, ProviderStateSummary(
            round=frame.round, invocation_id=invocation.id, provider_state={
                key: state.get(key) for key in (
                    "chatCompletionSource", "providerFormat", "transport", "messageCursor",
                    "lastResponseId", "previousResponseId", "nativeContinuation")}),
            scope=scope)
        core.emit(ModelCompleted, self._turn(frame, response, path, attempts, elapsed_ms),
                  scope=scope)
        captured = None
        if not response.tool_calls:
            captured = self._capture_direct_output(frame, response, path)
        if state:
            frame.request.provider_state = dict(state)
        frame.request.messages.append(response.message)
        if not response.tool_calls:
            self._drift(frame, captured)
            return
        self._check()
        self._tools_step(frame, response.tool_calls)

    def _turn(self, frame: Frame, response: ModelResponse, path: str, attempts: int,
              elapsed_ms: int) -> ModelTurn:
        text = response.text
        reasoning = response.message.reasoning
        chars, words = text_metrics(text)
        r_chars, r_words = text_metrics(reasoning)
        narration = None
        if response.tool_calls and text.strip():
            narration = {"source": "assistantText", "text": text[:NARRATION_CHARS],
                         "totalChars": chars, "totalWords": words,
                         "truncated": chars > NARRATION_CHARS}
        return ModelTurn(
            has_assistant_text=bool(text.strip()), assistant_text_chars=chars,
            assistant_text_words=words, has_reasoning=bool(reasoning.strip()),
            reasoning_chars=r_chars, reasoning_words=r_words, narration=narration,
            round=frame.round, invocation_id=frame.invocation.id, model_response_path=path,
            tool_call_count=len(response.tool_calls), text_chars=chars, text_words=words,
            attempts=attempts, elapsed_ms=elapsed_ms,
            usage=response.usage.model_dump(mode="json", by_alias=True, exclude_none=True))

    def _generate(self, frame: Frame) -> tuple[ModelResponse, int, int]:
        """The model's answer with upstream's retry policy (fixed interval, no backoff);
        returns it with the number of attempts and the milliseconds they took."""
        core, invocation = self.core, frame.invocation
        scope = EventScope(invocation_id=invocation.id)
        retry = frame.profile.run.model_retry
        timeout_s = frame.profile.run.model_timeout_ms / 1000.0
        started = core.clock.monotonic()
        attempt = 1
        while True:
            core.emit(ModelCallAttemptStarted, ModelAttempt(
                round=frame.round, invocation_id=invocation.id, attempt=attempt,
                max_retries=retry.max_retries), scope=scope)
            core.feed.flush()
            try:
                response = self.provider.generate(
                    frame.request.model_copy(deep=True), stream=self.stream,
                    on_delta=self._observer(frame, attempt) if self.stream else None,
                    cancel=self.token, timeout_s=timeout_s)
                elapsed = int((core.clock.monotonic() - started) * 1000)
                return response, attempt, elapsed
            except ModelCancelled:
                raise LoopCancelled() from None
            except ModelCallError as exc:
                if self.token.cancelled:
                    raise LoopCancelled() from None
                will_retry = exc.retryable and attempt <= retry.max_retries
                core.emit(ModelCallAttemptFailed, ModelAttemptFailure(
                    round=frame.round, invocation_id=invocation.id, attempt=attempt,
                    max_retries=retry.max_retries, retryable=exc.retryable,
                    will_retry=will_retry, message=exc.message),
                    level="warn" if will_retry else "error", scope=scope)
                if not will_retry:
                    raise
                core.emit(ModelCallRetryScheduled, ModelRetryScheduled(
                    round=frame.round, invocation_id=invocation.id, next_attempt=attempt + 1,
                    interval_ms=retry.interval_ms), scope=scope)
                core.feed.flush()
                if self.token.wait(retry.interval_ms / 1000.0) or self.token.cancelled:
                    raise LoopCancelled() from None
                attempt += 1

    def _observer(self, frame: Frame, attempt: int) -> Callable[[Delta], None] | None:
        observer = self.on_delta
        if observer is None:
            return None
        run_id, invocation_id, round_number = self.core.id, frame.invocation.id, frame.round

        def forward(delta: Delta) -> None:
            try:
                observer(LiveDelta(run_id, invocation_id, round_number, attempt, delta))
            except Exception:  # a live view's fault never breaks the run
                LOG.exception("on_delta observer failed")
        return forward

    def _store_response(self, frame: Frame, response: ModelResponse) -> str:
        path = layout.model_response_path(
            None if frame.kind == "root" else frame.invocation.id, frame.round)
        write_json(self.core.dir / path, {
            "round": frame.round, "invocationId": frame.invocation.id,
            "response": response.model_dump(mode="json", by_alias=True)})
        return path

    # -- drift recovery -----------------------------------------------------------------------

    def _capture_direct_output(self, frame: Frame, response: ModelResponse, response_path: str
                               ) -> str | None:
        text = response.text
        if not text.strip():
            return None
        root = frame.profile.workspace.message_body_path.split("/", 1)[0]
        path = f"{root}/direct_output.md"
        self.core.fs.write_text(WorkspacePath(path), text, WriteGuard.unchecked())
        chars, words = text_metrics(text)
        self.core.emit(DirectOutputCaptured, DirectOutput(
            round=frame.round, path=path, chars=chars, words=words,
            sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
            model_response_path=response_path),
            scope=EventScope(invocation_id=frame.invocation.id))
        return path

    def _drift(self, frame: Frame, captured: str | None) -> None:
        frame.drift_attempts += 1
        frame.request.messages.append(ModelMessage.of_text("user", drift_nudge(
            frame.snapshot, frame.mode, frame.drift_attempts, self.ledger.explicit, captured)))
        if frame.max_rounds is None or frame.round < frame.max_rounds:
            self.core.emit(DriftRecoveryAttempted, DriftRecovery(
                attempt=frame.drift_attempts, max_attempts=(frame.max_rounds or 0) - 1,
                max_rounds=frame.max_rounds or 0, round=frame.round,
                invocation_id=frame.invocation.id, committed_count=self.ledger.explicit),
                scope=EventScope(invocation_id=frame.invocation.id))
            self._next_round(frame, None)
            return
        raise LoopError("model.tool_call_required", "model must use Agent tools and complete "
                        f"through {completion_tool_name(frame.snapshot, frame.mode)}")

    # -- tools --------------------------------------------------------------------------------

    def play_calls(self, frame: Frame, calls: list[ToolInvocation]) -> None:
        """One round's tools step: ``calls`` in order through the host's dispatch, each
        result appended to the transcript as its own ``tool`` message, the round's automatic
        commit, then ``agent_loop_finished`` (a completion tool was accepted) or the next
        round. The model step calls it with a response's calls; an external agent (the MCP
        server) with one call per round."""
        self._tools_step(frame, calls)

    def _tools_step(self, frame: Frame, calls: list[ToolInvocation]) -> None:
        core, invocation = self.core, frame.invocation
        candidate: Candidate | None = None
        for index, call in enumerate(calls):
            self._check()
            binding = frame.snapshot.by_id(call.tool_id)
            if binding is None:
                raise LoopError("model.unknown_tool_call", f"tool `{call.tool_id}` is not "
                                f"available in snapshot `{frame.snapshot.id}`")
            loop_call = LoopCall(
                snapshot_id=frame.snapshot.id, full_id=binding.tool_id, alias=binding.alias,
                round=frame.round, is_last=index + 1 == len(calls), gate=frame.gate,
                commit=self._explicit_commit(frame), finish=self._finisher(frame),
                control=self.delegation, owns_status=frame.owns_run_status,
                cancel=self.token, readers=self._readers(frame))
            try:
                result = call_tool(core, self.registry, invocation, binding.native,
                                            call.arguments, call.call_id, loop=loop_call)
            except LoopCancelled:
                raise
            except Exception as exc:
                if getattr(exc, "not_started", False):  # this call id is recorded already
                    frame.request.messages.append(self._tool_message(call, ToolResult(
                        content=str(exc), is_error=True, error_code="agent.tool_not_started",
                        call_id=call.call_id, tool_id=binding.tool_id)))
                    raise LoopError("agent.tool_not_started", f"tool call `{call.call_id}` "
                                    f"was already recorded in round {frame.round}",
                                    kind="internal") from exc
                # the call started and has no confirmed result: the run cannot be resumed
                extra = core.record.__pydantic_extra__  # run.json's extra ``blockedReason``
                if extra is not None:
                    extra["blockedReason"] = (f"Tool {call.call_id} ({binding.tool_id}) has "
                                              f"no confirmed result: {exc}")
                if getattr(exc, "recorded", False):  # the host recorded the failed call
                    raise
                core.emit(ToolCallFailed, ToolCallOutcome(
                    round=frame.round, invocation_id=invocation.id, call_id=call.call_id,
                    tool_id=binding.tool_id, snapshot_id=frame.snapshot.id,
                    name=binding.native, is_error=True,
                    error_code=exc.code if isinstance(exc, LoopError) else None,
                    message=(str(exc) if isinstance(exc, LoopError)
                             else f"{type(exc).__name__}: {exc}"), elapsed_ms=0),
                    level="error",
                    scope=EventScope(invocation_id=invocation.id))
                raise
            candidate = self._candidate(frame, binding.native, loop_call, result, candidate)
            if binding.native == "task.return" and not result.is_error:
                self._returned(frame, result)
            frame.request.messages.append(self._tool_message(call, result))
            if binding.native == "agent.handoff" and frame.exit == "transferred":
                self.end_frame(frame, "transferred")
            if binding.native == "workspace.finish" and frame.exit == "finished":
                self.delegation.cancel_unfinished(frame)
            if loop_call.deferred and any(kind is WorkspacePatchApplied
                                          for kind, _ in loop_call.deferred) \
                    and frame.owns_run_status:
                core.set_status("applying_workspace_patch")
            self._check()
        if frame.owns_run_status and candidate is not None and self._auto_commits():
            self._auto_commit(frame, candidate)
        if frame.exit is not None:
            core.emit(AgentLoopFinished, LoopFinish(
                commit_count=len(self.ledger.entries), round=frame.round,
                invocation_id=invocation.id), scope=EventScope(invocation_id=invocation.id))
            return
        if frame.exit_policy == "run_finish_allowed":
            notice = self.delegation.after_round(frame)
            if notice is not None:
                frame.request.messages.append(ModelMessage.of_text("user", notice))
        self._next_round(frame, None)

    @staticmethod
    def _readers(frame: Frame) -> tuple[str | None, str | None]:
        """The read and search aliases an externalized result's notice may name."""
        snapshot = frame.snapshot
        read, search = (snapshot.alias(native) if snapshot.has(native) else None
                        for native in ("workspace.read_file", "workspace.search_files"))
        return read, search

    def _returned(self, frame: Frame, result: ToolResult) -> None:
        """A delegated task's ``task.return``: its result is recorded for the parent and its
        invocation ends."""
        structured = result.structured if isinstance(result.structured, dict) else {}
        path = str(structured.get("path", ""))
        status = str(structured.get("status", "completed"))
        try:
            summary = self.core.fs.read_text(WorkspacePath(path)).text
        except WorkspaceError:
            summary = ""
        frame.exit, frame.result_ref, frame.summary = "returned", path, summary
        frame.returned_status = status
        chars, words = text_metrics(summary)
        self.core.emit(TaskReturnRecorded, TaskReturnFacts(
            invocation_id=frame.invocation.id, status=status, result_ref=path,
            summary_chars=chars, summary_words=words),
            scope=EventScope(invocation_id=frame.invocation.id))

    def _next_round(self, frame: Frame, committed: str | None) -> None:
        """Close the round (the host's round record and tracker) and start the next."""
        core = self.core
        if frame.owns_run_status:
            core.note(RoundEnded, RoundEnd(round=frame.round, auto_committed=committed))
            core.tracker.reset()
            core.counters.round_cancelled = False
            core.counters.round = frame.round + 1
        frame.round += 1

    @staticmethod
    def _tool_message(call: ToolInvocation, result: ToolResult) -> ModelMessage:
        return ModelMessage(role="tool", parts=[ToolResultPart(result=ModelToolResult(
            call_id=call.call_id, tool_id=result.tool_id or call.tool_id,
            content=result.content, structured=result.structured, is_error=result.is_error,
            error_code=result.error_code, resource_refs=list(result.resource_refs)))],
            provider_metadata={"modelAlias": call.model_alias})

    def _candidate(self, frame: Frame, native: str, loop_call: LoopCall, result: ToolResult,
                   current: Candidate | None) -> Candidate | None:
        """The round's candidate after one call (upstream's rules: a streamed text write
        clears it, a patch sets it, a shell call replaces it with what it tracked; only a
        successful call's text path is adopted)."""
        call_id = result.call_id or ""
        if native == "workspace.shell":
            if result.is_error:
                return None
            tracker = self.core.tracker
            if tracker.candidate_call_id == call_id:
                path = tracker.candidate
                return (Candidate(call_id, path) if path is not None and is_text_file(path)
                        else None)
            return current
        for kind, payload in loop_call.deferred:
            if kind is WorkspaceFileWritten:
                path = payload.path
                if self.stream and is_text_file(path):
                    current = None
                elif not result.is_error and is_text_file(path):
                    current = Candidate(call_id, path)
            elif kind is WorkspacePatchApplied:
                path = payload.path
                if not result.is_error and is_text_file(path):
                    current = Candidate(call_id, path)
        return current

    def _auto_commits(self) -> bool:
        """Only a foreground Chat run commits a round's text edits automatically."""
        return self.core.is_chat and self.core.record.presentation == "foreground"

    def _auto_commit(self, frame: Frame, candidate: Candidate) -> None:
        """The end-of-round automatic commit, unless an explicit commit succeeded, the path
        is not a text file any more, or it is a blank message body; a host rejection is
        logged and ignored."""
        if self.ledger.explicit or not is_text_file(candidate.path):
            return
        try:
            file = self.core.fs.read_text(WorkspacePath(candidate.path))
        except WorkspaceError:
            return
        body = frame.profile.workspace.message_body_path
        if candidate.path == body and not file.text.strip():
            return
        host_commit(self.core, self.ledger, invocation_id=frame.invocation.id,
                    call_id=candidate.call_id, path=candidate.path, text=file.text,
                    sha256=file.sha256, mode="replace", is_explicit=False, reason=None,
                    round_number=frame.round)

    def _explicit_commit(self, frame: Frame) -> Callable[..., None]:
        def commit(ctx: CallContext, path: str, text: str, sha256: str, mode: str,
                   reason: str | None) -> None:
            rejection = host_commit(self.core, self.ledger, invocation_id=frame.invocation.id,
                                    call_id=ctx.call_id, path=path, text=text, sha256=sha256,
                                    mode=mode, is_explicit=True, reason=reason,
                                    round_number=frame.round)
            if rejection is not None:
                raise ToolError("agent.chat_commit_rejected", rejection)
        return commit

    def _finisher(self, frame: Frame) -> Callable[[str | None], None]:
        def finish(reason: str | None) -> None:
            frame.exit = "finished"
        return finish

    # -- the end ------------------------------------------------------------------------------

    def _finish_run(self, frame: Frame) -> None:
        core = self.core
        core.set_status("finishing")
        if core.chat is not None and core.persist_snapshot is not None:
            publish_persist(core, message_id=self.ledger.last_message_id)
        self.delegation.handoff_finished(frame, "completed")

    def _finalize(self, error: BaseException | None) -> str:
        core = self.core
        frame = self.foreground
        status: Literal["completed", "partial_success", "cancelled", "failed"]
        event: type[AgentInvocationCompleted | AgentInvocationCancelled | AgentInvocationFailed]
        if error is None:
            status, inv_status, event = "completed", "completed", AgentInvocationCompleted
        elif isinstance(error, LoopCancelled):
            status, inv_status, event = "cancelled", "cancelled", AgentInvocationCancelled
        else:
            status = "partial_success" if self.ledger.entries else "failed"
            inv_status, event = "failed", AgentInvocationFailed
            self.failure = failure_payload(error)
        if frame is not None and error is not None and not core.record.is_terminal:
            self.delegation.handoff_finished(frame, inv_status, str(error))
        for session in [f"{core.id}:{f.invocation.id}" for f in self.frames]:
            with contextlib.suppress(Exception):  # a failing close does not stop the end
                self.provider.close_session(session)
        self.mcp.close()  # every MCP server the run started ends with it
        close = getattr(self.provider, "close", None)
        if self.owns_provider and callable(close):
            with contextlib.suppress(Exception):
                close()
        if core.record.is_terminal:
            return core.record.status
        if frame is not None:
            invocation = frame.invocation
            core.emit(event, self._invocation_ref(frame, inv_status),
                      scope=EventScope(invocation_id=invocation.id))
        core.set_status(status)
        if status == "completed":
            core.emit(RunCompleted, None)
        elif status == "cancelled":
            assert isinstance(error, LoopCancelled)
            core.emit(RunCancelled, MessageText(message=self._cancel_message(error)))
        else:
            assert self.failure is not None
            failure = dict(self.failure)
            if status == "partial_success":
                failure.update(retryable=False, userRetryable=False,
                               preservedCommitCount=len(self.ledger.entries),
                               preservedCommits=[dict(e) for e in self.ledger.entries])
                self.failure = failure
                core.emit(RunPartialSuccess, RunFailure(**failure))
            else:
                core.emit(RunFailed, RunFailure(**failure))
        core.save_record()
        core.feed.flush()
        core.on_end()
        return status

