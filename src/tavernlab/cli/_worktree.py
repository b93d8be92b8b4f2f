"""``tavernlab worktree …``: the worktree tools on the command line.

``new`` provisions (with a live progress display on stderr; Ctrl-C cancels and cleans up),
``ls`` lists, ``gate``/``run`` run one-shot commands, ``start``/``stop``/``services`` manage
services, ``rm`` cleans up, ``archive`` salvages then removes, ``gc`` plans or applies garbage
collection, ``agent`` runs the ``worktree-agent`` workflow (as ``worktree-agent run`` does,
``--repo`` defaulting to the current directory's repository). Every command takes
``--json``. Bad input prints one ``error: <code>: <message>`` line (the error's own code,
for example ``worktree.not_removable``) and exits non-zero.

Every command and its flags come from the table of :mod:`tavernlab.worktree._commands`, which
``%worktree`` is built from too; this module prints what their handlers return.

Inside a run: given ``--run RUN_ID`` (a run of ``--lab DIR``, default ``$TAVERNLAB_LAB``,
else ``./.tavernlab``; ``--lab`` alone is a usage error), the commands that call a
worktree tool (``new``, ``gate``, ``agent``, ``run``, ``start``, ``stop``, ``services``,
``rm``, ``archive``) make each call through that run of that lab, so it is in the run's events,
journal and timeline; the lab must offer the worktree tools (a lab opened here with them
does). A failed call then reports the call's code (``error: cancelled: …``).

Ctrl-C follows the rule of :mod:`tavernlab.cli`: ``new`` takes the cancellation path (the
slot is released, the running install's process group killed, the half-made worktree and
branch removed) and then exits 130 with ``cancelled``, without a traceback.

Services live in the process that started them (one supervisor per process, as upstream's
CLI has its own): ``start`` therefore serves in the foreground behind the proxy until
Ctrl-C (or ``--seconds``) and stops them, process groups and all, when it ends; ``stop`` in a
fresh process finds no supervisor.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from tavernlab.cli._common import existing_lab_path, print_json
from tavernlab.clock import SYSTEM_CLOCK
from tavernlab.errors import TavernlabError, ToolError, UsageError
from tavernlab.views import describe_event
from tavernlab.worktree import (
    CLI,
    DEFAULT_REF,
    CliUsageError,
    Command,
    Forge,
    ProgressEvent,
    ProvisionCancelledError,
    ProvisionContext,
    ToolCaller,
    UnreachableForge,
    WorktreeRuntime,
    apply_gc,
    archive,
    build_input,
    commands_for,
    default_runtime,
    forge_for_repo,
    gate,
    gc_options,
    list_repo,
    list_target_services,
    main_repo_root,
    new_repo,
    new_request,
    plan_gc,
    remove,
    repo_of,
    run_caller,
    run_target_script,
    run_with_provision_context,
    start_services,
    stop_target_service,
    target_of,
    tool_caller,
    write_file_spec,
)

Handler = Callable[[argparse.Namespace], int]

#: The commands whose tool calls go through ``--run`` when it is given.
IN_RUN = ("new", "gate", "agent", "run", "start", "stop", "services", "rm", "archive")


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


@contextlib.contextmanager
def _tools(args: argparse.Namespace, *, own_runtime: bool = False
           ) -> Iterator[tuple[ToolCaller, WorktreeRuntime]]:
    """How this command calls the tools, and the runtime they run on: through ``--run`` of
    ``--lab`` when given (the lab opened with the worktree tools, on the lab's runtime, and
    closed afterwards), else directly, on the process-wide runtime or, with ``own_runtime``,
    on one of this command's own that is closed (its services stopped) at the end."""
    run_id = getattr(args, "run", None)
    if run_id is None:
        if getattr(args, "lab", None) is not None:
            raise UsageError("--lab names the lab of --run: give --run RUN_ID too")
        runtime = WorktreeRuntime() if own_runtime else default_runtime()
        try:
            yield tool_caller(runtime), runtime
        finally:
            if own_runtime:
                runtime.close()
        return
    from tavernlab.host import DEFAULT_TOOLS, Lab, worktree_tools

    with Lab(existing_lab_path(args), tools=[*DEFAULT_TOOLS, worktree_tools]) as lab:
        yield run_caller(lab.open_run(run_id)), lab.services.worktree


def _new(args: argparse.Namespace) -> int:
    """Provision in this (the main) thread, so Ctrl-C reaches the provision itself and takes
    its cancellation path; an interrupted provision then becomes the CLI's ``cancelled``."""
    request = new_request(args, repo=new_repo(args), base=args.base or DEFAULT_REF)
    clock = SYSTEM_CLOCK
    started = clock.monotonic()

    def progress(event: ProgressEvent) -> None:
        print(f"[{clock.monotonic() - started:6.2f}s] {describe_event(event)}",
              file=sys.stderr, flush=True)

    with _tools(args) as (call, _):
        try:
            result = run_with_provision_context(
                ProvisionContext(caller_key="cli", on_progress=progress),
                lambda: call("worktree.provision", request))
        except ProvisionCancelledError as exc:
            if exc.interrupted:
                raise KeyboardInterrupt from exc
            raise
    _emit(args, result, f"{result['cwd']}  ({result['branch']})")
    return 0


def _ls(args: argparse.Namespace) -> int:
    _, records = list_repo(args)
    lines = []
    for record in records:
        label = record.get("branch") or "(detached)"
        extra = " prunable" if record.get("prunable") is not None else ""
        lines.append(f"{record['path']}  {record['head'][:7]}  {label}{extra}")
    _emit(args, records, "\n".join(lines))
    return 0


def _gate(args: argparse.Namespace) -> int:
    with _tools(args) as (call, _):
        _, _, result = gate(args, call)
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
    with _tools(args) as (call, _):
        result = run_target_script(target_of(args), args, call)
    _print_run(args, result)
    return 0 if result["passed"] else 1


def _start(args: argparse.Namespace) -> int:
    """Serve in the foreground: the proxy and the services until Ctrl-C or ``--seconds``,
    then stop the services (through the run too, with ``--run``) and the proxy."""
    target = target_of(args)
    with _tools(args, own_runtime=True) as (call, runtime):
        proxy = runtime.start_proxy(port=args.proxy_port)
        try:
            statuses = start_services(target, args, proxy.port, call)
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
            for name in args.scripts:
                with contextlib.suppress(TavernlabError):
                    stop_target_service(target, argparse.Namespace(script=name), call)
            proxy.close()
    return 0


def _stop(args: argparse.Namespace) -> int:
    with _tools(args) as (call, _):
        result = stop_target_service(target_of(args), args, call)
    _emit(args, result, "stopped" if result["stopped"] else
          "not stopped (no running service in this process)")
    return 0


def _services(args: argparse.Namespace) -> int:
    with _tools(args) as (call, _):
        result = list_target_services(target_of(args), args, args.proxy_port, call)
    _emit(args, result, "\n".join(
        f"{s['name']}: {s['status']} port {s['port']} {s['url']}" for s in result["services"])
        or "no services declared")
    return 0


def _rm(args: argparse.Namespace) -> int:
    with _tools(args) as (call, _):
        record, result = remove(args, call)
    _emit(args, result, f"removed {record['path']}")
    return 0


def _archive(args: argparse.Namespace) -> int:
    with _tools(args) as (call, runtime):
        target, result = archive(args, call, runtime)
    _emit(args, result, f"archived {target.path} to {result['salvageDir']}")
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
    repo = repo_of(args)
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


def _agent(args: argparse.Namespace) -> int:
    """The ``worktree-agent`` workflow, as ``worktree-agent run`` runs it (approval on the
    terminal), with ``--repo`` defaulting to the current directory's repository."""
    from tavernlab.cli._worktree_agent import make_approve
    from tavernlab.worktree import DaemonAgentHost, run_worktree_agent

    try:
        parsed = build_input(vars(args), default_repo=".")
    except CliUsageError as exc:
        raise UsageError(exc.reason) from None
    inputs = {**parsed.input, "repoRoot": main_repo_root(parsed.input["repoRoot"])}
    with _tools(args) as (call, runtime), DaemonAgentHost.connect() as host:
        result = run_worktree_agent(inputs, host, make_approve(parsed.yes), runtime, call=call)
    cleanup = result["cleanup"]
    _emit(args, result, f"{result['cwd']}  ({result['branch']}): gate "
          f"{'passed' if result['gate']['passed'] else 'failed'}, "
          + ("removed" if cleanup.get("removed") else f"kept ({cleanup.get('reason')})"))
    return 0


#: Each command of the table's command-line surface, by name.
HANDLERS: dict[str, Handler] = {
    "new": _new, "ls": _ls, "gate": _gate, "agent": _agent, "run": _run, "start": _start,
    "stop": _stop, "services": _services, "rm": _rm, "archive": _archive, "gc": _gc}


def _declare(command: Command, sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="print JSON")
    command.declare(sub, CLI)
    if command.name in IN_RUN:
        sub.add_argument("--run", metavar="RUN_ID", default=None,
                         help="make the tool calls through this run of --lab (recorded there)")
        sub.add_argument("--lab", metavar="DIR", default=None,
                         help="the lab of --run (default: $TAVERNLAB_LAB, else ./.tavernlab)")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tavernlab worktree`` and every command of the worktree command table."""
    parser = subparsers.add_parser("worktree", help="git worktrees for agents",
                                   description="Provision, gate, serve and clean up git "
                                   "worktrees (agentproto's worktree package).")
    commands = parser.add_subparsers(dest="worktree_command", metavar="COMMAND", required=True)
    for command in commands_for(CLI):
        help_text = command.help_for(CLI)
        sub = commands.add_parser(command.name, help=help_text, description=help_text)
        _declare(command, sub)
        sub.set_defaults(func=_guard(HANDLERS[command.name]))


__all__ = ["HANDLERS", "IN_RUN", "register", "write_file_spec"]
