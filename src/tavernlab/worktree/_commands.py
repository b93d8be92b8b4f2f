"""The worktree commands both surfaces share: each declared once, with a handler that
returns data.

:data:`COMMANDS` is the table: every command's name, help and flag declaration
(:class:`Command`). ``tavernlab worktree …`` and ``%worktree …`` both build their parsers
from it, so the two flag sets cannot drift apart; the command line prints what a handler
returns (text or ``--json``), the notebook displays it. What differs between the surfaces is
said by a :class:`Surface`: what a missing ``--worktree`` means and ``start``'s default
proxy port. One command belongs to one surface only: ``proxy`` (the notebook's proxy lives
in the kernel; on the command line ``start`` serves its own). The command line's own flags
are ``--json`` and ``--run``/``--lab`` (what the notebook has as its current run).

* ``--worktree PATH|SLUG`` names a worktree by its directory (any worktree of the directory's
  repository, the main checkout included) or by its slug (a linked worktree's folder name, or
  its branch ``wt/<slug>``), looked up in ``--repo`` (default: the current directory's
  repository). Without ``--worktree`` a surface supplies its default: the command line the
  current directory, the notebook its current worktree. ``--branch`` overrides the branch.
* ``gate``, ``run``, ``start``, ``services`` and ``stop`` take that rule; ``rm PATH|SLUG``
  and ``archive PATH|SLUG`` name the linked worktree to remove the same way.
* ``gate [--worktree PATH|SLUG] CMD…`` runs the words after its options as the command (one
  quoted string, or words joined with shell quoting). The older spelling ``gate DIR CMD``,
  a directory path (with a ``/``, or ``.``/``..``) as the first of several words, is
  ``gate --worktree DIR CMD``: a shell cannot run a directory, so no command changes meaning.
  A gate runs in any directory it is given, as the tool does. Its options (``--json``
  too) come before ``CMD``: every word from the command's first on is the command's.
* ``new SLUG`` builds one provision request (:func:`new_request`, the tool's own input
  model); without ``--base`` each surface picks the base (the command line ``origin/main``,
  the notebook the same or, without it, the current branch, saying so).
* Every tool call goes through a :data:`ToolCaller`: :func:`tool_caller` outside any run,
  :func:`run_caller` through a run's ``call_tool``, so the call is in that run's events,
  journal and timeline (a failed call then raises its envelope code, for example
  ``cancelled``, rather than the tool's own error class).
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from tavernlab.errors import ToolError, UsageError
from tavernlab.workspace.tools import ToolResult
from tavernlab.worktree._agent_args import CliUsageError, write_file
from tavernlab.worktree._agent_args import add_arguments as add_agent_arguments
from tavernlab.worktree._forge import Forge
from tavernlab.worktree._gc import GcOptions
from tavernlab.worktree._git import DEFAULT_REF
from tavernlab.worktree._listing import (
    WorktreeRecord,
    find_worktree,
    list_worktrees,
    main_repo_root,
    real,
)
from tavernlab.worktree._runtime import WorktreeRuntime
from tavernlab.worktree._salvage import salvage_worktree
from tavernlab.worktree._tool_inputs import (
    CleanupInput,
    GateInput,
    ListServicesInput,
    ProvisionInput,
    ScriptInput,
    StartServiceInput,
    StopServiceInput,
    ToolInput,
)
from tavernlab.worktree._tools import call_tool

WORKTREE_METAVAR = "PATH|SLUG"

#: How a command calls a worktree tool: ``call(tool_id, request)`` returns the tool's
#: output or raises its error.
ToolCaller = Callable[[str, ToolInput], Any]


def tool_caller(runtime: WorktreeRuntime | None = None) -> ToolCaller:
    """Call the tools outside any run, against ``runtime`` (default: the process-wide one)."""
    return lambda tool_id, request: call_tool(tool_id, request, runtime)


class ToolRun(Protocol):
    """What :func:`run_caller` needs of a run: the host's ``call_tool``."""

    def call_tool(self, tool_id: str, arguments: Any = None) -> ToolResult:
        """Execute one recorded tool call."""
        ...


def run_caller(run: ToolRun) -> ToolCaller:
    """Call the tools through ``run``, so each call is recorded as the run's own (its
    events, stored arguments and result). A failed call raises ``ToolError`` with the
    call's error code and message."""
    def call(tool_id: str, request: ToolInput) -> Any:
        result = run.call_tool(tool_id, request.wire())
        if result.is_error:
            raise ToolError(result.error_code or "internal", result.content)
        return result.structured

    return call


# -- the surfaces and the table ---------------------------------------------------------------


@dataclass(frozen=True)
class Surface:
    """What a surface says where the two differ: ``here`` is what a missing ``--worktree``
    means, ``start_proxy_port`` the default of ``start --proxy-port``."""

    name: Literal["cli", "notebook"]
    here: str
    start_proxy_port: int | None


CLI = Surface("cli", "the current directory", 18780)
NOTEBOOK = Surface("notebook", "the current worktree", None)

Declare = Callable[[argparse.ArgumentParser, Surface], object]


@dataclass(frozen=True)
class Command:
    """One worktree command: its name, help line(s), flag declaration and surfaces."""

    name: str
    help: str
    declare: Declare
    notebook_help: str | None = None
    surfaces: tuple[Literal["cli", "notebook"], ...] = ("cli", "notebook")

    def help_for(self, surface: Surface) -> str:
        """The help line on ``surface``."""
        if surface.name == "notebook" and self.notebook_help is not None:
            return self.notebook_help
        return self.help


def commands_for(surface: Surface) -> tuple[Command, ...]:
    """The commands of ``surface``, in table order."""
    return tuple(command for command in COMMANDS if surface.name in command.surfaces)


# -- naming a worktree ------------------------------------------------------------------------


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


def linked_target(ref: str, repo: str | None) -> Target:
    """The linked worktree ``ref`` names (a directory: of its own repository; a slug: of
    ``repo``, default the current directory's); the main checkout is ``not_found``."""
    target = resolve_target(ref, repo=repo)
    if real(target.path) == real(target.repo):
        raise ToolError("not_found", f"not a linked worktree of {target.repo}: {target.path}")
    return target


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


def where(target: Target, args: argparse.Namespace) -> dict[str, Any]:
    """The snake_case location fields of the script and service tools."""
    return {"repo_root": target.repo, "worktree_path": target.path, "branch": target.branch,
            "base": args.base}


# -- ls ---------------------------------------------------------------------------------------


def add_ls_arguments(parser: argparse.ArgumentParser, surface: Surface) -> None:
    """``ls [--repo]``."""
    parser.add_argument("--repo", help="repository (default: the current directory's)")


def repo_of(args: argparse.Namespace) -> str:
    """The repository of a command with ``--repo`` (default: the current directory's)."""
    return main_repo_root(os.path.abspath(args.repo or "."))


def list_repo(args: argparse.Namespace) -> tuple[str, list[WorktreeRecord]]:
    """``ls``: the repository and its worktrees (the main checkout first)."""
    repo = repo_of(args)
    return repo, list_worktrees(repo)


# -- gate -------------------------------------------------------------------------------------


class _CheckCommand(argparse.Action):
    """``CMD…``: at least one word, else the parser's own usage error."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        if not values:
            parser.error(f"give the check command ({parser.prog} CMD)")
        setattr(namespace, self.dest, list(values or []))


def add_gate_arguments(parser: argparse.ArgumentParser, surface: Surface) -> None:
    """``gate [--worktree PATH|SLUG] [--repo REPO] CMD…``."""
    parser.add_argument("--worktree", metavar=WORKTREE_METAVAR,
                        help=f"a worktree's directory or slug (default: {surface.here})")
    parser.add_argument("--repo", help="repository of a --worktree SLUG")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD", action=_CheckCommand,
                        help="the check command (one quoted string, or words)")


def _is_dir_path(word: str) -> bool:
    return ("/" in word or word in (".", "..")) and os.path.isdir(word)


def gate(args: argparse.Namespace, call: ToolCaller,
         current: Callable[[], Target] | None = None) -> tuple[str, str, Any]:
    """``gate``: ``worktree.run-gate`` in the named (or default) worktree; returns the
    directory, the command line and the tool's output."""
    words, ref = list(args.cmd), args.worktree
    if ref is None and len(words) > 1 and _is_dir_path(words[0]):
        ref, words = words[0], words[1:]
    if ref is not None and os.path.isdir(ref):
        path = os.path.abspath(ref)
    elif ref is None and current is None:
        path = os.path.abspath(".")
    else:
        path = resolve_target(ref, repo=args.repo, current=current).path
    cmd = words[0] if len(words) == 1 else shlex.join(words)
    return path, cmd, call("worktree.run-gate", GateInput.from_python(cwd=path, cmd=cmd))


# -- run, start, stop, services ---------------------------------------------------------------


def run_target_script(target: Target, args: argparse.Namespace, call: ToolCaller) -> Any:
    """``run SCRIPT``: ``worktree.run-script`` in the target."""
    return call("worktree.run-script", ScriptInput.from_python(**where(target, args),
                                                               script=args.script))


def add_start_arguments(parser: argparse.ArgumentParser, surface: Surface) -> None:
    """``start SCRIPT… [target] [--proxy-port] [--seconds]``."""
    parser.add_argument("scripts", nargs="+", metavar="script",
                        help="services of agentproto.json")
    add_target_arguments(parser, default_help=surface.here)
    parser.add_argument("--proxy-port", type=int, default=surface.start_proxy_port,
                        help="0 picks a free port" if surface.name == "cli" else
                        "the notebook proxy's port, when it must start (default: a free one)")
    parser.add_argument("--seconds", type=float,
                        help="stop the services after this many seconds")


def start_services(target: Target, args: argparse.Namespace, proxy_port: int,
                   call: ToolCaller) -> list[Any]:
    """``start``: ``worktree.start-service`` for each script, behind the proxy on
    ``proxy_port``; returns their statuses."""
    return [call("worktree.start-service", StartServiceInput.from_python(
        **where(target, args), script=name, proxy_port=proxy_port)) for name in args.scripts]


def stop_target_service(target: Target, args: argparse.Namespace, call: ToolCaller) -> Any:
    """``stop SCRIPT``: ``worktree.stop-service`` in the target."""
    return call("worktree.stop-service", StopServiceInput.from_python(
        worktree_path=target.path, script=args.script))


def add_services_arguments(parser: argparse.ArgumentParser, surface: Surface) -> None:
    """``services [target] [--proxy-port]``."""
    add_target_arguments(parser, default_help=surface.here)
    parser.add_argument("--proxy-port", type=int, default=None,
                        help="the proxy port the URLs name (default: "
                        + ("none" if surface.name == "cli" else "the notebook's proxy") + ")")


def list_target_services(target: Target, args: argparse.Namespace, proxy_port: int | None,
                  call: ToolCaller) -> Any:
    """``services``: ``worktree.list-services`` of the target."""
    return call("worktree.list-services", ListServicesInput.from_python(
        **where(target, args), proxy_port=proxy_port))


# -- rm, archive ------------------------------------------------------------------------------


def add_rm_arguments(parser: argparse.ArgumentParser, surface: Surface | None = None) -> None:
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


def remove(args: argparse.Namespace, call: ToolCaller) -> tuple[WorktreeRecord, Any]:
    """``rm``: stop services, run teardown and remove the named linked worktree; returns
    its record and ``worktree.cleanup``'s output."""
    repo = repo_of(args)
    record = find_linked(repo, args.worktree)
    result = call("worktree.cleanup", CleanupInput.from_python(
        repo_root=repo, cwd=record["path"], branch=record.get("branch"),
        delete_branch=args.delete_branch, base=args.base, run_teardown=not args.no_teardown,
        discard_untracked=args.discard_untracked, discard_modified=args.discard_modified))
    return record, result


def add_archive_arguments(parser: argparse.ArgumentParser, surface: Surface) -> None:
    """``archive PATH|SLUG`` and its flags."""
    parser.add_argument("worktree", metavar=WORKTREE_METAVAR,
                        help="the linked worktree's directory or slug")
    parser.add_argument("--repo", default=None,
                        help="repository of a SLUG (default: the current directory's)")
    parser.add_argument("--base", default=DEFAULT_REF)
    parser.add_argument("--keep-branch", action="store_true")
    parser.add_argument("--salvage-root", help="default ~/.agentproto/worktree-salvage")


def archive(args: argparse.Namespace, call: ToolCaller, runtime: WorktreeRuntime
            ) -> tuple[Target, dict[str, Any]]:
    """``archive``: stop the worktree's services, salvage its changes, run teardown and
    remove it with both discard flags (upstream implementation unknown; tavernlab's
    choice), deleting the branch unless ``--keep-branch``. Returns the worktree and
    ``{removed, salvageDir, manifest}``."""
    target = linked_target(args.worktree, args.repo)
    runtime.services.dispose(target.path)
    salvaged = salvage_worktree(target.repo, target.path,
                                slug=target.branch or os.path.basename(target.path),
                                salvage_root=args.salvage_root)
    call("worktree.cleanup", CleanupInput.from_python(
        repo_root=target.repo, cwd=target.path, branch=target.branch or None,
        delete_branch=bool(target.branch) and not args.keep_branch, base=args.base,
        discard_untracked=True, discard_modified=True))
    return target, {"removed": True, "salvageDir": salvaged["dir"],
                    "manifest": salvaged["manifest"]}


# -- new --------------------------------------------------------------------------------------


def add_new_arguments(parser: argparse.ArgumentParser, surface: Surface | None = None) -> None:
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
    return repo_of(args)


def write_file_spec(raw: str) -> dict[str, Any]:
    """A ``--write-file`` JSON ``{path, content, mode?}``; a bad value is a
    :class:`~tavernlab.errors.UsageError` with upstream's ``worktree-agent`` wording."""
    try:
        return write_file(raw)
    except CliUsageError as exc:
        raise UsageError(exc.reason) from None


def new_request(args: argparse.Namespace, *, repo: str, base: str) -> ProvisionInput:
    """The provision request of ``new`` (validated: ``input_invalid`` before anything
    runs); a bad ``--write-file`` is a usage error first."""
    write_files = (None if args.write_file is None
                   else [write_file_spec(raw) for raw in args.write_file])
    return ProvisionInput.from_python(
        repo_root=repo, slug=args.slug, base=base, branch=args.branch,
        dir=args.dir and os.path.abspath(args.dir), deps_cmd=args.deps_cmd,
        copy_globs=args.copy_glob, clone_globs=args.clone_glob, link_paths=args.link,
        write_files=write_files, run_setup=False if args.no_setup else None,
        setup_log_path=args.setup_log and os.path.abspath(args.setup_log),
        retry_setup_on_failure=True if args.retry_setup else None)


# -- gc, proxy, agent -------------------------------------------------------------------------


def add_gc_arguments(parser: argparse.ArgumentParser, surface: Surface | None = None) -> None:
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


def add_proxy_arguments(parser: argparse.ArgumentParser, surface: Surface) -> None:
    """``proxy [--port]``."""
    parser.add_argument("--port", type=int, default=None, help="0 or absent: a free port")


def proxy_info(port: int, runtime: WorktreeRuntime) -> dict[str, Any]:
    """``proxy``: ``{port, url, hosts}`` of the proxy on ``port`` over ``runtime``'s routes."""
    return {"port": port, "url": f"http://127.0.0.1:{port}", "hosts": runtime.table.hosts()}


def _agent_arguments(parser: argparse.ArgumentParser, surface: Surface) -> None:
    add_agent_arguments(parser)


COMMANDS: tuple[Command, ...] = (
    Command("new", "provision a worktree (progress on stderr; Ctrl-C cancels)",
            add_new_arguments,
            notebook_help="provision a worktree (live progress; interrupt cancels)"),
    Command("ls", "list the repository's worktrees", add_ls_arguments),
    Command("gate", "run a check command in a worktree", add_gate_arguments),
    Command("agent", "provision, run a coding agent on the agentproto daemon, gate, approve "
            "and clean up", _agent_arguments),
    Command("run", "run a committed script once",
            lambda parser, surface: add_script_arguments(parser, default_help=surface.here)),
    Command("start", "serve services behind the proxy in the foreground until Ctrl-C",
            add_start_arguments,
            notebook_help="start services behind the notebook's proxy"),
    Command("stop", "stop a service started by this process",
            lambda parser, surface: add_script_arguments(parser, default_help=surface.here),
            notebook_help="stop a service started in this kernel"),
    Command("services", "list declared services", add_services_arguments,
            notebook_help="list a worktree's declared services"),
    Command("rm", "stop services, run teardown and remove a worktree", add_rm_arguments),
    Command("archive", "salvage a worktree's changes, then remove it", add_archive_arguments),
    Command("gc", "plan (or --apply) garbage collection of worktrees", add_gc_arguments),
    Command("proxy", "start (or show) the notebook's *.localhost proxy", add_proxy_arguments,
            surfaces=("notebook",)),
)
