"""``worktree.provision`` (docs/worktrees.md): a ready-to-work git worktree for an agent.

Cheap steps (``git worktree add``, the creation marker, configuration, ``linkPaths``,
``writeFiles``) run at once; heavy phases (clone, deps, copy, setup) run under a slot of the
runtime's :mod:`scheduler`. A plain failure keeps the worktree for inspection.

Cancellation — the ambient signal, or a ``KeyboardInterrupt`` anywhere once ``git worktree
add`` has started (a Jupyter interrupt, Ctrl-C) — always takes the same path: the queue slot
is given back, the running child's process group is killed, ``done: cancelled`` is emitted,
the half-made worktree and its branch are removed and :class:`ProvisionCancelledError` is
raised (``interrupted=True`` for an interrupt). An interrupt that lands inside ``git worktree
add`` itself removes the worktree and branch only when git had already registered the
worktree on that branch, so a branch this call did not create is never deleted (tavernlab
choice).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, TypeVar

from tavernlab.cancel import CancelToken
from tavernlab.errors import ToolError
from tavernlab.worktree._config import (
    AgentprotoConfig,
    WriteFileSpec,
    load_committed_config,
    load_local_config,
    substitute_slug,
)
from tavernlab.worktree._context import Phase, ProvisionContext, current_provision_context
from tavernlab.worktree._environment import HookContext
from tavernlab.worktree._errors import BaseRefNotFoundError, HookError, ProvisionCancelledError
from tavernlab.worktree._git import END_OF_OPTIONS, git_failure, git_run, resolves_to_commit
from tavernlab.worktree._globs import clone_entries, copy_files
from tavernlab.worktree._hooks import run_setup
from tavernlab.worktree._listing import find_worktree, is_within, real
from tavernlab.worktree._marker import write_creation_marker
from tavernlab.worktree._names import default_branch_name, default_worktree_dir
from tavernlab.worktree._process import run_shell
from tavernlab.worktree._removal import remove_worktree_fast
from tavernlab.worktree._runtime import WorktreeRuntime, default_runtime
from tavernlab.worktree._tool_inputs import ProvisionInput

T = TypeVar("T")


class ProvisionOutput(TypedDict):
    """``{cwd, branch}``."""

    cwd: str
    branch: str


@dataclass(frozen=True)
class ProvisionPlan:
    """The effective values after precedence (tool input > local file > committed config)."""

    deps_cmd: str | None
    link_paths: list[str]
    copy_globs: list[str]
    clone_globs: list[str]
    write_files: list[WriteFileSpec]
    setup: list[str]


def resolve_plan(request: ProvisionInput, repo_root: str, *,
                 signal: CancelToken | None = None
                 ) -> tuple[ProvisionPlan, AgentprotoConfig | None]:
    """Load both configuration files (unless ``runSetup`` is false) and apply precedence.

    "Present" means not ``None``: an explicit ``[]`` wins and disables the fallbacks.
    """
    committed = local = None
    if request.run_setup:
        committed = load_committed_config(repo_root, request.base, signal=signal)
        local = load_local_config(repo_root)
    section = committed.worktree if committed else None
    plan = ProvisionPlan(
        deps_cmd=_first(request.deps_cmd, local.deps_cmd if local else None,
                        section.deps_cmd if section else None),
        link_paths=_first(request.link_paths, local.link_paths if local else None,
                          section.link_paths if section else None) or [],
        copy_globs=_first(request.copy_globs, local.copy_globs if local else None) or [],
        clone_globs=_first(request.clone_globs, local.clone_globs if local else None) or [],
        write_files=(request.write_files if request.write_files is not None
                     else substitute_slug(local.write_files, request.slug) if local else []),
        setup=committed.setup_commands if committed else [],
    )
    return plan, committed


def _first(*values: T | None) -> T | None:
    return next((value for value in values if value is not None), None)


def _inside_worktree(cwd: str, dest: str, field: str, rel: str) -> None:
    """Refuse a destination whose parent resolves (through a symlink in the checkout)
    outside the worktree (tavernlab's addition)."""
    if not is_within(real(os.path.dirname(dest)), real(cwd)):
        raise ToolError("input_invalid", f"{field}: '{rel}' escapes the worktree through a "
                                         "symlink")


def link_paths_into(repo_root: str, cwd: str, rels: list[str]) -> None:
    """Symlink each ``repoRoot/rel`` at ``cwd/rel`` unless something (even a dangling link)
    is already there. ``rel`` is relative without ``..`` (validated on input)."""
    for rel in rels:
        target = os.path.abspath(os.path.join(repo_root, rel))
        dest = os.path.join(cwd, rel)
        if os.path.lexists(dest):
            continue
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        _inside_worktree(cwd, dest, "linkPaths", rel)
        os.symlink(target, dest)


def write_files_into(repo_root: str, cwd: str, entries: list[WriteFileSpec], *,
                     signal: CancelToken | None = None) -> None:
    """``create`` writes a missing file; ``append`` appends and marks it skip-worktree so
    the edit never shows in ``git status``."""
    for entry in entries:
        dest = os.path.join(cwd, entry.path)
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        _inside_worktree(cwd, dest, "writeFiles", entry.path)
        if entry.mode == "append":
            with open(dest, "a", encoding="utf-8") as handle:
                handle.write(entry.content)
            git_run(repo_root, ["update-index", "--skip-worktree", "--", entry.path],
                    target=cwd, signal=signal)
        elif not os.path.lexists(dest):
            Path(dest).write_text(entry.content, encoding="utf-8")


def first_heavy_phase(plan: ProvisionPlan) -> Phase | None:
    """``clone`` > ``deps`` > ``copy`` > ``setup`` > none."""
    if plan.clone_globs:
        return "clone"
    if plan.deps_cmd:
        return "deps"
    if plan.copy_globs:
        return "copy"
    if plan.setup:
        return "setup"
    return None


def provision_worktree(request: ProvisionInput,
                       runtime: WorktreeRuntime | None = None) -> ProvisionOutput:
    """Provision a worktree from a validated request (see :func:`tools.provision`).

    The ambient :class:`ProvisionContext` supplies the caller key, cancel signal, progress
    observer and (tavernlab's addition) the observer of the deps and setup hooks' output
    lines. There is no fallback when ``base`` does not exist: a base that resolves to no
    commit raises :class:`BaseRefNotFoundError`.
    """
    return _Provisioning(request, runtime or default_runtime()).run()


class _Provisioning:
    """One provision from ``git worktree add`` to ``done``."""

    def __init__(self, request: ProvisionInput, runtime: WorktreeRuntime) -> None:
        self.request = request
        self.runtime = runtime
        self.root = os.path.abspath(request.repo_root)
        self.branch = request.branch or default_branch_name(request.slug)
        self.cwd = (os.path.abspath(request.dir) if request.dir
                    else default_worktree_dir(self.root, request.slug))
        self.context = current_provision_context() or ProvisionContext()
        # A private token when the caller gave none, so an interrupt can still kill children.
        self.signal = self.context.signal or CancelToken()

    @property
    def output(self) -> ProvisionOutput:
        return {"cwd": self.cwd, "branch": self.branch}

    def run(self) -> ProvisionOutput:
        try:
            self._add()
        except KeyboardInterrupt as exc:
            raise self._cancel(interrupted=True, registered_only=True) from exc
        except ProvisionCancelledError as exc:  # before or while git ran
            raise self._cancel(interrupted=False, registered_only=True) from exc
        try:
            plan = self._prepare()
        except KeyboardInterrupt as exc:
            raise self._cancel(interrupted=True) from exc
        except ProvisionCancelledError:
            self._cancel(interrupted=False)
            raise
        phase = first_heavy_phase(plan)
        if phase is None:
            self.context.emit({"kind": "done", "outcome": "ok"})
            return self.output
        try:
            self._heavy(plan, phase)
        except KeyboardInterrupt as exc:
            raise self._cancel(interrupted=True) from exc
        except ProvisionCancelledError as exc:
            self._cancel(interrupted=exc.interrupted)
            raise
        except BaseException:
            self.context.emit({"kind": "done", "outcome": "failed"})
            raise
        self.context.emit({"kind": "done", "outcome": "ok"})
        return self.output

    def _add(self) -> None:
        args = ["worktree", "add", "-b", self.branch, END_OF_OPTIONS, self.cwd,
                self.request.base]
        result = git_run(self.root, args, signal=self.signal)
        if result.exit_code == 0:
            return
        if self.signal.cancelled:
            raise ProvisionCancelledError()
        if not resolves_to_commit(self.root, self.request.base):
            raise BaseRefNotFoundError(self.request.base, args=args, exit_code=result.exit_code,
                                       stderr=result.stderr, stdout=result.stdout)
        raise git_failure(args, result)

    def _prepare(self) -> ProvisionPlan:
        write_creation_marker(self.cwd, clock=self.runtime.clock, ids=self.runtime.ids)
        plan, _ = resolve_plan(self.request, self.root, signal=self.signal)
        link_paths_into(self.root, self.cwd, plan.link_paths)
        write_files_into(self.root, self.cwd, plan.write_files, signal=self.signal)
        return plan

    def _heavy(self, plan: ProvisionPlan, first: Phase) -> None:
        context, signal = self.context, self.signal
        lease = self.runtime.scheduler.acquire(
            self.root, context.caller_key or "anonymous", signal,
            lambda position: context.emit({"kind": "queued", "position": position,
                                           "phase": first}))
        try:
            _check(signal)
            context.emit({"kind": "started", "phase": first})
            if plan.clone_globs:
                context.emit({"kind": "phase", "phase": "clone"})
                self._clone(plan.clone_globs)
            if plan.deps_cmd:
                context.emit({"kind": "phase", "phase": "deps"})
                self._deps(plan.deps_cmd)
            if plan.copy_globs:
                context.emit({"kind": "phase", "phase": "copy"})
                copy_files(self.root, self.cwd, plan.copy_globs, signal=signal)
            if plan.setup:
                context.emit({"kind": "phase", "phase": "setup"})
                self._setup(plan.setup)
        finally:
            lease.release()

    def _clone(self, patterns: list[str]) -> None:
        try:
            clone_entries(self.root, self.cwd, patterns, signal=self.signal)
        except ProvisionCancelledError:
            raise
        except Exception as exc:
            raise ToolError("execution_failed", f"cloneGlobs failed: {exc}") from exc

    def _deps(self, command: str) -> None:
        result = run_shell(command, cwd=self.cwd, signal=self.signal,
                           on_line=self.context.line_observer("deps"))
        _check(self.signal)
        if result.exit_code != 0:
            detail = result.stderr or result.stdout
            raise ToolError("execution_failed",
                            f"depsCmd '{command}' failed (exit {result.exit_code}): {detail}")

    def _setup(self, commands: list[str]) -> None:
        try:
            run_setup(commands, HookContext(self.root, self.cwd, self.branch),
                      log_path=self.request.setup_log_path,
                      retry_on_failure=self.request.retry_setup_on_failure, signal=self.signal,
                      on_line=self.context.line_observer("setup"))
        except HookError as exc:
            raise ToolError("execution_failed", exc.message) from exc

    def _cancel(self, *, interrupted: bool, registered_only: bool = False
                ) -> ProvisionCancelledError:
        """The cancellation path: cancel, report, discard; returns the error to raise."""
        self.signal.cancel("interrupted" if interrupted else "cancelled")
        self.context.emit({"kind": "done", "outcome": "cancelled"})
        if not registered_only or self._registered():
            discard_worktree(self.root, self.cwd, self.branch)
        return ProvisionCancelledError(interrupted=interrupted)

    def _registered(self) -> bool:
        with contextlib.suppress(Exception):
            record = find_worktree(self.root, self.cwd)
            return record is not None and record.get("branch") == self.branch
        return False


def _check(signal: CancelToken | None) -> None:
    if signal is not None and signal.cancelled:
        raise ProvisionCancelledError()


def discard_worktree(repo_root: str, cwd: str, branch: str) -> None:
    """Best-effort: force fast-remove a half-made worktree and delete its branch."""
    with contextlib.suppress(Exception):
        remove_worktree_fast(repo_root, cwd, force=True)
    with contextlib.suppress(Exception):
        git_run(repo_root, ["branch", "-D", END_OF_OPTIONS, branch])
