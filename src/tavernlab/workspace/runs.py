"""Runs: one agent execution with its workspace, records, rounds and tool dispatch.

spec/workspace.md sections 8 and 10. A :class:`Run` is created by
:meth:`tavernlab.Lab.start_run` (or reopened with :meth:`tavernlab.Lab.open_run`). The
notebook drives it the way a model would: ``run.call_tool(tool_id, args)`` executes one tool
call with upstream's events, stored tool results and status changes; ``run.next_round()``
ends a round (at most one auto-commit); ``run.finish()`` ends the run.

tavernlab choices where upstream is unknown (documented here):

* Tool-argument files: ``tool-args/<invocation-id>/round-NNN-call_<hash>.json``.
* "External" tool results (every tool whose id does not start with ``workspace.``) longer than
  the Profile's inline limit (20 000 characters) get a readable ``.txt`` view.
* An unknown tool id, or a compatibility-mode tool while the mode is off, is
  ``tool.unknown`` ``Unknown tool `<id>`.``; a call over a tool budget is
  ``tool.budget_exceeded``; a call in a round whose earlier call was cancelled is not executed
  and returns ``tool.round_cancelled``.
* Auto-commits happen when a round ends (``next_round()``), only for foreground Chat runs
  before their first explicit commit (spec 10: a foreground run streams progress until then).
* Read records live in memory: a run reopened from disk starts a new round with no records,
  so the model must read files again before rewriting them.
"""

from __future__ import annotations

import importlib
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tavernlab.cancel import CancelToken
from tavernlab.errors import (
    PersistStateError,
    RunStateError,
    TavernlabError,
    ToolError,
    WorkspaceError,
)
from tavernlab.events import (
    ChatCommitRequest,
    Event,
    EventScope,
    FileWritten,
    InvocationRef,
    PersistCommitted,
    PersistStateRef,
    Reason,
    RunCommitted,
    StatusChange,
    ToolCallOutcome,
    ToolCallRef,
    ToolResultStored,
    ToolResultViewStored,
)
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.context import FrozenContext
from tavernlab.workspace.fs import WorkspaceFs, WriteGuard
from tavernlab.workspace.ids import new_id, tool_record_name
from tavernlab.workspace.invocation import Invocation
from tavernlab.workspace.persist import PersistSnapshot
from tavernlab.workspace.profile import Profile
from tavernlab.workspace.records import (
    EventLog,
    RunRecord,
    RunStatus,
    dump_model,
    read_json,
    rfc3339,
    utc_now,
    write_json,
)
from tavernlab.workspace.scope import MutationTracker, ScopedWorkspaceFs, SkillsMount
from tavernlab.workspace.tooling import (
    LEGACY_TOOL_IDS,
    TOOLS,
    Arguments,
    ToolCall,
    ToolResult,
)

if TYPE_CHECKING:
    from tavernlab.js.command import CommandResult
    from tavernlab.lab import Lab
    from tavernlab.shell.result import ShellResult
    from tavernlab.workspace.chat import Chat

#: Modules that register tools when imported (the run dispatches to all of them). Modules
#: of parts not installed yet are skipped only if the package itself is absent.
TOOL_MODULES: tuple[str, ...] = (
    "tavernlab.workspace.tools",
    "tavernlab.shell.tool",
    "tavernlab.skills.compat_tools",
    "tavernlab.skills.run_script",
)

#: Characters of an externalized result the model still sees inline.
EXTERNAL_PREFIX_CHARS = 3000
#: A readable view breaks lines hard every this many characters.
VIEW_LINE_CHARS = 3000


class Run:
    """One agent execution. Create it with :meth:`tavernlab.Lab.start_run`.

    Attributes worth knowing in a notebook: ``id``, ``dir`` (the run's record directory),
    ``workspace_dir`` (the files the model sees), ``record`` (``run.json``), ``profile``,
    ``context`` (frozen host facts and macros), ``round``, ``main`` (the main Invocation),
    ``chat`` (Chat targets), ``persist_state_id`` (after finish).
    """

    shell_deadline_s: float = 30.0

    def __init__(self, lab: Lab, record: RunRecord, *, run_dir: Path, workspace_dir: Path,
                 profile: Profile, context: FrozenContext, chat: Chat | None,
                 skills_mount: SkillsMount | None, skills: dict[str, Any],
                 persist_snapshot: PersistSnapshot | None) -> None:
        self.lab = lab
        self.record = record
        self.dir = run_dir
        self.workspace_dir = workspace_dir
        self.profile = profile
        self.context = context
        self.chat = chat
        self.persist_snapshot = persist_snapshot
        self.fs = WorkspaceFs(workspace_dir)
        self.log = EventLog(run_dir / "events.jsonl", record.id)
        self.tracker = MutationTracker()
        self.round = 1
        self.explicit_commits = 0
        self.output_target: tuple[int, int] | None = None
        self.persist_state_id: str | None = None
        self.skills_mount = skills_mount
        self.skills = skills
        self._call_seq = 0
        self._calls = 0
        self._calls_per_tool: Counter[str] = Counter()
        self._round_cancelled = False
        self._tokens: set[CancelToken] = set()
        self._tokens_lock = threading.Lock()
        self._subagent_results: Counter[str] = Counter()
        self._announced: set[str] = set()
        self.main = self._new_invocation("main", "main", profile, announce=False)

    # -- identity -----------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The run id (``run_<32 hex>``)."""
        return self.record.id

    @property
    def status(self) -> RunStatus:
        """The run's current status."""
        return self.record.status

    @property
    def is_chat(self) -> bool:
        """Whether the run works for a Chat target (commits to chat, persist versions)."""
        return self.record.target.kind == "chat"

    @property
    def scope(self) -> ScopedWorkspaceFs:
        """The main Invocation's scoped workspace view."""
        return self.main.scope

    def __repr__(self) -> str:
        return f"<Run {self.id} {self.record.target.kind} {self.status} round={self.round}>"

    def _tool_results_key(self, invocation: Invocation) -> str:
        return self.id if self.record.target.kind == "session" else invocation.id

    # -- invocations --------------------------------------------------------------------------

    def _new_invocation(self, agent_id: str, mode: Literal["main", "return"],
                        profile: Profile, *, announce: bool = True) -> Invocation:
        scope = ScopedWorkspaceFs(self.fs, profile.policy(), skills=self.skills_mount,
                                  tracker=self.tracker)
        invocation = Invocation(self, new_id("inv"), agent_id, mode=mode, profile=profile,
                                scope=scope, skills=self.skills)
        if announce:
            self.announce(invocation)
        return invocation

    def announce(self, invocation: Invocation) -> None:
        """Record ``agent_invocation_created`` for an Invocation (once)."""
        if invocation.id in self._announced:
            return
        self._announced.add(invocation.id)
        self.emit("agent_invocation_created",
                  InvocationRef(invocation_id=invocation.id, agent_id=invocation.agent_id,
                                mode=invocation.mode),
                  scope=EventScope(invocation_id=invocation.id))

    def start_subagent(self, agent_id: str, profile: Profile | None = None) -> Invocation:
        """A return-mode sub-agent sharing this run's workspace.

        Its roots are filtered by its own (target) Profile; it cannot commit or finish and
        ends with the ``task.return`` tool, which writes ``summaries/<agent>-result.md``.
        """
        profile = profile or self.profile
        for root in profile.policy().visible_roots:
            if root != "skills":
                (self.workspace_dir / root).mkdir(exist_ok=True)
        return self._new_invocation(agent_id, "return", profile)

    def write_subagent_result(self, invocation: Invocation, text: str) -> str:
        """Write a return-mode sub-agent's result to ``summaries/<key>-result.md`` (repeated
        results get ``-002``, ``-003``, ...); returns the path."""
        key = invocation.agent_id
        self._subagent_results[key] += 1
        count = self._subagent_results[key]
        name = f"{key}-result.md" if count == 1 else f"{key}-result-{count:03d}.md"
        path = WorkspacePath.parse(f"summaries/{name}")
        self.fs.write_text(path, text, WriteGuard.unchecked())
        self.tracker.wrote(path)
        self.emit("task_return_completed", {"invocationId": invocation.id, "path": path.text},
                  scope=EventScope(invocation_id=invocation.id))
        return path.text

    # -- events and status ----------------------------------------------------------------------

    def emit(self, type_: str, payload: Any, *, level: Literal["debug", "info", "warn",
             "error"] = "info", scope: EventScope | None = None) -> Event:
        """Append an event to ``events.jsonl``."""
        return self.log.append(type_, payload, level=level, scope=scope)

    def events(self, type_: str | None = None) -> list[Event]:
        """The run's events as typed models (optionally only one type)."""
        events = self.log.read()
        return events if type_ is None else [e for e in events if e.type == type_]

    def set_status(self, status: RunStatus, *, index: bool = True) -> None:
        """Move to ``status``: ``status_changed`` event and ``run.json``; also the index copy
        unless ``index`` is false (the dispatch round trip of every tool call refreshes the
        index once, when it returns to ``calling_model``)."""
        previous = self.record.status
        if previous == status:
            return
        self.record.status = status
        self.record.updated_at = utc_now()
        self.emit("status_changed", StatusChange(**{"from": previous, "to": status}))
        self.save_record(index=index, summary=self.record.is_terminal)

    def save_record(self, *, index: bool = True, summary: bool = True) -> None:
        """Write ``run.json``, its index copy and (at creation and when the run ends, not on
        every transient status) the summary projection."""
        data = dump_model(self.record)
        write_json(self.dir / "run.json", data)
        if index:
            self.lab.index.save(self.record, self.summary() if summary else None)

    def summary(self) -> dict[str, Any]:
        """The run summary projection stored in ``index/run-summaries/``."""
        return {
            "runId": self.id,
            "target": dump_model(self.record.target),
            "status": self.record.status,
            "presentation": self.record.presentation,
            "createdAt": rfc3339(self.record.created_at),
            "updatedAt": rfc3339(self.record.updated_at),
            "round": self.round,
            "toolCalls": self._calls,
            "explicitCommits": self.explicit_commits,
            "outputMessage": list(self.output_target) if self.output_target else None,
            "persistStateId": self.persist_state_id,
        }

    def _require_active(self) -> None:
        if self.record.is_terminal:
            raise RunStateError(f"run `{self.id}` is {self.status}; call run.resume() to "
                                "continue it")

    # -- tool dispatch -------------------------------------------------------------------------

    def call_tool(self, tool_id: str, arguments: Any = None, *,
                  invocation: Invocation | None = None, call_id: str | None = None
                  ) -> ToolResult:
        """Execute one tool call the way the host does and return its result.

        Events ``tool_call_requested``/``started``/``completed`` (or ``failed``), the
        arguments file, the stored result under ``tool-results/`` and the status changes are
        all written. Recoverable failures come back as results with ``is_error``; an internal
        fault fails the run and raises. Cancel a running call with :meth:`cancel` from
        another thread; a KeyboardInterrupt while waiting cancels it too and is re-raised.
        """
        self._require_active()
        invocation = invocation or self.main
        self.announce(invocation)
        self._call_seq += 1
        call_id = call_id or f"call_{self._call_seq}"
        arguments = {} if arguments is None else arguments
        call = ToolCall(run=self, invocation=invocation, call_id=call_id, round=self.round,
                        tool_id=tool_id)
        name = tool_id.replace(".", "_")
        record_name = tool_record_name(self.round, call_id)
        args_path = self.dir / "tool-args" / invocation.id / f"{record_name}.json"
        bad_arguments = _unstorable(arguments)
        write_json(args_path, {"callId": call_id, "toolId": tool_id,
                               "arguments": repr(arguments) if bad_arguments else arguments},
                   ascii_only=True, fresh=True)
        ref = ToolCallRef(round=self.round, invocation_id=invocation.id, call_id=call_id,
                          tool_id=tool_id, name=name,
                          arguments_path=str(args_path.relative_to(self.dir)))
        event_scope = EventScope(invocation_id=invocation.id)
        self.emit("tool_call_requested", ref, scope=event_scope)
        self.emit("tool_call_started", ref, scope=event_scope)
        started = time.monotonic()
        with self._tokens_lock:
            self._tokens.add(call.token)
        interrupted: BaseException | None = None
        try:
            self.set_status("dispatching_tool", index=False)
            if bad_arguments:
                result = ToolResult.from_error(ToolError("tool.invalid_arguments",
                                                         bad_arguments))
            else:
                result = self._dispatch(call, arguments)
        except KeyboardInterrupt as exc:
            call.token.cancel("interrupted")
            interrupted = exc
            result = ToolResult.from_error(ToolError(
                "tool.interrupted", "The tool call was interrupted before it finished."))
        except Exception as exc:
            self._fail(f"{type(exc).__name__}: {exc}")
            raise
        finally:
            with self._tokens_lock:
                self._tokens.discard(call.token)
        if call.token.cancelled:
            self._round_cancelled = True
        result.call_id, result.tool_id = call_id, tool_id
        stored = self._store_result(invocation, record_name, result)
        elapsed = int((time.monotonic() - started) * 1000)
        outcome = ToolCallOutcome(
            round=call.round, invocation_id=invocation.id, call_id=call_id, tool_id=tool_id,
            snapshot_id=None, name=name, is_error=result.is_error,
            error_code=result.error_code, message=result.content if result.is_error else None,
            elapsed_ms=elapsed, resource_refs=result.resource_refs)
        self.emit("tool_call_failed" if result.is_error else "tool_call_completed", outcome,
                  level="warn" if result.is_error else "info", scope=event_scope)
        self._calls += 1
        self._calls_per_tool[tool_id] += 1
        if not self.record.is_terminal:
            self.set_status("calling_model")
        else:
            self._auto_prune()  # after the finishing call's own records are written
        if interrupted is not None:
            raise interrupted
        return stored

    def _dispatch(self, call: ToolCall, arguments: Any) -> ToolResult:
        load_tools()
        spec = TOOLS.get(call.tool_id)
        try:
            if spec is None or (call.tool_id in LEGACY_TOOL_IDS
                                and not self.profile.skills.legacy_run_script):
                raise ToolError("tool.unknown", f"Unknown tool `{call.tool_id}`.")
            self._check_budgets(call.tool_id)
            if self._round_cancelled:
                raise ToolError("tool.round_cancelled", "An earlier tool call of this round "
                                "was cancelled, so this call was not executed.")
            if spec.available is not None and (refusal := spec.available(call)) is not None:
                raise ToolError(*refusal)
            return spec.handler(call, Arguments(arguments, spec.arguments))
        except ToolError as exc:
            return ToolResult.from_error(exc)

    def _check_budgets(self, tool_id: str) -> None:
        budgets = self.profile.tools
        if budgets.max_rounds is not None and self.round > budgets.max_rounds:
            raise ToolError("tool.budget_exceeded",
                            f"The run used all {budgets.max_rounds} rounds of its tool budget.")
        if budgets.max_calls_per_run is not None and self._calls >= budgets.max_calls_per_run:
            raise ToolError("tool.budget_exceeded", f"The run used all "
                            f"{budgets.max_calls_per_run} tool calls of its budget.")
        if (budgets.max_calls_per_tool is not None
                and self._calls_per_tool[tool_id] >= budgets.max_calls_per_tool):
            raise ToolError("tool.budget_exceeded", f"`{tool_id}` used all "
                            f"{budgets.max_calls_per_tool} calls of its budget.")

    def _store_result(self, invocation: Invocation, record_name: str, result: ToolResult
                      ) -> ToolResult:
        key = self._tool_results_key(invocation)
        json_path = WorkspacePath(f"tool-results/{key}/{record_name}.json")
        model_result = result
        limit = self.profile.workspace.inline_result_chars
        external = not result.tool_id or not result.tool_id.startswith("workspace.")
        if external and len(result.content) > limit:
            view_path = WorkspacePath(f"tool-results/{key}/{record_name}.txt")
            content = result.content
            view = "\n".join(content[i:i + VIEW_LINE_CHARS]
                             for i in range(0, len(content), VIEW_LINE_CHARS))
            self.fs.write_text(view_path, view, WriteGuard.unchecked())
            model_result = ToolResult(
                content=(content[:EXTERNAL_PREFIX_CHARS] + f"\n\n[Result of {len(content)} "
                         f"characters stored at {view_path.text}. Read it with "
                         "workspace_read_file or search it with workspace_search_files.]"),
                structured={"externalized": True, "path": view_path.text,
                            "auditPath": json_path.text, "charCount": len(content),
                            "charLimit": limit},
                is_error=result.is_error, error_code=result.error_code,
                resource_refs=result.resource_refs, call_id=result.call_id,
                tool_id=result.tool_id)
            self.emit("tool_result_readable_view_stored", ToolResultViewStored(
                invocation_id=invocation.id, round=self.round, call_id=result.call_id or "",
                tool_id=result.tool_id or "", path=view_path.text, audit_path=json_path.text))
        self.fs.write_text(json_path, json.dumps(result.to_json(), ensure_ascii=False, indent=2),
                           WriteGuard.unchecked())
        self.emit("tool_result_stored", ToolResultStored(
            invocation_id=invocation.id, round=self.round, call_id=result.call_id or "",
            tool_id=result.tool_id or "", path=json_path.text))
        return model_result

    # -- rounds, cancellation ------------------------------------------------------------------

    def next_round(self) -> int:
        """End the current round (auto-committing its last modified text file when the rules
        allow) and start the next one; returns the new round number."""
        self._require_active()
        self._auto_commit()
        self.tracker.reset()
        self._round_cancelled = False
        self.round += 1
        return self.round

    def _auto_commit(self) -> None:
        candidate = self.tracker.candidate
        if not (self.is_chat and self.record.presentation == "foreground"
                and not self.explicit_commits and self.tracker.changed and candidate):
            return
        try:
            file = self.fs.read_text(WorkspacePath(candidate))
        except WorkspaceError:
            return
        self.commit_to_chat(path=candidate, text=file.text, sha256=file.sha256,
                            mode="replace", is_explicit=False, call_id=None)

    def cancel(self, reason: str = "cancelled by the user") -> int:
        """Cancel every tool call or job of this run that is running now (safe from any
        thread); returns how many were cancelled. Work already started completes."""
        with self._tokens_lock:
            tokens = [t for t in self._tokens if not t.cancelled]
        if tokens:
            self.emit("run_cancel_requested", Reason(reason=reason))
        for token in tokens:
            token.cancel(reason)
        return len(tokens)

    def track(self, token: CancelToken) -> _Tracked:
        """Register a token so :meth:`cancel` reaches it while the ``with`` block runs."""
        return _Tracked(self, token)

    # -- commits -------------------------------------------------------------------------------

    def commit_to_chat(self, *, path: str, text: str, sha256: str, mode: str,
                       is_explicit: bool, call_id: str | None, reason: str | None = None
                       ) -> tuple[int, int]:
        """Ask the host to save ``text`` as this run's output message and record it."""
        if self.chat is None:
            raise RunStateError("only Chat runs commit to a chat")
        commit_mode: Literal["replace", "append"] = "append" if mode == "append" else "replace"
        self.emit("chat_commit_requested", ChatCommitRequest(
            call_id=call_id, path=path, is_explicit=is_explicit, sha256=sha256,
            mode=commit_mode, round=self.round, reason=reason))
        previous = self.record.status
        self.set_status("awaiting_host_commit")
        target = self.chat.save_output(run_id=self.id, text=text, mode=commit_mode,
                                       target=self.output_target,
                                       new_swipe=self.record.generation_type == "swipe")
        self.output_target = target
        if is_explicit:
            self.explicit_commits += 1
        self.emit("run_committed", RunCommitted(message_index=target[0], swipe_id=target[1],
                                                is_explicit=is_explicit, mode=commit_mode))
        self.set_status(previous)
        return target

    def emit_file_written(self, call: ToolCall, path: str, sha256: str, *, mode: str) -> None:
        """Record ``workspace_file_written`` for a text-tool write."""
        self.emit("workspace_file_written", FileWritten(call_id=call.call_id, path=path,
                                                        sha256=sha256, mode=mode))

    def emit_patch_applied(self, call: ToolCall, path: str, sha256: str, replacements: int
                           ) -> None:
        """Record ``workspace_patch_applied``."""
        self.emit("workspace_patch_applied", FileWritten(
            call_id=call.call_id, path=path, sha256=sha256, replacements=replacements))

    # -- finishing -------------------------------------------------------------------------------

    def finish(self, reason: str | None = None) -> ToolResult:
        """``workspace.finish`` through the normal tool dispatch."""
        args = {} if reason is None else {"reason": reason}
        return self.call_tool("workspace.finish", args)

    def complete(self, *, reason: str | None = None) -> dict[str, Any]:
        """Finish the run: publish ``persist/`` (Chat runs), link the state to the committed
        message and mark the run completed. Called by the ``workspace.finish`` tool."""
        self.set_status("finishing")
        refs: dict[str, Any] = {}
        if self.chat is not None and self.persist_snapshot is not None:
            try:
                with self.fs.lock.shared():
                    state, reused = self.chat.persist.publish(
                        run_id=self.id, persist_dir=self.workspace_dir / "persist",
                        snapshot=self.persist_snapshot, revision_of=self.persist_state_id)
            except (PersistStateError, OSError) as exc:
                self.emit("persistent_changes_commit_failed", Reason(error=str(exc)),
                          level="error")
                self._fail(str(exc))
                raise
            self.persist_state_id = state.state_id
            refs["persistStateId"] = state.state_id
            self.emit("persistent_changes_committed", PersistCommitted(
                state_id=state.state_id, base_state_id=state.base_state_id, reused=reused,
                changes=len(state.changes)))
            link = PersistStateRef(state_id=state.state_id,
                                   message_index=self.output_target[0] if self.output_target
                                   else None,
                                   swipe_id=self.output_target[1] if self.output_target
                                   else None)
            self.emit("persistent_state_metadata_update_requested", link)
            if self.output_target is not None:
                self.chat.link_persist_state(self.output_target, state.state_id)
                self.emit("persistent_state_metadata_update_updated", link)
        self.emit("agent_invocation_completed", InvocationRef(
            invocation_id=self.main.id, agent_id=self.main.agent_id, mode="main"))
        self.set_status("completed")
        self.emit("run_completed", Reason(reason=reason))
        return refs

    def _auto_prune(self) -> None:
        """Apply retention when ``agent.retention.autoPruneEnabled`` is on (once a run has
        ended). A pruning failure never fails the finished run: it is logged, and the next
        finish tries again."""
        retention = self.lab.retention
        if not retention.read_settings().auto_prune_enabled:
            return
        try:
            retention.apply()
        except (TavernlabError, OSError) as exc:
            logging.getLogger("tavernlab.retention").warning("auto-prune failed: %s", exc)

    def _fail(self, error: str) -> None:
        if not self.record.is_terminal:
            self.set_status("failed")
            self.emit("run_failed", Reason(error=error), level="error")

    def resume(self) -> None:
        """Continue a finished Chat run (for example to revise its output): a new round
        starts, and the next finish revises the state this run published."""
        if not self.record.is_terminal:
            raise RunStateError(f"run `{self.id}` is still {self.status}")
        self.tracker.reset()
        self._round_cancelled = False
        self.round += 1
        self.set_status("calling_model")

    def restore_from_events(self) -> None:
        """Rebuild the counters of a run reopened from disk from its event log: tool calls,
        explicit commits, the output message, the published persist state; the run then
        continues in a new round (a cancelled call is never replayed)."""
        last_round = 0
        for event in self.log.read():
            payload = event.payload
            if event.type in ("tool_call_completed", "tool_call_failed"):
                self._calls += 1
                self._calls_per_tool[payload.tool_id] += 1
                last_round = max(last_round, payload.round)
                self._call_seq = max(self._call_seq, _call_number(payload.call_id))
            elif event.type == "run_committed":
                self.output_target = (payload.message_index, payload.swipe_id)
                self.explicit_commits += int(payload.is_explicit)
            elif event.type == "persistent_changes_committed":
                self.persist_state_id = payload.state_id
            elif event.type == "task_return_completed":
                agent = payload["path"].rsplit("/", 1)[-1].split("-result", 1)[0]
                self._subagent_results[agent] += 1
        self.round = last_round + 1

    # -- shell and JavaScript ----------------------------------------------------------------

    def shell(self, command: str, workdir: str = "/") -> ShellResult:
        """Run ``workspace.shell`` as a tool call of the main agent and return the shell's
        outcome, exit code, stdout and stderr (the tool result is stored as usual)."""
        from tavernlab.shell.result import ShellResult

        result = self.call_tool("workspace.shell", {"command": command, "workdir": workdir})
        return ShellResult.from_tool_result(result)

    def js(self, argv: Iterable[str], cwd: str = "/", stdin: str | bytes | None = None,
           command: Literal["js", "node", "deno"] = "js") -> CommandResult:
        """Run the sandbox's ``js``/``node``/``deno`` command directly (not as a tool call):
        same sandbox, limits and errors as inside ``workspace.shell``, over the main agent's
        view, with the run's shell deadline. :meth:`cancel` from another thread or a
        KeyboardInterrupt stops it; file writes it made stay and feed auto-commit."""
        from tavernlab.js.command import run_js_command

        self._require_active()
        data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        token = CancelToken()
        with self.track(token):
            return run_js_command(list(argv), scope=self.scope, context=self.context, cwd=cwd,
                                  stdin=data, command=command, token=token,
                                  deadline=time.monotonic() + self.shell_deadline_s)

    # -- files -------------------------------------------------------------------------------------

    def read(self, path: str) -> str:
        """The text of a workspace file as the model would see it (through the main view)."""
        return self.scope.read_text(WorkspacePath.parse(path)).text

    def files(self, path: str | None = None, depth: int = 8) -> list[str]:
        """Visible file paths below ``path`` (default: everything visible)."""
        listing = self.scope.list_files(WorkspacePath.parse_optional(path), depth, 100_000)
        return [e.path for e in listing.entries if e.kind == "file"]

    @property
    def system_prompt(self) -> str:
        """The run's frozen system-prompt additions (the effective skills, each listed once
        with its description and ``skills/<name>/SKILL.md``), from ``input/system_prompt.md``."""
        path = self.dir / "input" / "system_prompt.md"
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def tool_results(self) -> list[dict[str, Any]]:
        """Every stored tool result of the run, in call order."""
        out = []
        for event in self.events("tool_result_stored"):
            out.append(read_json(self.workspace_dir / event.payload.path))
        return out


def _unstorable(arguments: Any) -> str | None:
    """Why ``arguments`` cannot be a tool call's JSON arguments, or ``None`` when they can."""
    try:
        json.dumps(arguments, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        if isinstance(exc, UnicodeEncodeError):
            return "arguments must be valid Unicode text (found a lone surrogate)"
        return f"arguments must be JSON values: {exc}"
    return None


def load_tools() -> None:
    """Import every module of :data:`TOOL_MODULES` so the registry is complete."""
    for name in TOOL_MODULES:
        importlib.import_module(name)


def _call_number(call_id: str) -> int:
    head, _, tail = call_id.rpartition("_")
    return int(tail) if head == "call" and tail.isdigit() else 0


class _Tracked:
    def __init__(self, run: Run, token: CancelToken) -> None:
        self.run, self.token = run, token

    def __enter__(self) -> CancelToken:
        with self.run._tokens_lock:
            self.run._tokens.add(self.token)
        return self.token

    def __exit__(self, *exc: object) -> None:
        with self.run._tokens_lock:
            self.run._tokens.discard(self.token)


def tool_ids(run: Run) -> Iterable[str]:
    """The tool ids this run offers the main agent (compatibility tools only when enabled)."""
    load_tools()
    for tool_id in sorted(TOOLS):
        if tool_id in LEGACY_TOOL_IDS and not run.profile.skills.legacy_run_script:
            continue
        yield tool_id


