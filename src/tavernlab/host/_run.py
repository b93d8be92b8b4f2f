"""``Run``: the user's handle on one agent execution (docs/layout.md).

A :class:`Run` is created by :meth:`tavernlab.Lab.start_run` (or reopened with
:meth:`tavernlab.Lab.open_run`). A notebook drives it the way a model would:
``run.call_tool(tool_id, args)`` executes one tool call with upstream's events, stored tool
results and status changes; ``run.next_round()`` ends a round (at most one auto-commit);
``run.finish()`` ends the run. ``run.shell(...)`` and ``run.js(...)`` reach the workspace
shell and the sandbox. The bookkeeping lives in the host's small modules
(:mod:`~tavernlab.host._core`, :mod:`~tavernlab.host._dispatch`, :mod:`~tavernlab.host._commits`).

Read records live in memory (a tavernlab choice): a run reopened from disk starts a new round
with no records, so the model must read files again before rewriting them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import tavernlab.layout as layout
from tavernlab.errors import InvalidData, RunStateError, ToolError
from tavernlab.events import Event
from tavernlab.host import _commits as commits
from tavernlab.host import _dispatch as dispatch
from tavernlab.host import _rounds as rounds
from tavernlab.host._core import RunCore
from tavernlab.host._feed import Subscription
from tavernlab.host._invocation import Invocation
from tavernlab.host._jobs import run_js_job
from tavernlab.host._presentation import present
from tavernlab.host._registry import ToolRegistry
from tavernlab.host._services import LabServices
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.macros import FrozenContext
from tavernlab.workspace.persist import Chat, PersistSnapshot
from tavernlab.workspace.records import RunRecord, RunStatus, read_json
from tavernlab.workspace.roots import Profile, check_call_id
from tavernlab.workspace.scope import MutationTracker, ScopedWorkspaceFs
from tavernlab.workspace.storage import WorkspaceFs
from tavernlab.workspace.tools import ToolResult, ToolSpec

if TYPE_CHECKING:
    from tavernlab.js import CommandResult
    from tavernlab.shell import ShellResult
    from tavernlab.workspace.scope import TreeNode


class Run:
    """One agent execution. Create it with :meth:`tavernlab.Lab.start_run`.

    Its members are the user's verbs (``call_tool``, ``shell``, ``js``, ``next_round``,
    ``start_subagent``, ``finish``, ``resume``, ``cancel``, ``read``, ``files``, ``tree``,
    ``events``, ``subscribe``, ``tool_results``, ``export``, ``show``) and facts (``id``,
    ``status``, ``dir`` (the run's record directory), ``workspace_dir`` (the files the model
    sees), ``record`` (``run.json``), ``chat`` (Chat targets), ``skills``, ``round``,
    ``tools``, ``subagents``, ``persist_state_id`` (after finish), ``system_prompt``). What
    the host itself works with (the main agent and its scoped view, the storage port, the
    tracker, the Profile, the frozen context, the persist snapshot, the commit counters, the
    shell deadline) is behind :attr:`internals`.
    """

    def __init__(self, core: RunCore, registry: ToolRegistry, services: LabServices) -> None:
        self._core = core
        self._registry = registry
        self._services = services
        self._internals = RunInternals(core)

    @property
    def internals(self) -> RunInternals:
        """The host's side of the run (scope, storage port, tracker, counters, main agent…),
        kept apart from the user's verbs and facts."""
        return self._internals

    # -- identity -----------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The run id (``run_<32 hex>``)."""
        return self._core.id

    @property
    def record(self) -> RunRecord:
        """``run.json`` as this process holds it."""
        return self._core.record

    @property
    def status(self) -> RunStatus:
        """The run's current status."""
        return self._core.record.status

    @property
    def dir(self) -> Path:
        """The run's record directory (``run.json``, ``events.jsonl``, ``input/`` …)."""
        return self._core.dir

    @property
    def workspace_dir(self) -> Path:
        """The directory holding the files the model sees."""
        return self._core.workspace_dir

    @property
    def chat(self) -> Chat | None:
        """The host chat of a Chat run (``None`` for a Session run)."""
        return self._core.chat

    @property
    def skills(self) -> dict[str, Any]:
        """The skills bound to the main agent, by name."""
        return dict(self._core.skills)

    @property
    def round(self) -> int:
        """The current model round (from 1)."""
        return self._core.counters.round

    @property
    def persist_state_id(self) -> str | None:
        """The persist state this run published (after finish)."""
        return self._core.counters.persist_state_id

    @property
    def tools(self) -> list[ToolSpec]:
        """The tools this run offers the main agent, sorted by id."""
        return self._registry.offered(self._core.profile)

    def __repr__(self) -> str:
        return (f"<Run {self.id} {self._core.record.target.kind} {self.status} "
                f"round={self.round}>")

    # -- model actions ------------------------------------------------------------------------

    def call_tool(self, tool_id: str, arguments: Any = None, *,
                  invocation: Invocation | None = None, call_id: str | None = None,
                  on_output: Callable[[str, str], None] | None = None) -> ToolResult:
        """Execute one tool call the way the host does and return its result.

        Events ``tool_call_requested``/``started``/``completed`` (or ``failed``), the
        arguments file, the stored result under ``tool-results/`` and the status changes are
        all written. Recoverable failures come back as results with ``is_error``; an internal
        fault fails the run and raises. Cancel a running call with :meth:`cancel` from
        another thread; a KeyboardInterrupt while waiting cancels it too and is re-raised.
        ``on_output(stdout, stderr)`` receives a streaming tool's output (the shell's) as it
        is produced, on the thread that produces it.

        ``call_id`` (default: the run's next ``call_<n>``) must match
        ``[A-Za-z0-9_.:-]{1,256}``, the shape of the ids the host mints and providers send;
        any other value is refused with ``workspace.invalid_data`` naming ``call_id`` before
        anything is written (an id reaches records, file names and generated notebooks).
        """
        if call_id is not None:
            check_call_id(call_id)
        _check_text(tool_id, "tool_id")
        return dispatch.call_tool(self._core, self._registry, invocation or self._core.main,
                                  tool_id, {} if arguments is None else arguments, call_id,
                                  on_output)

    def next_round(self) -> int:
        """End the current round (auto-committing its last modified text file when the rules
        allow) and start the next one; returns the new round number."""
        self._core.require_active()
        return commits.end_round(self._core)

    def start_subagent(self, agent_id: str, profile: Profile | None = None) -> Invocation:
        """A return-mode sub-agent sharing this run's workspace.

        Its roots are filtered by its own (target) Profile; it cannot commit or finish and
        ends with the ``task.return`` tool, which writes ``summaries/<agent>-result.md``.
        ``agent_id`` has the shape of a call id (``[A-Za-z0-9_.:-]{1,256}``, else
        ``workspace.invalid_data`` naming ``agent_id``, before anything is written).
        """
        check_call_id(agent_id, "agent_id")
        return self._core.start_subagent(agent_id, profile or self._core.profile)

    @property
    def subagents(self) -> list[Invocation]:
        """The run's return-mode sub-agents, in start order (restored when reopened)."""
        return list(self._core.subagents.values())

    def finish(self, reason: str | None = None) -> ToolResult:
        """``workspace.finish`` through the normal tool dispatch."""
        return self.call_tool("workspace.finish", {} if reason is None else {"reason": reason})

    def resume(self) -> None:
        """Continue a finished Chat run (for example to revise its output): a new round
        starts, and the next finish revises the state this run published. A run whose
        agent loop ended on a tool call with no confirmed result (``blockedReason`` in
        ``run.json``) is refused."""
        core = self._core
        if not core.record.is_terminal:
            raise RunStateError(f"run `{self.id}` is still {self.status}")
        blocked = getattr(core.record, "blockedReason", None)
        if blocked:  # a tool call of the loop that started and has no confirmed result
            raise RunStateError(f"run `{self.id}` cannot be resumed: {blocked}")
        core.tracker.reset()
        core.counters.round_cancelled = False
        core.counters.round += 1
        core.set_status("calling_model")

    def cancel(self, reason: str | None = None) -> int:
        """Cancel every tool call or job of this run that is running now (safe from any
        thread); returns how many were cancelled. Work already started completes. A run
        driven by the agent loop is cancelled as a whole: the loop stops at its next check
        and the run ends ``cancelled``, its ``run_cancelled`` saying ``reason`` (the loop's
        default when none is given). A hand-played run's reason is passed to the cancelled
        work (``cancelled by the user`` by default) and is not recorded."""
        from tavernlab.events import RunCancelRequested

        if self._core.loop_cancel is not None:
            return self._core.loop_cancel(reason)
        reason = reason or "cancelled by the user"
        tokens = self._core.inflight.live()
        if tokens:
            self._core.emit(RunCancelRequested, None)
        for token in tokens:
            token.cancel(reason)
        return len(tokens)

    # -- shell and JavaScript -----------------------------------------------------------------

    def shell(self, command: str, workdir: str = "/", *,
              on_output: Callable[[str, str], None] | None = None) -> ShellResult:
        """Run ``workspace.shell`` as a tool call of the main agent and return the shell's
        outcome, exit code, stdout and stderr (the tool result is stored as usual).
        ``on_output(stdout, stderr)`` streams the output as it is produced.

        A call the host refused before any shell ran (``agent.tool_budget_exhausted``,
        ``tool.budget_exceeded``, ``tool.round_cancelled``, ``tool.invalid_arguments``,
        ``tool.unknown``...) raises
        :class:`~tavernlab.errors.ToolError` with that code, so it never looks like a shell
        that printed nothing.
        """
        result = self.call_tool("workspace.shell", {"command": command, "workdir": workdir},
                                on_output=on_output)
        if result.is_error and ((result.error_code or "").startswith("tool.")
                                or result.error_code == "agent.tool_budget_exhausted"):
            raise ToolError(result.error_code or "tool.error", result.content)
        from tavernlab.shell import ShellResult

        return ShellResult.from_tool_result(result)

    def js(self, argv: str | Iterable[str], cwd: str = "/", stdin: str | bytes | None = None,
           command: Literal["js", "node", "deno"] = "js", *,
           on_output: Callable[[Literal["stdout", "stderr"], str], None] | None = None,
           eval_name: str | None = None) -> CommandResult:
        """Run the sandbox's ``js``/``node``/``deno`` command directly (not as a tool call):
        same sandbox, limits and errors as inside ``workspace.shell``, over the main agent's
        view, with the shell's deadline.

        ``argv`` is the argument list after the command name (``["script.js", "a"]``); a
        string is split the way a shell would (``"-e 'console.log(1)'"``). :meth:`cancel`
        from another thread or a KeyboardInterrupt stops it; file writes it made stay and
        feed auto-commit (attributed to the job's own id, ``job_<32 hex>``, since it is not a
        tool call). ``on_output(stream, text)`` receives the output as it is produced;
        ``eval_name`` names an ``-e`` module (``"<cell 4>"``) so errors point at its lines.
        Under a deterministic lab clock the job's ``Date`` and ``Math.random`` are fixed too.

        The journal keeps digests only; the job's own bytes (stdin, ``eval_name``, exit code,
        stdout, stderr) go to the run's hidden ``js-jobs/<job-id>.json`` (stdin as base64),
        which is what lets :mod:`tavernlab.replay` play the job again and diff its output.
        Every argument, ``cwd``, a text ``stdin`` and ``eval_name`` must be text that can be
        written (no lone surrogate), else ``workspace.invalid_data`` before anything runs.
        """
        core = self._core
        if isinstance(argv, str):
            import shlex

            argv = shlex.split(argv)
        args = list(argv)
        for arg in args:
            _check_text(arg, "argv")
        _check_text(cwd, "cwd")
        if isinstance(stdin, str):
            _check_text(stdin, "stdin")
        if eval_name is not None:
            _check_text(eval_name, "eval_name")
        core.require_active()
        rounds.begin_work(core)
        data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        with core.feed.batch():
            return run_js_job(core, self._services.js_pool, args, cwd, data, command,
                              on_output, eval_name)

    # -- reading ------------------------------------------------------------------------------

    def events(self, after_seq: int | Event | None = None,
               types: str | Iterable[str] | None = None, journal: bool = True) -> list[Event]:
        """The run's events and journal records as typed models, merged in order.

        ``after_seq`` reads incrementally: an ``int`` is an ``events.jsonl`` seq (what came
        after that event), a record continues after that record (pass the last record you
        got to follow both files without repeats); only what follows is parsed. ``types``
        keeps those types (one name or several; lines that cannot be of them are skipped
        unparsed, so a filtered read costs and holds only what it returns); ``journal=False``
        reads ``events.jsonl`` only. Each record's ``source`` says which file it came from.
        Every line read is validated into its model, the lab's own lines too (tavernlab
        choice: a damaged line raises rather than giving a wrong record); the models are built
        in bulk with the garbage collector paused (:mod:`tavernlab.events._reading`).
        """
        self._core.activities.flush("host", None)
        wanted = [types] if isinstance(types, str) else types
        return self._core.feed.read(after_seq, types=wanted, journal=journal)

    def subscribe(self, callback: Callable[[Event], object]) -> Subscription:
        """Call ``callback(record)`` for every new event and journal record of this run, in
        order, on the thread that produced it; returns the :class:`Subscription` (close it to
        stop). An exception in the callback is logged and never breaks the run. Widgets must
        marshal what they receive to their own thread."""
        return self._core.feed.subscribe(callback)

    def read(self, path: str) -> str:
        """The text of a workspace file as the model would see it (through the main view)."""
        return self._core.main.scope.read_text(WorkspacePath.parse(path)).text

    def tree(self, path: str = "", depth: int | None = None, include_hidden: bool = False
             ) -> TreeNode:
        """The workspace below ``path`` as the main agent sees it: every node with its size
        and :class:`~tavernlab.workspace.roots.Access` (``node.sha256`` on demand),
        ``skills/`` projected; ``include_hidden`` adds the run's own files, marked hidden.
        Planted symlinks, FIFOs and hard links show as ``refused`` nodes."""
        from tavernlab.workspace.scope import build_tree

        return build_tree(self._core.main.scope, path, depth=depth, include_hidden=include_hidden)

    def export(self, path: str | Path) -> Path:
        """Write this run as one ``.tavernrun`` replay bundle at ``path`` and return its path
        (:func:`tavernlab.replay.export_run`, reached through the presenter registry: the host
        never imports the replay layer, see :mod:`tavernlab.host._presentation`)."""
        exported: Path = present("run.export", self, path)
        return exported

    def show(self, **options: Any) -> Any:
        """Display this run's workspace tree and timeline side by side, live (in a notebook:
        the widgets come from the notebook layer, see :mod:`tavernlab.host._presentation`)."""
        return present("run.show", self, **options)

    def files(self, path: str | None = None, depth: int = 8) -> list[str]:
        """Visible file paths below ``path`` (default: everything visible)."""
        listing = self._core.main.scope.list_files(WorkspacePath.parse_optional(path), depth,
                                                   100_000)
        return [e.path for e in listing.entries if e.kind == "file"]

    @property
    def system_prompt(self) -> str:
        """The run's frozen system-prompt additions (the effective skills, each listed once
        with its description and ``skills/<name>/SKILL.md``), from ``input/system_prompt.md``."""
        path = self.dir / layout.SYSTEM_PROMPT
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def tool_results(self) -> list[dict[str, Any]]:
        """Every stored tool result of the run, in call order."""
        return [read_json(self.workspace_dir / event.payload.path)
                for event in self.events(types="tool_result_stored", journal=False)]


class RunInternals:
    """The parts of a run the host, its tools and the tests reach beyond the user's verbs:
    the resolved Profile, the frozen context, the persist snapshot, the main agent and its
    scoped view, the raw storage port, the round's mutation tracker, the commit counters and
    the shell deadline.

    ``run.internals`` is the one door to them, so :class:`Run` itself stays what a notebook
    user works with. Everything here reads (and, for ``shell_deadline_s``, sets) the same
    live state as the run."""

    def __init__(self, core: RunCore) -> None:
        self._core = core

    @property
    def profile(self) -> Profile:
        """The run's resolved Profile."""
        return self._core.profile

    @property
    def context(self) -> FrozenContext:
        """The frozen host facts and macro table."""
        return self._core.frozen

    @property
    def persist_snapshot(self) -> PersistSnapshot | None:
        """What ``persist/`` held when the run started (Chat runs)."""
        return self._core.persist_snapshot

    @property
    def explicit_commits(self) -> int:
        """How many explicit ``workspace.commit`` calls succeeded."""
        return self._core.counters.explicit_commits

    @property
    def output_target(self) -> tuple[int, int] | None:
        """``(message index, swipe id)`` of the run's output message, once committed."""
        return self._core.counters.output_target

    @property
    def is_chat(self) -> bool:
        """Whether the run works for a Chat target (commits to chat, persist versions)."""
        return self._core.is_chat

    @property
    def main(self) -> Invocation:
        """The main agent."""
        return self._core.main

    @property
    def scope(self) -> ScopedWorkspaceFs:
        """The main agent's scoped workspace view."""
        return self._core.main.scope

    @property
    def fs(self) -> WorkspaceFs:
        """The run's storage port *without* the policy view (what the host itself uses; the
        model only ever sees :attr:`scope`)."""
        return self._core.fs

    @property
    def tracker(self) -> MutationTracker:
        """The round's text-mutation tracker (the auto-commit candidate)."""
        return self._core.tracker

    @property
    def shell_deadline_s(self) -> float:
        """The whole-call deadline of ``workspace.shell`` and ``run.js`` (30 s, upstream's;
        settable per run, for example to test timeouts)."""
        return self._core.shell_deadline_s

    @shell_deadline_s.setter
    def shell_deadline_s(self, seconds: float) -> None:
        if seconds <= 0:
            raise ValueError("shell_deadline_s must be positive")
        self._core.shell_deadline_s = seconds


def _check_text(value: object, what: str) -> None:
    """A string ``value`` must be text the run's records can hold (UTF-8: no lone
    surrogate); other types are left to the checks further on."""
    if not isinstance(value, str):
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidData(f"{what} must be valid Unicode text (found a lone surrogate)"
                          ) from None
