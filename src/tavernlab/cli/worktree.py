"""``tavernlab worktree …``: the worktree tools on the command line.

``new`` provisions (with a live progress display on stderr; Ctrl-C cancels and cleans up),
``ls`` lists, ``gate``/``run`` run one-shot commands, ``start``/``stop``/``services`` manage
services, ``rm`` cleans up, ``archive`` salvages then removes, ``gc`` plans or applies garbage
collection. Every command takes ``--json``. Bad input prints one ``error: <code>: <message>``
line (the error's own code, for example ``worktree.not_removable``) and exits non-zero.

Ctrl-C follows the rule of :mod:`tavernlab.cli`: ``new`` takes the cancellation path (the
slot is released, the running install's process group killed, the half-made worktree and
branch removed) and then exits 130 with ``cancelled``, without a traceback.

``new``, ``run``, ``services``, ``stop``, ``rm`` and ``gc`` take the flags and the
``--worktree PATH|SLUG`` rule that ``%worktree`` takes too (:mod:`tavernlab.worktree.commands`
defines them once); this module prints what their handlers return.

Services live in the process that started them (one supervisor per process, as upstream's
CLI has its own): ``start`` therefore serves in the foreground behind the proxy until
Ctrl-C (or ``--seconds``) and stops them, process groups and all, when it ends; ``stop`` in a
fresh process finds no supervisor.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from tavernlab.cli.common import print_json
from tavernlab.clock import SYSTEM_CLOCK
from tavernlab.errors import TavernlabError, ToolError
from tavernlab.views import describe_event
from tavernlab.worktree.commands import (
    add_gc_arguments,
    add_new_arguments,
    add_rm_arguments,
    add_script_arguments,
    add_target_arguments,
    gc_options,
    list_services,
    new_input,
    new_repo,
    remove,
    run_script,
    stop_service,
    target_of,
    write_file_spec,
)
from tavernlab.worktree.context import ProgressEvent, ProvisionContext, run_with_provision_context
from tavernlab.worktree.errors import ProvisionCancelledError
from tavernlab.worktree.forge import Forge, UnreachableForge, forge_for_repo
from tavernlab.worktree.gc import apply_gc, plan_gc
from tavernlab.worktree.git import DEFAULT_REF
from tavernlab.worktree.listing import find_worktree, list_worktrees, main_repo_root, real
from tavernlab.worktree.runtime import WorktreeRuntime, default_runtime
from tavernlab.worktree.salvage import salvage_worktree
from tavernlab.worktree.tools import call_tool

Handler = Callable[[argparse.Namespace], int]


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if args.json:
        print_json(data)
    else:
        print(text)


def _guard(handler: Handler) -> Handler:
    """Turn stray OS and value errors into one-line tavernlab errors (never a traceback)."""

    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except TavernlabError:
            raise
        except (OSError, ValueError) as exc:
            raise ToolError("execution_failed", str(exc)) from exc

    return run


def _repo(args: argparse.Namespace) -> str:
    return main_repo_root(os.path.abspath(args.repo or "."))


def _record_for(repo_root: str, path: str) -> dict[str, Any]:
    record = find_worktree(repo_root, path)
    if record is None or real(record["path"]) == real(repo_root):  # the main checkout
        raise ToolError("not_found", f"not a linked worktree of {repo_root}: {path}")
    return dict(record)


def _new_input(args: argparse.Namespace) -> dict[str, Any]:
    return new_input(args, repo=new_repo(args), base=args.base or DEFAULT_REF)


def _new(args: argparse.Namespace) -> int:
    """Provision in this (the main) thread, so Ctrl-C reaches the provision itself and takes
    its cancellation path; an interrupted provision then becomes the CLI's ``cancelled``."""
    tool_input = _new_input(args)
    clock = SYSTEM_CLOCK
    started = clock.monotonic()

    def progress(event: ProgressEvent) -> None:
        print(f"[{clock.monotonic() - started:6.2f}s] {describe_event(event)}",
              file=sys.stderr, flush=True)

    try:
        result = run_with_provision_context(
            ProvisionContext(caller_key="cli", on_progress=progress),
            lambda: call_tool("worktree.provision", tool_input))
    except ProvisionCancelledError as exc:
        if exc.interrupted:
            raise KeyboardInterrupt from exc
        raise
    _emit(args, result, f"{result['cwd']}  ({result['branch']})")
    return 0


def _ls(args: argparse.Namespace) -> int:
    records = list_worktrees(_repo(args))
    lines = []
    for record in records:
        label = record.get("branch") or "(detached)"
        extra = " prunable" if record.get("prunable") is not None else ""
        lines.append(f"{record['path']}  {record['head'][:7]}  {label}{extra}")
    _emit(args, records, "\n".join(lines))
    return 0


def _gate(args: argparse.Namespace) -> int:
    result = call_tool("worktree.run-gate", {"cwd": os.path.abspath(args.cwd), "cmd": args.cmd})
    _print_run(args, result)
    return 0 if result["passed"] else 1


def _print_run(args: argparse.Namespace, result: dict[str, Any]) -> None:
    if args.json:
        print_json(result)
        return
    sys.stdout.write(result["stdout"])
    sys.stderr.write(result["stderr"])
    print(f"{'passed' if result['passed'] else 'failed'} (exit {result['exitCode']})",
          file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    result = run_script(target_of(args), args)
    _print_run(args, result)
    return 0 if result["passed"] else 1


def _start(args: argparse.Namespace) -> int:
    target = target_of(args)
    runtime = WorktreeRuntime()
    proxy = runtime.start_proxy(port=args.proxy_port)
    try:
        where = {"repoRoot": target.repo, "worktreePath": target.path,
                 "branch": target.branch, "base": args.base}
        statuses = [call_tool("worktree.start-service", {**where, "script": name,
                                                         "proxyPort": proxy.port}, runtime)
                    for name in args.scripts]
        _emit(args, {"proxyPort": proxy.port, "services": statuses}, "\n".join(
            f"{s['name']}: {s['status']} pid {s['pid']} port {s['port']} → {s['url']}"
            for s in statuses))
        sys.stdout.flush()
        clock = SYSTEM_CLOCK
        deadline = None if args.seconds is None else clock.monotonic() + args.seconds
        try:
            while deadline is None or clock.monotonic() < deadline:
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
    finally:
        runtime.close()
    return 0


def _stop(args: argparse.Namespace) -> int:
    result = stop_service(target_of(args), args)
    _emit(args, result, "stopped" if result["stopped"] else
          "not stopped (no running service in this process)")
    return 0


def _services(args: argparse.Namespace) -> int:
    result = list_services(target_of(args), args, args.proxy_port)
    _emit(args, result, "\n".join(
        f"{s['name']}: {s['status']} port {s['port']} {s['url']}" for s in result["services"])
        or "no services declared")
    return 0


def _rm(args: argparse.Namespace) -> int:
    record, result = remove(args)
    _emit(args, result, f"removed {record['path']}")
    return 0


def _archive(args: argparse.Namespace) -> int:
    """Stop services, salvage, run teardown and remove with both discard flags (upstream
    implementation unknown; tavernlab's choice), deleting the branch unless --keep-branch."""
    path = os.path.abspath(args.path)
    repo = main_repo_root(path)
    record = _record_for(repo, path)
    default_runtime().services.dispose(record["path"])
    branch = record.get("branch")
    salvaged = salvage_worktree(repo, record["path"],
                                slug=branch or os.path.basename(record["path"]),
                                salvage_root=args.salvage_root)
    call_tool("worktree.cleanup", {
        "repoRoot": repo, "cwd": record["path"], "branch": branch,
        "deleteBranch": bool(branch) and not args.keep_branch, "base": args.base,
        "discardUntracked": True, "discardModified": True})
    result = {"removed": True, "salvageDir": salvaged["dir"], "manifest": salvaged["manifest"]}
    _emit(args, result, f"archived {record['path']} to {salvaged['dir']}")
    return 0


def _gc_forge(repo: str) -> Forge:
    """GitHub when ``origin`` is a GitHub remote; otherwise a forge that can never be asked,
    said on stderr, so branches not yet in the base read ``unknown`` (offline) and are
    held rather than guessed about (tavernlab choice)."""
    forge = forge_for_repo(repo)
    if forge is not None:
        return forge
    print("worktree gc: origin is not a GitHub remote, so pull requests cannot be checked; "
          "worktrees whose branch is not in the base are held", file=sys.stderr)
    return UnreachableForge()


def _gc(args: argparse.Namespace) -> int:
    repo = _repo(args)
    options = gc_options(args, _gc_forge(repo))
    plan = plan_gc(repo, options)
    if not args.apply:
        lines = []
        for entry in plan:
            reason = (entry.get("reclaimReason") or entry.get("holdReason")
                      or entry.get("salvageReason") or "")
            lines.append(f"{entry['class']:8} {entry['path']}  {reason}")
        _emit(args, {"plan": plan}, "\n".join(lines) or "no linked worktrees")
        return 0
    records = apply_gc(repo, plan, options)
    _emit(args, {"plan": plan, "results": records}, "\n".join(
        f"{record['result']:22} {record['path']}" for record in records) or "no linked worktrees")
    return 0


Command = Callable[[str, Handler, str], argparse.ArgumentParser]


def _register_new(command: Command) -> None:
    add_new_arguments(command("new", _new,
                              "provision a worktree (progress on stderr; Ctrl-C cancels)"))
    ls = command("ls", _ls, "list the repository's worktrees")
    ls.add_argument("--repo", default=".")
    gate = command("gate", _gate, "run a check command in a worktree")
    gate.add_argument("cwd")
    gate.add_argument("cmd")


def _register_services(command: Command) -> None:
    here = "the current directory"
    run = command("run", _run, "run a committed script once")
    add_script_arguments(run, default_help=here)
    services = command("services", _services, "list declared services")
    add_target_arguments(services, default_help=here)
    services.add_argument("--proxy-port", type=int, default=None)
    start = command("start", _start,
                    "serve services behind the proxy in the foreground until Ctrl-C")
    start.add_argument("scripts", nargs="+", metavar="script")
    add_target_arguments(start, default_help=here)
    start.add_argument("--proxy-port", type=int, default=18780, help="0 picks a free port")
    start.add_argument("--seconds", type=float, help="stop after this many seconds")
    stop = command("stop", _stop, "stop a service started by this process")
    add_script_arguments(stop, default_help=here)


def _register_removal(command: Command) -> None:
    add_rm_arguments(command("rm", _rm, "stop services, run teardown and remove a worktree"))
    archive = command("archive", _archive, "salvage a worktree's changes, then remove it")
    archive.add_argument("path")
    archive.add_argument("--base", default=DEFAULT_REF)
    archive.add_argument("--keep-branch", action="store_true")
    archive.add_argument("--salvage-root", help="default ~/.agentproto/worktree-salvage")
    add_gc_arguments(command("gc", _gc, "plan (or --apply) garbage collection of worktrees"))


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tavernlab worktree new|ls|gate|run|start|stop|services|rm|archive|gc``."""
    parser = subparsers.add_parser("worktree", help="git worktrees for agents",
                                   description="Provision, gate, serve and clean up git "
                                   "worktrees (agentproto's worktree package).")
    commands = parser.add_subparsers(dest="worktree_command", metavar="COMMAND", required=True)

    def command(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--json", action="store_true", help="print JSON")
        sub.set_defaults(func=_guard(handler))
        return sub

    _register_new(command)
    _register_services(command)
    _register_removal(command)


__all__ = ["register", "write_file_spec"]
