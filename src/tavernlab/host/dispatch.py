"""Executing one tool call the way the host does (docs/tool-calls.md).

:func:`call_tool` writes the arguments file, the ``tool_call_*`` events, the stored result and
the status changes around the handler; :class:`CallContext` is what the handler sees (the
:class:`~tavernlab.workspace.tooling.ToolContext` of that call).

tavernlab choices where upstream is unknown (documented here):

* Tool-argument files: ``tool-args/<invocation-id>/round-NNN-call_<hash>.json``.
* An unknown tool id, or a compatibility-mode tool while the mode is off, is
  ``tool.unknown`` ``Unknown tool `<id>`.``; a call over a tool budget is
  ``tool.budget_exceeded``; a call in a round whose earlier call was cancelled is not executed
  and returns ``tool.round_cancelled``.
* Arguments that are not JSON values, hold a lone surrogate, or nest deeper than 128 levels
  (serde_json's recursion limit, which upstream's parser applies) are
  ``tool.invalid_arguments``, recorded as a call like any other.
* Call ids the host makes are ``call_<N>`` from the run's own counter
  (:mod:`tavernlab.host.call_ids`), so two processes on one run never reuse one. The
  arguments file and the stored result are created, never replaced: a call id already used
  in the round fails the run before the second call starts (``workspace.write_conflict``,
  the first call's files and records untouched).
* The host's own writes of a call: when its arguments file cannot be written (no space, no
  descriptor left) the call is refused with ``workspace.file_io`` before anything of it is
  recorded, and the run goes on; when its stored result cannot be, the call is recorded as
  ``tool_call_failed`` (level error) with that error, with no stored result, and the run
  fails (a dispatch error ends a run).
* The call acts on the round's tracker under its own id
  (:meth:`~tavernlab.workspace.tracking.MutationTracker.acting`), so an auto-commit names
  the call that last set or moved the candidate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tavernlab.cancel import CancelToken
from tavernlab.clock import Clock, IdFactory
from tavernlab.errors import FileIo, ToolError, WorkspaceError, WriteConflict
from tavernlab.events import (
    EventScope,
    FileWritten,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallOutcome,
    ToolCallRef,
    ToolCallRequested,
    ToolCallStarted,
    WorkspaceFileWritten,
    WorkspacePatchApplied,
)
from tavernlab.host import commits, rounds
from tavernlab.host.core import RunCore
from tavernlab.host.invocation import Invocation
from tavernlab.host.registry import ToolRegistry
from tavernlab.host.restore import call_number
from tavernlab.host.results import store_result
from tavernlab.workspace.context import FrozenContext
from tavernlab.workspace.ids import tool_record_name
from tavernlab.workspace.profile import Profile
from tavernlab.workspace.reads import ReadRecords
from tavernlab.workspace.records import write_json
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.tooling import Arguments, ToolResult

#: Deepest nesting of tool arguments (serde_json's default recursion limit).
MAX_ARGUMENT_DEPTH = 128


@dataclass(slots=True)
class CallContext:
    """The :class:`~tavernlab.workspace.tooling.ToolContext` of one call."""

    core: RunCore
    invocation: Invocation
    call_id: str
    tool_id: str
    round: int
    token: CancelToken = field(default_factory=CancelToken)
    output: Callable[[str, str], None] | None = None

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
        """Record ``workspace_file_written``."""
        self.core.emit(WorkspaceFileWritten, FileWritten(call_id=self.call_id, path=path,
                                                         sha256=sha256, mode=mode))

    def patch_applied(self, path: str, sha256: str, replacements: int) -> None:
        """Record ``workspace_patch_applied``."""
        self.core.emit(WorkspacePatchApplied, FileWritten(
            call_id=self.call_id, path=path, sha256=sha256, replacements=replacements))

    def commit_to_chat(self, *, path: str, text: str, sha256: str, mode: str,
                       reason: str | None) -> tuple[int, int]:
        """An explicit commit of this call."""
        return commits.commit_to_chat(self.core, path=path, text=text, sha256=sha256,
                                      mode=mode, is_explicit=True, call_id=self.call_id,
                                      reason=reason)

    def finish_run(self, reason: str | None) -> dict[str, Any]:
        """End the run."""
        return commits.complete(self.core, self.core.main, reason)

    def return_result(self, text: str) -> str:
        """Write this sub-agent's result file."""
        return commits.write_subagent_result(self.core, self.invocation, text)


def call_tool(core: RunCore, registry: ToolRegistry, invocation: Invocation, tool_id: str,
              arguments: Any, call_id: str | None,
              on_output: Callable[[str, str], None] | None = None) -> ToolResult:
    """Execute one tool call with every record the host writes; see :meth:`Run.call_tool`.

    The call's records are written together when it ends (one locked append per log, see
    :mod:`tavernlab.host.feed`), or earlier while it runs: when a streaming tool first hands
    output to ``on_output`` and every half second (so a long call is seen while it runs)."""
    core.require_active()
    rounds.begin_work(core)
    with core.feed.batch():
        stored, interrupted = _call(core, registry, invocation, tool_id, arguments, call_id,
                                    on_output)
    if core.record.is_terminal:
        core.on_end()  # after the finishing call's own records are written
    if interrupted is not None:
        raise interrupted
    return stored


def _call(core: RunCore, registry: ToolRegistry, invocation: Invocation, tool_id: str,
          arguments: Any, call_id: str | None, on_output: Callable[[str, str], None] | None
          ) -> tuple[ToolResult, BaseException | None]:
    core.announce(invocation)
    counters = core.counters
    if call_id is None:
        counters.call_seq = core.call_ids.next(counters.call_seq)
        call_id = f"call_{counters.call_seq}"
    elif call_number(call_id):
        core.call_ids.note(call_number(call_id))
    ctx = CallContext(core, invocation, call_id, tool_id, counters.round,
                      output=None if on_output is None else flushing_first(core, on_output))
    record_name = tool_record_name(ctx.round, ctx.call_id)
    refusal = unstorable(arguments)
    args_path = core.dir / "tool-args" / invocation.id / f"{record_name}.json"
    try:
        write_json(args_path, {"callId": ctx.call_id, "toolId": tool_id,
                               "arguments": _stored_arguments(arguments, refusal)},
                   ascii_only=True, exclusive=True, staging=core.staging)
    except FileExistsError:
        raise _duplicate(core, ctx, args_path) from None
    except OSError as exc:  # nothing of the call is recorded: the run goes on
        raise FileIo("write", str(args_path.relative_to(core.dir)), exc) from None
    ref = ToolCallRef(round=ctx.round, invocation_id=invocation.id, call_id=ctx.call_id,
                      tool_id=tool_id, name=tool_id.replace(".", "_"),
                      arguments_path=str(args_path.relative_to(core.dir)))
    scope = EventScope(invocation_id=invocation.id)
    core.emit(ToolCallRequested, ref, scope=scope)
    core.emit(ToolCallStarted, ref, scope=scope)
    started = core.clock.monotonic()
    with core.activities.activity("tool", ctx.call_id), core.tracker.acting(ctx.call_id):
        result, interrupted = _execute(core, registry, ctx, arguments, refusal)
        if ctx.token.cancelled:
            counters.round_cancelled = True
        result.call_id, result.tool_id = ctx.call_id, tool_id
        try:
            stored = store_result(core, invocation, record_name, result)
        except (WorkspaceError, OSError) as exc:  # no space, no descriptor, a conflict
            _host_fault(core, ctx, started, scope, exc)
            raise
    _record_outcome(core, ctx, result, started, scope)
    if not core.record.is_terminal:
        core.set_status("calling_model")
    return stored, interrupted


def _host_fault(core: RunCore, ctx: CallContext, started: float, scope: EventScope,
                exc: BaseException) -> None:
    """The host could not keep a call's records (its stored result could not be written:
    no space, no descriptor, a file another process wrote): ``tool_call_failed`` with the
    error (level error), and the run fails, as a dispatch error ends a run. The call is
    then finished in the log, with no stored result."""
    message = f"{getattr(exc, 'code', type(exc).__name__)}: {exc}"
    core.emit(ToolCallFailed, ToolCallOutcome(
        round=ctx.round, invocation_id=ctx.invocation.id, call_id=ctx.call_id,
        tool_id=ctx.tool_id, snapshot_id=None, name=ctx.tool_id.replace(".", "_"),
        is_error=True, error_code=getattr(exc, "code", None), message=message,
        elapsed_ms=int((core.clock.monotonic() - started) * 1000), resource_refs=[]),
        level="error", scope=scope)
    core.fail(message)


def _duplicate(core: RunCore, ctx: CallContext, args_path: Path) -> WriteConflict:
    """A second call with an id already used in this round: its arguments are never
    written over the first call's (whose records stay as they are), and the run fails
    before the second call starts."""
    error = WriteConflict(str(args_path.relative_to(core.dir)), "already_exists",
                          actual_sha256=hashlib.sha256(args_path.read_bytes()).hexdigest())
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
            core.set_status("dispatching_tool", index=False)
            if refusal is not None:
                return ToolResult.from_error(ToolError("tool.invalid_arguments", refusal)), None
            return _dispatch(core, registry, ctx, arguments), None
        except KeyboardInterrupt as exc:
            ctx.token.cancel("interrupted")
            return ToolResult.from_error(ToolError(
                "tool.interrupted", "The tool call was interrupted before it finished.")), exc
        except Exception as exc:
            core.fail(f"{type(exc).__name__}: {exc}")
            raise


def _record_outcome(core: RunCore, ctx: CallContext, result: ToolResult, started: float,
                    scope: EventScope) -> None:
    outcome = ToolCallOutcome(
        round=ctx.round, invocation_id=ctx.invocation.id, call_id=ctx.call_id,
        tool_id=ctx.tool_id, snapshot_id=None, name=ctx.tool_id.replace(".", "_"),
        is_error=result.is_error, error_code=result.error_code,
        message=result.content if result.is_error else None,
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
        check_budgets(core, ctx.tool_id)
        if core.counters.round_cancelled:
            raise ToolError("tool.round_cancelled", "An earlier tool call of this round was "
                            "cancelled, so this call was not executed.")
        if spec.available is not None and (refusal := spec.available(ctx)) is not None:
            raise ToolError(*refusal)
        return spec.handler(ctx, Arguments(arguments, spec.arguments))
    except ToolError as exc:
        return ToolResult.from_error(exc)


def check_budgets(core: RunCore, tool_id: str) -> None:
    """Refuse a call over the Profile's round, per-run or per-tool budget."""
    budgets, counters = core.profile.tools, core.counters
    if budgets.max_rounds is not None and counters.round > budgets.max_rounds:
        raise ToolError("tool.budget_exceeded",
                        f"The run used all {budgets.max_rounds} rounds of its tool budget.")
    if budgets.max_calls_per_run is not None and counters.calls >= budgets.max_calls_per_run:
        raise ToolError("tool.budget_exceeded", f"The run used all "
                        f"{budgets.max_calls_per_run} tool calls of its budget.")
    if (budgets.max_calls_per_tool is not None
            and counters.calls_per_tool[tool_id] >= budgets.max_calls_per_tool):
        raise ToolError("tool.budget_exceeded", f"`{tool_id}` used all "
                        f"{budgets.max_calls_per_tool} calls of its budget.")


def unstorable(arguments: Any) -> str | None:
    """Why ``arguments`` cannot be a tool call's JSON arguments, or ``None`` when they can."""
    if _depth_exceeds(arguments, MAX_ARGUMENT_DEPTH):
        return f"arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep"
    try:
        json.dumps(arguments, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        if isinstance(exc, UnicodeEncodeError):
            return "arguments must be valid Unicode text (found a lone surrogate)"
        return f"arguments must be JSON values: {exc}"
    return None


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether lists and dicts nest deeper than ``limit`` (iterative: no recursion limit)."""
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
