"""``worktree.provision`` (spec section 2.1): a ready-to-work git worktree for an agent.

Cheap steps (``git worktree add``, the creation marker, configuration, ``linkPaths``,
``writeFiles``) run at once; heavy phases (clone, deps, copy, setup) run under a slot of the
process-wide :mod:`scheduler`. A cancelled provision removes its half-made worktree and
branch; a plain failure keeps the worktree for inspection.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict, TypeVar

from tavernlab.cancel import CancelToken
from tavernlab.worktree.config import (
    AgentprotoConfig,
    WriteFileSpec,
    load_committed_config,
    load_local_config,
    substitute_slug,
)
from tavernlab.worktree.context import (
    Phase,
    ProvisionContext,
    current_provision_context,
)
from tavernlab.worktree.environment import HookContext
from tavernlab.worktree.errors import (
    HookError,
    ProvisionCancelledError,
    ToolError,
)
from tavernlab.worktree.git import git, git_run
from tavernlab.worktree.globs import clone_entries, copy_files
from tavernlab.worktree.hooks import run_setup
from tavernlab.worktree.listing import worktree_git_dir
from tavernlab.worktree.process import run_shell
from tavernlab.worktree.removal import remove_worktree_fast
from tavernlab.worktree.scheduler import Lease, provision_scheduler

MARKER_FILE = "agentproto-worktree.json"

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


def default_worktree_dir(repo_root: str, slug: str) -> str:
    """``<repoRoot>/../_worktrees/<slug>``, absolute (repo ``/code/app`` → ``/code/_worktrees``)."""
    return os.path.abspath(os.path.join(repo_root, "..", "_worktrees", slug))


def default_branch_name(slug: str) -> str:
    """``wt/<slug>``."""
    return f"wt/{slug}"


def write_creation_marker(worktree: str) -> dict[str, str]:
    """Write ``{worktreeId, createdAt}`` into the worktree's private git dir.

    It never shows in ``git status`` and disappears with ``git worktree remove``/``prune``.
    """
    marker = {
        "worktreeId": f"wt_{uuid.uuid4().hex[:8]}",
        "createdAt": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }
    git_dir = worktree_git_dir(worktree)
    if git_dir is None:
        git_dir = Path(git(worktree, ["rev-parse", "--absolute-git-dir"]).strip())
    (git_dir / MARKER_FILE).write_text(json.dumps(marker), encoding="utf-8")
    return marker


def read_creation_marker(worktree: str) -> dict[str, str] | None:
    """The creation marker of a worktree, or ``None`` if it has none (or it is unreadable)."""
    git_dir = worktree_git_dir(worktree)
    if git_dir is None:
        return None
    try:
        data = json.loads((git_dir / MARKER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def resolve_plan(
    repo_root: str,
    slug: str,
    base: str,
    *,
    run_setup_hooks: bool,
    deps_cmd: str | None,
    link_paths: list[str] | None,
    copy_globs: list[str] | None,
    clone_globs: list[str] | None,
    write_files: list[WriteFileSpec] | None,
) -> tuple[ProvisionPlan, AgentprotoConfig | None]:
    """Load both configuration files (unless ``runSetup`` is false) and apply precedence.

    "Present" means not ``None``: an explicit ``[]`` wins and disables the fallbacks.
    """
    committed = local = None
    if run_setup_hooks:
        committed = load_committed_config(repo_root, base)
        local = load_local_config(repo_root)
    section = committed.worktree if committed else None

    plan = ProvisionPlan(
        deps_cmd=_first(deps_cmd, local.deps_cmd if local else None,
                        section.deps_cmd if section else None),
        link_paths=_first(link_paths, local.link_paths if local else None,
                          section.link_paths if section else None) or [],
        copy_globs=_first(copy_globs, local.copy_globs if local else None) or [],
        clone_globs=_first(clone_globs, local.clone_globs if local else None) or [],
        write_files=(write_files if write_files is not None
                     else substitute_slug(local.write_files, slug) if local else []),
        setup=committed.setup_commands if committed else [],
    )
    return plan, committed


def _first(*values: T | None) -> T | None:
    return next((value for value in values if value is not None), None)


def link_paths_into(repo_root: str, cwd: str, rels: list[str]) -> None:
    """Symlink each ``repoRoot/rel`` at ``cwd/rel`` unless something (even a dangling link)
    is already there. No traversal guard: ``../sibling`` lands next to the worktree."""
    for rel in rels:
        target = os.path.abspath(os.path.join(repo_root, rel))
        dest = os.path.join(cwd, rel)
        if os.path.lexists(dest):
            continue
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, dest)


def write_files_into(repo_root: str, cwd: str, entries: list[WriteFileSpec]) -> None:
    """``create`` writes a missing file; ``append`` appends and marks it skip-worktree so
    the edit never shows in ``git status``."""
    for entry in entries:
        dest = Path(cwd) / entry.path
        dest.parent.mkdir(parents=True, exist_ok=True)
        if entry.mode == "append":
            with dest.open("a", encoding="utf-8") as handle:
                handle.write(entry.content)
            git_run(repo_root, ["update-index", "--skip-worktree", entry.path], target=cwd)
        elif not os.path.lexists(dest):
            dest.write_text(entry.content, encoding="utf-8")


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


def provision_worktree(
    repo_root: str,
    slug: str,
    *,
    base: str = "origin/main",
    branch: str | None = None,
    dir: str | None = None,
    deps_cmd: str | None = None,
    copy_globs: list[str] | None = None,
    clone_globs: list[str] | None = None,
    link_paths: list[str] | None = None,
    write_files: list[WriteFileSpec] | None = None,
    run_setup: bool = True,
    setup_log_path: str | None = None,
    retry_setup_on_failure: bool = False,
) -> ProvisionOutput:
    """Provision a worktree from already-validated input (see :func:`tools.provision`).

    The ambient :class:`ProvisionContext` supplies the caller key, cancel signal and progress
    observer. There is no fallback when ``base`` does not exist.
    """
    root = os.path.abspath(repo_root)
    branch_name = branch or default_branch_name(slug)
    cwd = os.path.abspath(dir) if dir else default_worktree_dir(root, slug)
    git(root, ["worktree", "add", "-b", branch_name, cwd, base])
    write_creation_marker(cwd)
    plan, _ = resolve_plan(
        root, slug, base, run_setup_hooks=run_setup, deps_cmd=deps_cmd, link_paths=link_paths,
        copy_globs=copy_globs, clone_globs=clone_globs, write_files=write_files,
    )
    link_paths_into(root, cwd, plan.link_paths)
    write_files_into(root, cwd, plan.write_files)

    context = current_provision_context() or ProvisionContext()
    phase = first_heavy_phase(plan)
    if phase is None:
        context.emit({"kind": "done", "outcome": "ok"})
        return {"cwd": cwd, "branch": branch_name}
    _run_heavy_phases(root, cwd, branch_name, phase, plan, context,
                      setup_log_path, retry_setup_on_failure)
    return {"cwd": cwd, "branch": branch_name}


def _run_heavy_phases(root: str, cwd: str, branch: str, first: Phase, plan: ProvisionPlan,
                      context: ProvisionContext, log_path: str | None, retry: bool) -> None:
    signal = context.signal
    lease: Lease | None = None
    try:
        lease = provision_scheduler().acquire(
            root, context.caller_key or "anonymous", signal,
            lambda position: context.emit({"kind": "queued", "position": position,
                                           "phase": first}))
        _check(signal)
        context.emit({"kind": "started", "phase": first})
        if plan.clone_globs:
            context.emit({"kind": "phase", "phase": "clone"})
            try:
                clone_entries(root, cwd, plan.clone_globs, signal=signal)
            except ProvisionCancelledError:
                raise
            except Exception as exc:
                raise ToolError("execution_failed", f"cloneGlobs failed: {exc}") from exc
        if plan.deps_cmd:
            context.emit({"kind": "phase", "phase": "deps"})
            result = run_shell(plan.deps_cmd, cwd=cwd, signal=signal)
            _check(signal)
            if result.exit_code != 0:
                detail = result.stderr or result.stdout
                raise ToolError("execution_failed",
                                f"depsCmd '{plan.deps_cmd}' failed (exit {result.exit_code}): "
                                f"{detail}")
        if plan.copy_globs:
            context.emit({"kind": "phase", "phase": "copy"})
            copy_files(root, cwd, plan.copy_globs, signal=signal)
        if plan.setup:
            context.emit({"kind": "phase", "phase": "setup"})
            try:
                run_setup(plan.setup, HookContext(root, cwd, branch), log_path=log_path,
                          retry_on_failure=retry, signal=signal)
            except HookError as exc:
                raise ToolError("execution_failed", exc.message) from exc
    except ProvisionCancelledError:
        context.emit({"kind": "done", "outcome": "cancelled"})
        discard_worktree(root, cwd, branch)
        raise
    except BaseException:
        context.emit({"kind": "done", "outcome": "failed"})
        raise
    finally:
        if lease is not None:
            lease.release()
    context.emit({"kind": "done", "outcome": "ok"})


def _check(signal: CancelToken | None) -> None:
    if signal is not None and signal.cancelled:
        raise ProvisionCancelledError()


def discard_worktree(repo_root: str, cwd: str, branch: str) -> None:
    """Best-effort: force fast-remove a half-made worktree and delete its branch."""
    with contextlib.suppress(Exception):
        remove_worktree_fast(repo_root, cwd, force=True)
    git_run(repo_root, ["branch", "-D", branch])
