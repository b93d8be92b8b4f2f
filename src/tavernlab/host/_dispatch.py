"""Executing one tool call the way the host does (docs/tool-calls.md).

:func:`call_tool` writes the arguments file, the ``tool_call_*`` events, the stored result and
the status changes around the handler; :class:`CallContext` is what the handler sees (the
:class:`~tavernlab.workspace.tools.ToolContext` of that call).

tavernlab choices where upstream is unknown (documented here):

* Tool-argument files: ``tool-args/<invocation-id>/round-NNN-call_<hash>.json``.
* An unknown tool id, or a compatibility-mode tool while the mode is off, is
  ``tool.unknown`` ``Unknown tool `<id>`.``; a call over a round budget is
  ``tool.budget_exceeded`` (over a call budget, upstream's ``agent.tool_budget_exhausted``);
  a call in a round whose earlier call was cancelled is not executed
  and returns ``tool.round_cancelled``.
* Arguments that are not JSON values, hold a lone surrogate, or nest deeper than 128 levels
  (serde_json's recursion limit, which upstream's parser applies) are
  ``tool.invalid_arguments``, recorded as a call like any other.
* Call ids the host makes are ``call_<N>`` from the run's own counter
  (:mod:`tavernlab.host._call_ids`), so two processes on one run never reuse one. The
  arguments file and the stored result are created, never replaced: a call id already used
  in the round fails the run before the second call starts (``workspace.write_conflict``,
  the first call's files and records untouched).
* The host's own writes of a call: when its arguments file cannot be written (no space, no
  descriptor left) the call is refused with ``workspace.file_io`` before anything of it is
  recorded, and the run goes on; when its stored result cannot be, the call is recorded as
  ``tool_call_failed`` (level error) with that error, with no stored result, and the run
  fails (a dispatch error ends a run).
* The call acts on the round's tracker under its own id
  (:meth:`~tavernlab.workspace.scope._tracking.MutationTracker.acting`), so an auto-commit names
  the call that last set or moved the candidate.

A call the agent loop makes carries a :class:`LoopCall`, and takes upstream's dispatch
pipeline through the same function: the raw arguments are stored (must not exist yet: a
repeated call id ends the run before the second call starts), ``tool_call_requested`` names
the tool snapshot and ``argumentsRef``, the invocation's gate checks its budgets
(``agent.tool_budget_exhausted``; a refused call does not count), arguments that are not an
object are ``tool.invalid_arguments`` (after the budget was charged), a completion tool that
is not the last call of its response is ``agent.tool_after_finish``, commits go through the
host handshake (whose confirmation replaces the tool's own result), ``workspace.finish`` only
tells the loop, and the file events follow the call's completed event.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import json.encoder
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import tavernlab.layout as layout
from tavernlab.cancel import CancelToken
from tavernlab.clock import Clock, IdFactory
from tavernlab.errors import FileIo, ToolError, WorkspaceError, WriteConflict
from tavernlab.events import (
    EventScope,
    FileWritten,
    LoopFileWritten,
    LoopToolCallRef,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallOutcome,
    ToolCallRef,
    ToolCallRequested,
    ToolCallStarted,
    WorkspaceFileWritten,
    WorkspacePatchApplied,
)
from tavernlab.host import _commits as commits
from tavernlab.host import _rounds as rounds
from tavernlab.host._core import RunCore
from tavernlab.host._invocation import Invocation
from tavernlab.host._registry import ToolRegistry
from tavernlab.host._restore import call_number
from tavernlab.host._results import results_path, store_result
from tavernlab.layout import tool_record_name
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.macros import FrozenContext
from tavernlab.workspace.records import write_json
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.scope import ReadRecords, ScopedWorkspaceFs
from tavernlab.workspace.text import text_metrics
from tavernlab.workspace.tools import WORKSPACE_TOOLS, Arguments, ToolResult

#: The handlers of the workspace tools, which only use the storage port (and hold no other
#: lock): a call of one of them holds the workspace lock once, from its first operation to
#: its stored result (:meth:`~tavernlab.workspace.storage.WorkspaceFs.lease`), instead of
#: taking it again for the stored result.
PORT_HANDLERS = frozenset(spec.handler for spec in WORKSPACE_TOOLS)
_NO_HOLD = contextlib.nullcontext()
#: Tools that end an invocation's turn and must be the last call of a model response.
COMPLETION_TOOLS = frozenset({"workspace.finish", "agent.handoff", "task.return"})
#: How much of invalid arguments the ``tool.invalid_arguments`` message quotes.
INVALID_ARGUMENTS_QUOTE = 200


@dataclass(slots=True)
class ToolGate:
    """An invocation's call budgets (upstream's request gate): ``maxCallsPerInvocation`` and
    the per-tool caps, counted when a call passes (a refused call costs nothing)."""

    max_calls: int | None
    max_per_tool: dict[str, int] = field(default_factory=dict)
    total: int = 0
    per_tool: Counter[str] = field(default_factory=Counter)

    def admit(self, tool_id: str, native_name: str) -> ToolError | None:
        """Reserve one call of ``tool_id``, or the recoverable refusal."""
        if self.max_calls is not None and self.total >= self.max_calls:
            return ToolError("agent.tool_budget_exhausted", "The tool call limit for this "
                             f"task has been reached ({self.max_calls} calls).")
        cap = self.max_per_tool.get(tool_id, self.max_per_tool.get(native_name))
        if cap is not None and self.per_tool[tool_id] >= cap:
            return ToolError("agent.tool_budget_exhausted", f"`{native_name}` has reached "
                             f"its call limit for this task ({cap} calls).")
        self.total += 1
        self.per_tool[tool_id] += 1
        return None


@dataclass(slots=True)
class LoopCall:
    """What the agent loop adds to one call: the tool snapshot, the tool's full id
    (``builtin:workspace.write_file``; the registry knows it by its native name), the round,
    the model's raw
    arguments (an object, or the text it sent), whether it is the response's last call, the
    invocation's gate, and the loop's hooks for commits and for ending the turn.

    ``commit(ctx, path, text, sha256, mode, reason)`` runs the host handshake (it raises the
    recoverable rejection); ``finish(reason)`` tells the loop that ``workspace.finish`` was
    accepted; ``control`` is the loop's delegation service; ``cancel`` the loop's cancel
    token, which cancels the call too. After the call, ``deferred`` holds the file events
    (emitted after the call's completed event).
    """

    snapshot_id: str
    full_id: str
    alias: str
    round: int
    is_last: bool
    gate: ToolGate
    commit: Callable[..., None] | None = None
    finish: Callable[[str | None], None] | None = None
    control: Any = None
    owns_status: bool = True
    cancel: CancelToken | None = None
    #: The aliases an externalized result's notice names for reading and searching it
    #: (``None``: that tool is not advertised, and the notice leaves its line out).
    readers: tuple[str | None, str | None] = ("workspace_read_file", "workspace_search_files")
    deferred: list[tuple[type[Any], Any]] = field(default_factory=list)

#: Deepest nesting of tool arguments (serde_json's default recursion limit).
MAX_ARGUMENT_DEPTH = 128


@dataclass(slots=True)
class CallContext:
    """The :class:`~tavernlab.workspace.tools.ToolContext` of one call, and the
    :class:`~tavernlab.host._run_control.RunControlContext` the host's run-control tools see
    (the calling agent's mode, the run's target, the commit, finish and return handshakes)."""

    core: RunCore
    invocation: Invocation
    call_id: str
    tool_id: str
    round: int
    token: CancelToken = field(default_factory=CancelToken)
    output: Callable[[str, str], None] | None = None
    loop: LoopCall | None = None

    @property
    def scope(self) -> ScopedWorkspaceFs:
        """The calling agent's policy view."""
        return self.invocation.scope

    @property
    def records(self) -> ReadRecords:
        """The calling agent's read records."""
        return self.invocation.records

    @property
    def profile(self) -> Profile:
        """The calling agent's Profile."""
        return self.invocation.profile

    @property
    def frozen(self) -> FrozenContext:
        """The run's frozen host facts and macros."""
        return self.core.frozen

    @property
    def skills(self) -> Any:
        """The calling agent's bound skills."""
        return self.invocation.skills

    @property
    def agent_mode(self) -> Literal["main", "return"]:
        """``main`` or ``return``."""
        return self.invocation.mode

    @property
    def is_chat(self) -> bool:
        """Whether the run works for a Chat target."""
        return self.core.is_chat

    @property
    def commit_required(self) -> bool:
        """Whether finishing needs an explicit commit first."""
        return self.core.commit_required

    @property
    def shell_deadline_s(self) -> float:
        """The run's shell deadline in seconds."""
        return self.core.shell_deadline_s

    @property
    def clock(self) -> Clock:
        """The lab's clock."""
        return self.core.clock

    @property
    def ids(self) -> IdFactory:
        """The lab's id factory."""
        return self.core.ids

    def file_written(self, path: str, sha256: str, *, mode: str) -> None:
        """Record ``workspace_file_written`` (a loop call's after its completed event)."""
        if self.loop is not None:
            self.loop.deferred.append((WorkspaceFileWritten, self._loop_file(
                path, sha256, mode=mode)))
            return
        self.core.emit(WorkspaceFileWritten, FileWritten(call_id=self.call_id, path=path,
                                                         sha256=sha256, mode=mode))

    def patch_applied(self, path: str, sha256: str, replacements: int) -> None:
        """Record ``workspace_patch_applied`` (a loop call's after its completed event)."""
        if self.loop is not None:
            self.loop.deferred.append((WorkspacePatchApplied, self._loop_file(
                path, sha256, replacements=replacements)))
            return
        self.core.emit(WorkspacePatchApplied, FileWritten(
            call_id=self.call_id, path=path, sha256=sha256, replacements=replacements))

    def _loop_file(self, path: str, sha256: str, **extra: Any) -> LoopFileWritten:
        try:
            text = self.core.fs.read_text(WorkspacePath(path)).text
        except Exception:  # the file changed under the call: its measures are unknown
            text = ""
        chars, words = text_metrics(text)
        return LoopFileWritten(call_id=self.call_id, path=path, sha256=sha256,
                               invocation_id=self.invocation.id, chars=chars, words=words,
                               **extra)

    def commit_to_chat(self, *, path: str, text: str, sha256: str, mode: str,
                       reason: str | None) -> tuple[int, int]:
        """An explicit commit of this call (a loop call's goes through the host handshake);
        returns the message's ``(index, swipe)``."""
        if self.loop is not None and self.loop.commit is not None:
            self.loop.commit(self, path, text, sha256, mode, reason)
            target = self.core.counters.output_target
            assert target is not None
            return target
        return commits.commit_to_chat(self.core, path=path, text=text, sha256=sha256,
                                      mode=mode, is_explicit=True, call_id=self.call_id,
                                      reason=reason)

    def finish_run(self, reason: str | None) -> dict[str, Any]:
        """End the run (a loop call only tells the loop, which ends the run after the
        round)."""
        if self.loop is not None and self.loop.finish is not None:
            self.loop.finish(reason)
            return {}
        return commits.complete(self.core, self.core.main)

    def return_result(self, text: str) -> str:
        """Write this sub-agent's result file."""
        return commits.write_subagent_result(self.core, self.invocation, text)

    @property
    def agent_control(self) -> Any:
        """The loop's delegation service for the Agent control tools (``None`` by hand)."""
        return None if self.loop is None else self.loop.control


def call_tool(core: RunCore, registry: ToolRegistry, invocation: Invocation, tool_id: str,
              arguments: Any, call_id: str | None,
              on_output: Callable[[str, str], None] | None = None,
              loop: LoopCall | None = None) -> ToolResult:
    """Execute one tool call with every record the host writes; see :meth:`Run.call_tool`.

    The call's records are written together when it ends (one locked append per log, see
    :mod:`tavernlab.host._feed`), or earlier while it runs: when a streaming tool first hands
    output to ``on_output`` and every half second (so a long call is seen while it runs)."""
    core.require_active()
    rounds.begin_work(core)
    with core.feed.batch():
        stored, interrupted = _call(core, registry, invocation, tool_id, arguments, call_id,
                                    on_output, loop)
    if core.record.is_terminal:
        core.call_ids.close()  # no call follows until the run is resumed
        core.on_end()  # after the finishing call's own records are written
    if interrupted is not None:
        raise interrupted
    return stored


def _call(core: RunCore, registry: ToolRegistry, invocation: Invocation, tool_id: str,
          arguments: Any, call_id: str | None, on_output: Callable[[str, str], None] | None,
          loop: LoopCall | None = None) -> tuple[ToolResult, BaseException | None]:
    if loop is None:
        core.announce(invocation)
    counters = core.counters
    if call_id is None:
        counters.call_seq = core.call_ids.next(counters.call_seq)
        call_id = f"call_{counters.call_seq}"
    elif call_number(call_id):
        core.call_ids.note(call_number(call_id))
    ctx = CallContext(core, invocation, call_id, tool_id,
                      counters.round if loop is None else loop.round,
                      output=None if on_output is None else flushing_first(core, on_output),
                      loop=loop)
    record_name = tool_record_name(ctx.round, ctx.call_id)
    flat = type(arguments) is dict and _flat_storable(arguments)  # storable, without encoding
    refusal = None if flat else unstorable(arguments)
    relative = layout.tool_args_path(invocation.id, record_name)
    args_path = f"{core.dir}/{relative}"
    try:
        if loop is None:
            write_json(args_path, {"callId": ctx.call_id, "toolId": tool_id,
                                   "arguments": _stored_arguments(arguments, refusal)},
                       ascii_only=True, exclusive=True, staging=core.staging,
                       plain=flat and type(tool_id) is str and type(ctx.call_id) is str)
        else:
            write_new_json(args_path, arguments, core.staging)
    except FileExistsError:
        raise _duplicate(core, ctx, relative) from None
    except OSError as exc:  # nothing of the call is recorded: the run goes on
        raise FileIo("write", relative, exc) from None
    scope = EventScope(invocation_id=invocation.id)
    if loop is None:
        ref = ToolCallRef(round=ctx.round, invocation_id=invocation.id, call_id=ctx.call_id,
                          tool_id=tool_id, name=tool_id.replace(".", "_"),
                          arguments_path=relative)
        core.emit(ToolCallRequested, ref, scope=scope)
    else:
        command = (arguments.get("command") if tool_id == "workspace.shell"
                   and isinstance(arguments, dict) else None)
        ref = LoopToolCallRef(round=ctx.round, invocation_id=invocation.id,
                              call_id=ctx.call_id, tool_id=loop.full_id, name=tool_id,
                              arguments_path=relative, snapshot_id=loop.snapshot_id,
                              arguments_ref=relative,
                              command=command if isinstance(command, str) else None)
        core.emit(ToolCallRequested, ref, scope=scope)
        gated = loop.gate.admit(loop.full_id, tool_id)
        if gated is None and not isinstance(arguments, dict):
            gated = ToolError("tool.invalid_arguments", invalid_arguments_message(arguments))
        if gated is not None:
            result = ToolResult.from_error(gated)
            result.call_id, result.tool_id = ctx.call_id, loop.full_id
            started = core.clock.monotonic()
            try:
                stored = store_result(core, invocation, record_name, result,
                                      round_number=ctx.round, level="debug")
            except (WorkspaceError, OSError) as exc:
                _host_fault(core, ctx, started, scope, exc)
                raise
            _record_outcome(core, ctx, result, started, scope)
            return stored, None
        ref = LoopToolCallRef(round=ctx.round, invocation_id=invocation.id,
                              call_id=ctx.call_id, tool_id=loop.full_id, name=tool_id,
                              snapshot_id=loop.snapshot_id)
    if loop is None:
        core.emit(ToolCallStarted, ref, scope=scope)
    started = core.clock.monotonic()
    spec = registry.get(tool_id)
    with (core.activities.activity("tool", ctx.call_id) as activity,
          core.tracker.acting(ctx.call_id),
          core.fs.lease() if spec is not None and spec.handler in PORT_HANDLERS
          else _NO_HOLD):
        if loop is not None:
            if loop.owns_status:
                core.set_status("dispatching_tool", index=False)
            core.emit(ToolCallStarted, ref, scope=scope)
        if loop is not None and tool_id in COMPLETION_TOOLS and not loop.is_last:
            result, interrupted = ToolResult.from_error(ToolError(
                "agent.tool_after_finish", f"{tool_id} must be the final tool call in a model "
                "turn; complete the other work first, then call it again.")), None
        elif loop is not None and loop.cancel is not None:
            # the loop's cancellation reaches the call even before the call's own token is
            # tracked as running work
            signal = loop.cancel
            unregister = signal.on_cancel(lambda: ctx.token.cancel(signal.reason))
            try:
                result, interrupted = _execute(core, registry, ctx, arguments, refusal)
            finally:
                unregister()
        else:
            result, interrupted = _execute(core, registry, ctx, arguments, refusal)
        if ctx.token.cancelled:
            counters.round_cancelled = True
        result.call_id = ctx.call_id
        result.tool_id = tool_id if loop is None else loop.full_id
        try:
            stored = store_result(core, invocation, record_name, result,
                                  round_number=ctx.round,
                                  level=None if loop is None else "debug",
                                  readers=None if loop is None else loop.readers,
                                  then=activity.take_changes)
        except (WorkspaceError, OSError) as exc:  # no space, no descriptor, a conflict
            _host_fault(core, ctx, started, scope, exc)
            raise
    message = None
    if loop is not None and result.is_error and not loop.full_id.startswith("builtin:"):
        message = ("External tool returned an error; full result: "
                   f"{results_path(core, invocation, record_name)}")
    _record_outcome(core, ctx, stored, started, scope, message)  # externalized refs
    if loop is not None:
        for kind, payload in loop.deferred:
            core.emit(kind, payload, scope=scope)
    elif not core.record.is_terminal:
        core.set_status("calling_model")
    return stored, interrupted


def write_new_json(path: str | Path, value: Any, staging: str | Path | None = None) -> None:
    """Write ``value`` as pretty JSON (non-ASCII kept; escaped only when the text holds a
    lone surrogate) to a file that must not exist yet, whole (a tool call's stored arguments
    or an invocation's tool snapshot: a second call with the same id in the same round is
    refused with ``FileExistsError``, and the first one's record stays as it was)."""
    try:
        write_json(path, value, exclusive=True, staging=staging)
    except UnicodeEncodeError:  # a lone surrogate: kept, escaped
        write_json(path, value, ascii_only=True, exclusive=True, staging=staging)


def invalid_arguments_message(raw: Any) -> str:
    """``tool.invalid_arguments`` for arguments that are not a JSON object (upstream's text,
    quoting at most the first 200 characters of what the model sent)."""
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    quoted = (text[:INVALID_ARGUMENTS_QUOTE] + "…" if len(text) > INVALID_ARGUMENTS_QUOTE
              else text)
    return ("arguments must be a JSON object; send `{}` when the call takes no arguments. "
            f"Received: `{quoted}`")


def _host_fault(core: RunCore, ctx: CallContext, started: float, scope: EventScope,
                exc: BaseException) -> None:
    """The host could not keep a call's records (its stored result could not be written:
    no space, no descriptor, a file another process wrote): ``tool_call_failed`` with the
    error (level error), and the run fails, as a dispatch error ends a run. The call is
    then finished in the log, with no stored result."""
    message = f"{getattr(exc, 'code', type(exc).__name__)}: {exc}"
    loop = ctx.loop
    core.emit(ToolCallFailed, ToolCallOutcome(
        round=ctx.round, invocation_id=ctx.invocation.id, call_id=ctx.call_id,
        tool_id=ctx.tool_id if loop is None else loop.full_id,
        snapshot_id=None if loop is None else loop.snapshot_id,
        name=ctx.tool_id.replace(".", "_") if loop is None else ctx.tool_id,
        is_error=True, error_code=getattr(exc, "code", None), message=message,
        elapsed_ms=int((core.clock.monotonic() - started) * 1000), resource_refs=[]),
        level="error", scope=scope)
    exc.recorded = True  # type: ignore[attr-defined]  # the loop does not record it again
    if loop is None:  # the loop ends a run it drives itself
        core.fail(message)


def _duplicate(core: RunCore, ctx: CallContext, relative: str) -> WriteConflict:
    """A second call with an id already used in this round: its arguments are never
    written over the first call's (whose records stay as they are), and the run fails
    before the second call starts."""
    error = WriteConflict(relative, "already_exists", actual_sha256=hashlib.sha256(
        (core.dir / relative).read_bytes()).hexdigest())
    error.not_started = True  # type: ignore[attr-defined]  # the call never started
    if ctx.loop is None:  # the loop ends a run it drives itself
        core.fail(f"duplicate tool call id `{ctx.call_id}` in round {ctx.round}: {error}")
    return error


def flushing_first(core: RunCore, listener: Callable[[str, str], None]
                   ) -> Callable[[str, str], None]:
    """``listener``, after the records held so far are written (output never arrives
    before the records of the call it belongs to)."""
    def output(stdout: str, stderr: str) -> None:
        core.feed.flush()
        listener(stdout, stderr)
    return output


def _execute(core: RunCore, registry: ToolRegistry, ctx: CallContext, arguments: Any,
             refusal: str | None) -> tuple[ToolResult, BaseException | None]:
    """The handler's result (or the refusal, or the interruption); an internal fault fails
    the run and propagates."""
    with core.inflight.track(ctx.token):
        try:
            if ctx.loop is None:
                core.set_status("dispatching_tool", index=False)
            if refusal is not None:
                return ToolResult.from_error(ToolError("tool.invalid_arguments", refusal)), None
            return _dispatch(core, registry, ctx, arguments), None
        except KeyboardInterrupt as exc:
            ctx.token.cancel("interrupted")
            return ToolResult.from_error(ToolError(
                "tool.interrupted", "The tool call was interrupted before it finished.")), exc
        except Exception as exc:
            if ctx.loop is None:  # the loop ends a run it drives itself
                core.fail(f"{type(exc).__name__}: {exc}")
            raise


def _record_outcome(core: RunCore, ctx: CallContext, result: ToolResult, started: float,
                    scope: EventScope, message: str | None = None) -> None:
    outcome = ToolCallOutcome(
        round=ctx.round, invocation_id=ctx.invocation.id, call_id=ctx.call_id,
        tool_id=ctx.tool_id if ctx.loop is None else ctx.loop.full_id,
        snapshot_id=None if ctx.loop is None else ctx.loop.snapshot_id,
        name=ctx.tool_id.replace(".", "_") if ctx.loop is None else ctx.tool_id,
        is_error=result.is_error, error_code=result.error_code,
        message=(message or result.content) if result.is_error else None,
        elapsed_ms=int((core.clock.monotonic() - started) * 1000),
        resource_refs=result.resource_refs)
    core.emit(ToolCallFailed if result.is_error else ToolCallCompleted, outcome, scope=scope)
    core.counters.call_finished(ctx.tool_id, ctx.round, ctx.call_id)


def _dispatch(core: RunCore, registry: ToolRegistry, ctx: CallContext, arguments: Any
              ) -> ToolResult:
    spec = registry.get(ctx.tool_id)
    try:
        if spec is None or (spec.compat and not core.profile.skills.legacy_run_script):
            raise ToolError("tool.unknown", f"Unknown tool `{ctx.tool_id}`.")
        if ctx.loop is None:
            check_budgets(core, ctx.tool_id)
        if core.counters.round_cancelled and ctx.loop is None:
            raise ToolError("tool.round_cancelled", "An earlier tool call of this round was "
                            "cancelled, so this call was not executed.")
        if spec.available is not None and (refusal := spec.available(ctx)) is not None:
            raise ToolError(*refusal)
        return spec.handler(ctx, Arguments(arguments, spec.arguments))
    except ToolError as exc:
        return ToolResult.from_error(exc)


def check_budgets(core: RunCore, tool_id: str) -> None:
    """Refuse a call by hand over the Profile's round, call or per-tool budget. The call
    budgets are upstream's (``agent.tool_budget_exhausted``, counted over the run's calls by
    hand); the round budget is tavernlab's own rule for calls by hand
    (``tool.budget_exceeded``), since upstream only counts rounds in the loop."""
    budgets, counters = core.profile.tools, core.counters
    if budgets.max_rounds is not None and counters.round > budgets.max_rounds:
        raise ToolError("tool.budget_exceeded",
                        f"The run used all {budgets.max_rounds} rounds of its tool budget.")
    if budgets.max_calls_per_run is not None and counters.calls >= budgets.max_calls_per_run:
        raise ToolError("agent.tool_budget_exhausted", "The tool call limit for this task has "
                        f"been reached ({budgets.max_calls_per_run} calls).")
    cap = budgets.max_calls_per_tool.get(tool_id,
                                         budgets.max_calls_per_tool.get(f"builtin:{tool_id}"))
    if cap is not None and counters.calls_per_tool[tool_id] >= cap:
        raise ToolError("agent.tool_budget_exhausted",
                        f"`{tool_id}` has reached its call limit for this task ({cap} calls).")


def unstorable(arguments: Any) -> str | None:
    """Why ``arguments`` cannot be a tool call's JSON arguments, or ``None`` when they can."""
    if _depth_exceeds(arguments, MAX_ARGUMENT_DEPTH):
        return f"arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep"
    try:
        _strict_json(arguments).encode("utf-8")
    except (TypeError, ValueError) as exc:
        if isinstance(exc, UnicodeEncodeError):
            return "arguments must be valid Unicode text (found a lone surrogate)"
        return f"arguments must be JSON values: {exc}"
    return None


#: Integers this far from zero are always written by ``json`` (past 4300 digits it refuses).
_SMALL_INT = 10**18


def _flat_storable(arguments: dict[Any, Any]) -> bool:
    """Whether ``arguments``, an object of text, booleans, ``null`` and integers of at most
    18 digits under text keys (most tool arguments), is surely storable: of these, only a
    string holding a lone surrogate fails :func:`unstorable`'s encoding. ``False`` says
    nothing: the full checks decide."""
    for key, value in arguments.items():
        if type(key) is not str or not (key.isascii() or _is_utf8(key)):
            return False
        kind = type(value)
        if kind is str:
            if not (value.isascii() or _is_utf8(value)):
                return False
        elif kind is int:
            if not -_SMALL_INT < value < _SMALL_INT:
                return False
        elif value is not None and kind is not bool:
            return False
    return True


def _is_utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _strict_json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, allow_nan=False)``: the same text and the same
    errors (a cycle included), from the C encoder straight away (``json.dumps`` builds an
    encoder object in Python first when asked for anything but its defaults)."""
    if _MAKE_ENCODER is None:  # an interpreter without the C accelerator
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    chunks = _MAKE_ENCODER({}, _STRICT.default, json.encoder.encode_basestring, None, ": ",
                           ", ", False, False, False)
    return "".join(chunks(value, 0))


_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_STRICT = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether lists and dicts nest deeper than ``limit`` (iterative: no recursion limit)."""
    if limit >= 1 and isinstance(value, dict) and not any(
            isinstance(child, dict | list | tuple) for child in value.values()):
        return False  # a flat object, as most tool arguments are: one level
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _stored_arguments(arguments: Any, refusal: str | None) -> Any:
    """What the arguments file keeps: the arguments, or for refused ones a description (their
    ``repr`` when it can be computed, else the refusal)."""
    if refusal is None:
        return arguments
    try:
        return repr(arguments)
    except RecursionError:
        return f"<{refusal}>"
