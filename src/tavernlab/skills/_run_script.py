"""The legacy ``skill.run_script`` tool (docs/js-and-skills.md, compatibility mode).

Offered only when the Profile enables ``skills.legacyRunScript`` (``lab.start_run(...,
legacy_run_script=True)``). The handler follows the processing steps of 7.1:

1. arguments ``{skill, script, args}`` (allow-listed; ``skill`` trimmed, ``args`` defaults to
   ``{}``; ``null`` counts as absent);
2. the script name must match ``^[a-z0-9][a-z0-9-]*$``;
3. the Profile's skill policy must allow the skill, and the Invocation must have it bound;
4. the module snapshot: every UTF-8 ``scripts/**/*.js`` file of the bound package (raw, not
   macro-projected), at most 64 modules / 2 MiB (:class:`SkillScriptValidationError`, which
   aborts the call); a missing entry is ``skill.run_script_not_found``;
5. the roots of the Invocation manifest (the scope's policy), not the Profile copy;
6. the workspace snapshot: each visible root except ``skills/`` listed to depth 10 and 1000
   entries (more fails the call before execution with a validation error that mentions
   ``truncated``), every UTF-8 file read with its SHA-256 (binary files are left out);
7. the context JSON from the frozen prompt snapshot
   (:func:`~tavernlab.js.legacy_context`; malformed ->
   ``agent.invalid_skill_script_context``, aborting the call);
8-9. execution in the sandbox (:func:`~tavernlab.js.run_skill_script`), logs to the
   ``tavernlab.skill_script`` logger;
10. write-back (:func:`write_back`);
11. the result: ``Executed skill script `<skill>/scripts/<script>.js`. Result:\\n<JSON>``,
    ``structured`` = the value, ``resourceRefs`` = the written paths; the auto-commit candidate
    is the path of the last ``writeText`` call when it is a text file.

tavernlab choices where upstream is unknown: ``skills/`` is left out of the workspace
snapshot; binary files are left out; a cancelled script is
``skill.run_script_execution_failed`` (``Skill script <entry> was cancelled.``); the
write-back failure message says ``already written: none`` when nothing was written.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tavernlab.clock import is_deterministic, seed_from
from tavernlab.errors import NotFound, ToolError, WorkspaceError
from tavernlab.js import (
    LEGACY_SNAPSHOT_DEPTH,
    LEGACY_SNAPSHOT_ENTRIES,
    SkillScriptError,
    SkillScriptValidationError,
)
from tavernlab.paths import InvalidWorkspacePath, WorkspacePath
from tavernlab.workspace.scope import SKILLS_ROOT, ScopedWorkspaceFs, is_text_file
from tavernlab.workspace.storage import NotRegularFile, WriteGuard, read_regular, sha256_hex
from tavernlab.workspace.tools import (
    Arguments,
    ToolContext,
    ToolResult,
    ToolSpec,
    compact_json,
    invalid_arguments,
)

if TYPE_CHECKING:
    from tavernlab.js import SkillScriptRequest, SnapshotFile, WorkerPool

SCRIPT_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
WRITE_FAILED = "skill.run_script_write_failed"

DESCRIPTION = """\
Run a script of a skill (compatibility mode): skill.run_script {skill, script, args}.
The script is scripts/<script>.js of the skill; its default(args) or main(args) runs in a
QuickJS sandbox and its return value comes back as JSON (at most 256 KiB). Files written
with workspace.writeText are applied after the script succeeds, with conflict checks.
Read the skill's SKILL.md for its scripts and their arguments."""


def handle_run_script(ctx: ToolContext, args: Arguments,
                      pool: WorkerPool | Callable[[], WorkerPool] | None = None) -> ToolResult:
    """The ``skill.run_script`` handler (see the module docstring), on ``pool`` (default:
    the process-wide one; a function that gives the pool is asked at each call); under a
    deterministic lab clock the script's ``Date`` and ``Math.random`` are fixed. The sandbox
    is loaded on the first call."""
    from tavernlab.js import run_skill_script

    request = build_request(ctx, args)
    fixed = is_deterministic(ctx.clock)
    try:
        outcome = run_skill_script(request, token=ctx.token,
                                   pool=pool() if callable(pool) else pool,
                                   clock=ctx.clock if fixed else None,
                                   seed=seed_from(ctx.ids) if fixed else None)
    except SkillScriptError as exc:
        raise ToolError(exc.code, exc.message) from None
    written = write_back(ctx.scope, request.files, outcome.writes,
                         outcome.last_write_path)
    return ToolResult(
        content=(f"Executed skill script `{request.skill}/{request.entry}`. Result:\n"
                 f"{compact_json(outcome.value)}"),
        structured=outcome.value, resource_refs=written)


def build_request(ctx: ToolContext, args: Arguments) -> SkillScriptRequest:
    """Steps 1-7: validate the call and build the engine request (nothing runs yet)."""
    from tavernlab.js import SkillScriptRequest, legacy_context

    skill = (args.string("skill", required=True, missing="skill is required") or "").strip()
    if not skill:
        raise invalid_arguments("skill is required")
    script = args.string("script", required=True, missing="script is required") or ""
    script_args = args.value("args")
    if script_args is None:
        script_args = {}
    if not isinstance(script_args, dict):
        raise invalid_arguments("args must be an object")
    if not SCRIPT_NAME.fullmatch(script):
        raise ToolError("skill.run_script_invalid_name", (
            f"script name `{script}` is invalid: use lowercase letters, digits, and hyphens "
            "(pattern ^[a-z0-9][a-z0-9-]*$). Check the exact script name in this skill's "
            "SKILL.md."))
    if not ctx.profile.skills.allows(skill):
        raise ToolError("skill.run_script_skill_not_visible", (
            f"Skill `{skill}` is not available under the current policy. Call skill_list to "
            "see available skills."))
    binding = ctx.skills.get(skill)
    if binding is None:
        raise ToolError("skill.run_script_skill_not_visible", (
            f"Skill `{skill}` is not available in the current Skill set. Call skill_list to "
            "see available skills."))
    modules = module_snapshot(skill, Path(binding.package_dir))
    entry = f"scripts/{script}.js"
    if entry not in modules:
        raise ToolError("skill.run_script_not_found", (
            f"Script `{entry}` was not found in skill `{skill}`. Call skill_read on this "
            "skill's SKILL.md to check which scripts it ships."))
    scope = ctx.scope
    context = ctx.frozen
    return SkillScriptRequest(
        skill=skill, entry=entry, modules=modules, args=script_args,
        visible_roots=scope.policy.visible_roots, writable_roots=scope.policy.writable_roots,
        files=workspace_snapshot(scope), context=legacy_context(context.snapshot, context.macros),
        macros=context.macros)


def module_snapshot(skill: str, package_dir: Path) -> dict[str, str]:
    """Every UTF-8 ``scripts/**/*.js`` file of a package, by logical path, raw.

    Stops with :class:`SkillScriptValidationError` as soon as the 64-module / 2 MiB limit is
    exceeded (a whole package is never read just to be refused).
    """
    from tavernlab.js import check_module_snapshot

    modules: dict[str, str] = {}
    total = 0
    scripts = package_dir / "scripts"
    for directory, dirnames, filenames in os.walk(scripts):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(".js"):
                continue
            host = Path(directory) / name
            if not stat.S_ISREG(os.lstat(host).st_mode):
                continue
            try:
                data = read_regular(host)
            except NotRegularFile:  # swapped for a FIFO or a device since the lstat
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            modules[host.relative_to(package_dir).as_posix()] = text
            total += len(data)
            check_module_snapshot(skill, len(modules), total)
    return modules


def workspace_snapshot(scope: ScopedWorkspaceFs) -> dict[str, SnapshotFile]:
    """The UTF-8 files of every visible root except ``skills/`` with their digests."""
    from tavernlab.js import SnapshotFile

    files: dict[str, SnapshotFile] = {}
    for root in scope.policy.visible_roots:
        if root == SKILLS_ROOT:
            continue
        try:
            listing = scope.list_files(WorkspacePath(root), LEGACY_SNAPSHOT_DEPTH,
                                       LEGACY_SNAPSHOT_ENTRIES)
        except NotFound:
            continue
        if listing.truncated:
            raise SkillScriptValidationError(
                f"workspace snapshot of `{root}` was truncated at {LEGACY_SNAPSHOT_ENTRIES} "
                f"entries (depth {LEGACY_SNAPSHOT_DEPTH}); skill scripts need a smaller "
                "workspace")
        for entry in listing.entries:
            if entry.kind != "file":
                continue
            data = scope.read_file(WorkspacePath(entry.path), None)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            files[entry.path] = SnapshotFile(text, sha256_hex(data))
    return files


def write_back(scope: ScopedWorkspaceFs, files: Mapping[str, SnapshotFile],
               writes: Sequence[Any], last_write_path: str | None) -> list[str]:
    """Apply a delta: validate every path first, then write in path order with guards
    from the snapshot; returns the written paths.

    A non-writable path writes nothing; the first failing write stops the batch, keeps what
    was written, clears the auto-commit candidate and raises
    ``skill.run_script_write_failed`` with ``resourceRefs`` = the written paths. On success
    the candidate is the last ``writeText`` path when it is a text file (otherwise the
    tracker keeps what it had before this call).
    """
    roots = ", ".join(scope.policy.writable_roots)
    targets: list[WorkspacePath] = []
    for write in writes:
        try:
            path: WorkspacePath | None = WorkspacePath.parse(write.path)
        except InvalidWorkspacePath:
            path = None
        if path is None or path.text != write.path or not scope.is_writable(path):
            raise ToolError(WRITE_FAILED, f"Write path `{write.path}` is outside the writable "
                            f"workspace roots ({roots}).")
        targets.append(path)
    tracker = scope.tracker
    before = (tracker.candidate, tracker.changed, tracker.candidate_call_id)
    written: list[str] = []
    for write, path in zip(writes, targets, strict=True):
        snapshot = files.get(write.path)
        guard = (WriteGuard.must_match_sha256(snapshot.sha256) if snapshot is not None
                 else WriteGuard.must_not_exist())
        try:
            scope.write_text(path, write.text, guard)
        except WorkspaceError as exc:
            tracker.clear_candidate()
            raise ToolError(WRITE_FAILED, (
                f"Write to `{write.path}` failed: {exc.message.rstrip('.')}. "
                f"{len(written)}/{len(writes)} writes were applied; already written: "
                f"{', '.join(written) or 'none'}. Re-read the listed files before retrying."),
                resource_refs=written) from None
        written.append(write.path)
    if written:
        if last_write_path is not None and is_text_file(last_write_path):
            tracker.candidate, tracker.changed = last_write_path, True
        else:
            tracker.candidate, tracker.changed, tracker.candidate_call_id = before
    return written


#: The legacy ``skill.run_script`` tool (compatibility mode only).
def run_script_tools(pool: WorkerPool | Callable[[], WorkerPool] | None = None
                     ) -> tuple[ToolSpec, ...]:
    """The legacy ``skill.run_script`` tool (compatibility mode only), running its scripts
    on ``pool`` (or on the pool a function gives at each call)."""
    return (ToolSpec("skill.run_script", partial(handle_run_script, pool=pool), True,
                     DESCRIPTION, ("skill", "script", "args"), compat=True),)
