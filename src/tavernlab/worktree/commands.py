"""The worktree commands both surfaces share: their arguments and handlers that return data.

``tavernlab worktree …`` prints what a handler returns (text or ``--json``); ``%worktree …``
displays it. Defined here, below both surfaces, so that each command has one flag set and one
rule for naming a worktree:

* ``--worktree PATH|SLUG`` names a worktree by its directory (any worktree of the directory's
  repository, the main checkout included) or by its slug (a linked worktree's folder name, or
  its branch ``wt/<slug>``), looked up in ``--repo`` (default: the current directory's
  repository). Without ``--worktree`` a surface supplies its default: the command line the
  current directory, the notebook its current worktree. ``--branch`` overrides the branch.
* ``run``, ``services`` and ``stop`` take that rule; ``rm PATH|SLUG`` names the linked
  worktree to remove the same way.
* ``new SLUG`` has one flag set (:func:`add_new_arguments`) and one input builder
  (:func:`new_input`); without ``--base`` each surface picks the base (the command line
  ``origin/main``, the notebook the same or, without it, the current branch, saying so).

* ``gc`` has one flag set (:func:`add_gc_arguments`) and one options builder
  (:func:`gc_options`); each surface gives the forge (and the notebook its lab's clock and
  service registry).

The other commands (``ls``, ``gate``, ``start``, ``archive``, ``proxy``) are still declared
by each surface.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tavernlab.errors import ToolError, UsageError
from tavernlab.worktree.agent_args import CliUsageError, write_file
from tavernlab.worktree.forge import Forge
from tavernlab.worktree.gc import GcOptions
from tavernlab.worktree.git import DEFAULT_REF
from tavernlab.worktree.listing import (
    WorktreeRecord,
    find_worktree,
    list_worktrees,
    main_repo_root,
    real,
)
from tavernlab.worktree.runtime import WorktreeRuntime
from tavernlab.worktree.tools import call_tool

WORKTREE_METAVAR = "PATH|SLUG"


@dataclass(frozen=True)
class Target:
    """A worktree a command acts on: its repository, path and branch."""

    repo: str
    path: str
    branch: str


def find_linked(repo: str, ref: str) -> WorktreeRecord:
    """The linked worktree named by ``ref``: its path, or its slug (the folder name, or the
    branch ``wt/<slug>``); else ``ToolError(not_found)``. An absolute or ``./``/``../`` path
    is only ever compared as a path."""
    as_path = os.path.isabs(ref) or ref in (".", "..") or ref.startswith(("./", "../"))
    for record in list_worktrees(repo)[1:]:  # after the main checkout
        path = record["path"]
        if real(path) == real(os.path.abspath(ref)) or (not as_path and (
                os.path.basename(path) == ref or record.get("branch") in (ref, f"wt/{ref}"))):
            return record
    raise ToolError("not_found", f"not a linked worktree of {repo}: {ref}")


def resolve_target(ref: str | None, *, repo: str | None = None, branch: str | None = None,
                   current: Callable[[], Target] | None = None) -> Target:
    """The worktree ``--worktree ref`` names (see the module doc); ``ref`` ``None`` is
    ``current()`` when given, else the current directory."""
    if ref is None and current is not None:
        found = current()
        return found if branch is None else Target(found.repo, found.path, branch)
    ref = "." if ref is None else ref
    if os.path.isdir(ref):
        path = os.path.abspath(ref)
        root = main_repo_root(path)
        if branch is None:
            record = find_worktree(root, path)
            if record is None:
                raise ToolError("not_found", f"not a worktree of {root}: {path}")
            branch = record.get("branch") or ""
        return Target(root, path, branch)
    root = main_repo_root(os.path.abspath(repo or "."))
    record = find_linked(root, ref)
    return Target(root, record["path"], record.get("branch") or "" if branch is None else branch)


def target_of(args: argparse.Namespace, current: Callable[[], Target] | None = None) -> Target:
    """:func:`resolve_target` from the arguments of :func:`add_target_arguments` (a parser
    without ``--branch`` leaves the worktree's own)."""
    return resolve_target(args.worktree, repo=args.repo, branch=getattr(args, "branch", None),
                          current=current)


def add_target_arguments(parser: argparse.ArgumentParser, *, default_help: str,
                         base: bool = True) -> None:
    """``--worktree PATH|SLUG``, ``--repo``, ``--branch`` (and ``--base`` unless told not)."""
    parser.add_argument("--worktree", metavar=WORKTREE_METAVAR, default=None,
                        help=f"a worktree's directory or slug (default: {default_help})")
    parser.add_argument("--repo", help="repository of a --worktree SLUG (default: the current "
                                       "directory's)")
    parser.add_argument("--branch", help="branch (default: the worktree's)")
    if base:
        parser.add_argument("--base", default=DEFAULT_REF,
                            help="ref whose agentproto.json is read")


def add_script_arguments(parser: argparse.ArgumentParser, *, default_help: str) -> None:
    """``SCRIPT`` and the target arguments (``run``, ``stop``)."""
    parser.add_argument("script", metavar="SCRIPT", help="a script of agentproto.json")
    add_target_arguments(parser, default_help=default_help)


def run_script(target: Target, args: argparse.Namespace,
               runtime: WorktreeRuntime | None = None) -> Any:
    """``run SCRIPT``: ``worktree.run-script`` in the target."""
    return call_tool("worktree.run-script", {
        "repoRoot": target.repo, "worktreePath": target.path, "branch": target.branch,
        "base": args.base, "script": args.script}, runtime)


def list_services(target: Target, args: argparse.Namespace, proxy_port: int | None,
                  runtime: WorktreeRuntime | None = None) -> Any:
    """``services``: ``worktree.list-services`` of the target."""
    return call_tool("worktree.list-services", {
        "repoRoot": target.repo, "worktreePath": target.path, "branch": target.branch,
        "base": args.base, "proxyPort": proxy_port}, runtime)


def stop_service(target: Target, args: argparse.Namespace,
                 runtime: WorktreeRuntime | None = None) -> Any:
    """``stop SCRIPT``: ``worktree.stop-service`` in the target."""
    return call_tool("worktree.stop-service", {"worktreePath": target.path,
                                               "script": args.script}, runtime)


def add_rm_arguments(parser: argparse.ArgumentParser) -> None:
    """``rm PATH|SLUG`` and its flags."""
    parser.add_argument("worktree", metavar=WORKTREE_METAVAR,
                        help="the linked worktree's directory or slug")
    parser.add_argument("--repo", default=None,
                        help="repository (default: the current directory's)")
    parser.add_argument("--base", default=DEFAULT_REF)
    parser.add_argument("--delete-branch", action="store_true")
    parser.add_argument("--no-teardown", action="store_true")
    parser.add_argument("--discard-untracked", action="store_true")
    parser.add_argument("--discard-modified", action="store_true")


def remove(args: argparse.Namespace, runtime: WorktreeRuntime | None = None
           ) -> tuple[WorktreeRecord, Any]:
    """``rm``: stop services, run teardown and remove the named linked worktree; returns
    its record and ``worktree.cleanup``'s output."""
    repo = main_repo_root(os.path.abspath(args.repo or "."))
    record = find_linked(repo, args.worktree)
    result = call_tool("worktree.cleanup", {
        "repoRoot": repo, "cwd": record["path"], "branch": record.get("branch"),
        "deleteBranch": args.delete_branch, "base": args.base,
        "runTeardown": not args.no_teardown, "discardUntracked": args.discard_untracked,
        "discardModified": args.discard_modified}, runtime)
    return record, result


def add_new_arguments(parser: argparse.ArgumentParser) -> None:
    """``new SLUG`` and its flags (``--base`` is ``None`` when not given)."""
    parser.add_argument("slug", metavar="SLUG", help="lowercase kebab-case name, e.g. fix-login")
    parser.add_argument("--repo", help="repository (default: the current directory's)")
    parser.add_argument("--base", default=None,
                        help=f"ref to branch from (default {DEFAULT_REF})")
    parser.add_argument("--branch", help="branch name (default wt/SLUG)")
    parser.add_argument("--dir", help="worktree directory (default <repo>/../_worktrees/SLUG)")
    parser.add_argument("--deps-cmd", metavar="CMD", help="install command run in the worktree")
    parser.add_argument("--copy-glob", action="append", help="file glob to copy (repeatable)")
    parser.add_argument("--clone-glob", action="append",
                        help="entry glob to clone (repeatable)")
    parser.add_argument("--link", action="append", help="path to symlink (repeatable)")
    parser.add_argument("--write-file", action="append", metavar="JSON",
                        help='{"path", "content", "mode"?} to write (repeatable)')
    parser.add_argument("--no-setup", action="store_true",
                        help="skip both config files and hooks")
    parser.add_argument("--setup-log", help="append full hook output to this file")
    parser.add_argument("--retry-setup", action="store_true", help="retry a failing setup once")


def new_repo(args: argparse.Namespace) -> str:
    """The repository of ``new`` (``--repo``, else the current directory's)."""
    return main_repo_root(os.path.abspath(args.repo or "."))


def write_file_spec(raw: str) -> dict[str, Any]:
    """A ``--write-file`` JSON ``{path, content, mode?}``; a bad value is a
    :class:`~tavernlab.errors.UsageError` with upstream's ``worktree-agent`` wording."""
    try:
        return write_file(raw)
    except CliUsageError as exc:
        raise UsageError(exc.reason) from None


def new_input(args: argparse.Namespace, *, repo: str, base: str) -> dict[str, Any]:
    """``worktree.provision``'s input from the arguments of :func:`add_new_arguments`."""
    tool_input: dict[str, Any] = {"repoRoot": repo, "slug": args.slug, "base": base}
    for key, value in (("branch", args.branch), ("dir", args.dir and os.path.abspath(args.dir)),
                       ("depsCmd", args.deps_cmd), ("copyGlobs", args.copy_glob),
                       ("cloneGlobs", args.clone_glob), ("linkPaths", args.link),
                       ("setupLogPath", args.setup_log and os.path.abspath(args.setup_log))):
        if value is not None:
            tool_input[key] = value
    if args.write_file is not None:
        tool_input["writeFiles"] = [write_file_spec(raw) for raw in args.write_file]
    if args.no_setup:
        tool_input["runSetup"] = False
    if args.retry_setup:
        tool_input["retrySetupOnFailure"] = True
    return tool_input


def add_gc_arguments(parser: argparse.ArgumentParser) -> None:
    """``gc`` and its flags."""
    parser.add_argument("--repo", help="repository (default: the current directory's)")
    parser.add_argument("--apply", action="store_true", help="act on the plan")
    parser.add_argument("--salvage-dirty", action="store_true",
                        help="salvage, then reclaim, worktrees with uncommitted work")
    parser.add_argument("--include-detached", action="store_true")
    parser.add_argument("--worktrees-root")
    parser.add_argument("--protect", action="append", help="a live session's cwd (repeatable)")
    parser.add_argument("--salvage-root")


def gc_options(args: argparse.Namespace, forge: Forge, **extra: Any) -> GcOptions:
    """:class:`GcOptions` from the arguments of :func:`add_gc_arguments`, with ``forge`` and
    the surface's ``extra`` options (a clock, a service registry)."""
    return GcOptions(forge=forge,
                     protected_paths=[os.path.abspath(p) for p in args.protect or []],
                     include_detached=args.include_detached,
                     worktrees_root=args.worktrees_root and os.path.abspath(args.worktrees_root),
                     salvage_dirty=args.salvage_dirty, salvage_root=args.salvage_root, **extra)
