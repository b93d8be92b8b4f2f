"""``%worktree``: agentproto worktrees from a notebook, mirroring ``tavernlab worktree``.

Every command and its flags come from the table of :mod:`tavernlab.worktree._commands`, which
``tavernlab worktree`` is built from too (the command line's own flags are ``--json`` and
``--run``/``--lab``, which name what the notebook has as its current run). The repository
defaults to the git repository around the notebook (the kernel's working directory); every
tool runs against the current lab's worktree runtime (``lab.services.worktree``), through
the current run when it offers the worktree tools (:data:`SUMMARY` gives the rule).

``new`` provisions with live progress (:mod:`.progress`) and makes the new worktree the
*current worktree*, the default of ``gate``, ``run``, ``start``, ``stop`` and ``services``
(``--worktree PATH|SLUG`` names another); ``rm`` and ``archive`` forget it when they remove
it. ``agent`` runs the ``worktree-agent`` workflow (the flags of ``worktree-agent run``, with
``--repo`` defaulting to the notebook's repository): provision with the same progress, the
coding step on the agentproto daemon, the gate's output streamed, the approval asked in the
notebook. Services started here live in the kernel until ``stop``, ``rm`` or the kernel's
exit, behind this notebook's proxy (``proxy`` starts or shows it; ``start`` starts it on a
free port when needed, or on ``--proxy-port``).

A kernel interrupt during ``new`` takes the provision's cancellation path (slot released,
install killed, worktree and branch removed), prints ``cancelled after 1.2 s`` and re-raises
``KeyboardInterrupt``. Every command returns a :class:`~.display.WorktreeResult`.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable
from typing import Any

from IPython.core.error import StdinNotImplementedError, UsageError

from tavernlab.cancel import CancelToken
from tavernlab.host import Run
from tavernlab.notebook._commands import CommandTable, Subcommand
from tavernlab.notebook._completion import completes_with, local_paths, no_values
from tavernlab.notebook._display import WorktreeResult
from tavernlab.notebook._errors import cell_interrupted
from tavernlab.notebook._output import CellOutput, Stopwatch
from tavernlab.notebook._progress import start_progress
from tavernlab.notebook._state import NotebookState, WorktreeRef
from tavernlab.worktree import (
    DEFAULT_REF,
    NOTEBOOK,
    CannotAsk,
    CliUsageError,
    Command,
    DaemonAgentHost,
    DaemonUnreachableError,
    ProvisionCancelledError,
    ProvisionContext,
    ProvisionInput,
    Target,
    ToolCaller,
    UnreachableForge,
    apply_gc,
    archive,
    build_input,
    commands_for,
    forge_for_repo,
    gate,
    gc_options,
    git,
    git_run,
    list_repo,
    list_target_services,
    main_repo_root,
    make_approve,
    new_repo,
    new_request,
    plan_gc,
    proxy_info,
    real,
    remove,
    repo_of,
    resolve_mcp_url,
    resolves_to_commit,
    run_caller,
    run_target_script,
    run_with_provision_context,
    run_worktree_agent,
    start_services,
    stop_target_service,
    target_of,
    tool_caller,
)

SUMMARY = """%worktree COMMAND [OPTIONS]: git worktrees for agents (like `tavernlab worktree`).

The repository defaults to the git repository around the notebook; `new` makes the new
worktree the current one, which the other commands use unless given --worktree.

Inside a run: when the notebook has a current run (one `%tavern run new|open`, `%ws_shell`
or another magic already started; `%worktree` never starts one) that is still active and
offers the worktree tools (its lab was made with `tools=[*DEFAULT_TOOLS, worktree_tools]`),
the tool calls of new, gate, run, start, stop, services, rm and archive are that run's own
calls: they are in its events, journal and timeline, in the cell's round; so are agent's
provision, gate and cleanup (its gate's output then shows when the gate ends rather than
streaming). Otherwise they run outside any run. ls, gc and proxy call no tool."""

#: The ``Examples`` block of ``%worktree?``: one magic call a line.
EXAMPLES = """%worktree new fix-login --deps-cmd "npm ci"
%worktree gate npm test
%worktree agent --slug fix-it --task "make the tests pass" --gate "npm test"
%worktree start web
%worktree ls
%worktree rm fix-login --delete-branch
%worktree archive fix-login --keep-branch
%worktree gc
%worktree gc --apply
%tavern lab ./lab-with-worktree-tools
%worktree new in-run --no-setup  # with a current run offering the tools: one of its calls"""

BASE = DEFAULT_REF


def default_base(repo: str) -> tuple[str, str | None]:
    """The ref a worktree is cut from when ``--base`` is not given, and what to say about it:
    ``origin/main`` when the repository has it; else (a repository without that remote
    branch, say one made with ``git init``) the branch checked out in ``repo``, or its
    commit when detached, with a note saying so."""
    if resolves_to_commit(repo, BASE):
        return BASE, None
    branch = git_run(repo, ["symbolic-ref", "--quiet", "--short", "HEAD"])
    if branch.exit_code == 0 and branch.stdout.strip():
        ref = branch.stdout.strip()
        return ref, f"no {BASE} in {repo}: branching from the current branch {ref}"
    head = git(repo, ["rev-parse", "--short", "HEAD"]).strip()
    return head, f"no {BASE} in {repo}: branching from the current commit {head}"


def _base(state: NotebookState, repo: str, given: str | None) -> str:
    """``--base`` when given, else :func:`default_base` (its note printed in the cell)."""
    if given is not None:
        return given
    base, note = default_base(repo)
    if note is not None:
        CellOutput(state.shell).say(note)
    return base


def tool_run(state: NotebookState) -> Run | None:
    """The run ``%worktree``'s tool calls go through (see :data:`SUMMARY`): the current run
    when there is one, it is active and it offers the worktree tools; else ``None``."""
    if not state.has_run:
        return None
    run = state.run
    if run.record.is_terminal or not any(spec.id == "worktree.provision" for spec in run.tools):
        return None
    return run


def _caller(state: NotebookState) -> ToolCaller:
    """Through :func:`tool_run` (the cell entering its round), else outside any run on the
    lab's worktree runtime."""
    run = tool_run(state)
    if run is None:
        return tool_caller(state.lab.services.worktree)
    state.enter_cell(run)
    return run_caller(run)


def _current(state: NotebookState) -> Callable[[], Target]:
    def current() -> Target:
        ref = state.current_worktree()
        return Target(ref.repo, ref.path, ref.branch)

    return current


def _target(state: NotebookState, args: argparse.Namespace) -> Target:
    return target_of(args, current=_current(state))


def _forget(state: NotebookState, path: str) -> None:
    """The current worktree is no more once ``path`` is removed."""
    if state.worktree is not None and real(state.worktree.path) == real(path):
        state.worktree = None


def _new(state: NotebookState, args: argparse.Namespace) -> Any:
    repo = new_repo(args)
    result = _provision(state, repo, args.slug, lambda: new_request(
        args, repo=repo, base=_base(state, repo, args.base)))
    return WorktreeResult(f"worktree {args.slug}", result)


def _provision(state: NotebookState, repo: str, slug: str,
               request: Callable[[], ProvisionInput]) -> Any:
    """``worktree.provision`` of ``request()`` with the progress display (bad input closes it
    ``failed``; an interrupt cancels the provision); the new worktree becomes the current
    one."""
    token = CancelToken()
    progress = start_progress(slug, token)
    watch = Stopwatch()
    context = ProvisionContext(caller_key="notebook", signal=token, on_progress=progress.update,
                                on_output=progress.output)
    try:
        built = request()
        call = _caller(state)
        result = run_with_provision_context(context, lambda: call("worktree.provision", built))
    except (ProvisionCancelledError, KeyboardInterrupt) as exc:
        progress.close("cancelled")
        if isinstance(exc, KeyboardInterrupt) or exc.interrupted:
            CellOutput(state.shell).note(watch.cancelled_line())
            raise cell_interrupted() from None
        raise
    except BaseException:
        progress.close("failed")
        raise
    progress.close("ok")
    state.worktree = WorktreeRef(repo, result["cwd"], result["branch"])
    return result


def _kernel_ask(prompt: str) -> str:
    """Ask with ``input()``; a kernel whose front end takes no input cannot ask."""
    try:
        return input(prompt)
    except (StdinNotImplementedError, EOFError, OSError):
        raise CannotAsk from None


def _connect_daemon() -> DaemonAgentHost:
    """The daemon host, or a one-line :class:`DaemonUnreachableError` naming the URL and
    ``AGENTPROTO_MCP_URL``. It is raised outside the connection's ``except`` so that no
    exception group from the MCP client rides along as its context (IPython cannot render
    such a chain as one line)."""
    try:
        return DaemonAgentHost.connect()
    except DaemonUnreachableError:
        pass
    raise DaemonUnreachableError(
        f"%worktree agent: could not reach the agentproto daemon's MCP endpoint at "
        f"{resolve_mcp_url()} (start it with `agentproto daemon start`, or set "
        "AGENTPROTO_MCP_URL to a running one); nothing was provisioned")


def _agent(state: NotebookState, args: argparse.Namespace) -> Any:
    """The ``worktree-agent`` workflow: provision (with the progress display), the coding
    step on the agentproto daemon, the gate (its output streamed; inside a run it is the
    run's call, shown when it ends), the approval (``--yes``,
    else asked with ``input()`` when the kernel takes input, else refused: the worktree
    stays), then cleanup. The new worktree is the current one until the cleanup removes it."""
    try:
        parsed = build_input(vars(args), default_repo=".")
    except CliUsageError as exc:
        raise UsageError(f"%worktree agent: {exc.reason}") from None
    repo = main_repo_root(parsed.input["repoRoot"])
    inputs = {**parsed.input, "repoRoot": repo,
              "base": _base(state, repo, parsed.input.get("base"))}
    host = _connect_daemon()
    out = CellOutput(state.shell)
    approve = make_approve(parsed.yes, tty=lambda: True, ask=_kernel_ask,
                           unattended="this kernel takes no input")
    in_run = tool_run(state) is not None
    with host:
        result = run_worktree_agent(
            inputs, host, approve, state.lab.services.worktree,
            provision=lambda request: _provision(state, repo, request.slug,
                                                 lambda: request),
            on_gate_line=None if in_run else
            lambda stream, line: out.js_chunk(stream, line + "\n"),
            call=_caller(state))
    out.finish()
    if result["cleanup"].get("removed"):
        _forget(state, result["cwd"])
    return WorktreeResult(f"worktree-agent {inputs['slug']}", result)


def _ls(state: NotebookState, args: argparse.Namespace) -> Any:
    repo, records = list_repo(args)
    return WorktreeResult(f"worktrees of {repo}", records)


def _gate(state: NotebookState, args: argparse.Namespace) -> Any:
    path, cmd, result = gate(args, _caller(state), current=_current(state))
    return WorktreeResult(f"gate {cmd!r} in {path}", result)


def _run(state: NotebookState, args: argparse.Namespace) -> Any:
    result = run_target_script(_target(state, args), args, _caller(state))
    return WorktreeResult(f"script {args.script}", result)


def _start(state: NotebookState, args: argparse.Namespace) -> Any:
    """Start the services behind the notebook's proxy (started on ``--proxy-port``, or a
    free port, when it is not running or runs on another port). One script shows its
    status, several ``{proxyPort, services}``. With ``--seconds`` the cell serves that long
    and then stops them."""
    target = _target(state, args)
    if args.proxy_port is not None and state.proxy_port(start=False) != args.proxy_port:
        state.start_proxy(args.proxy_port)
    port = state.proxy_port(start=True)
    assert port is not None
    statuses = start_services(target, args, port, _caller(state))
    if args.seconds is not None:
        _serve_for(state, target, args, args.seconds)
    if len(statuses) == 1:
        return WorktreeResult(f"service {args.scripts[0]}", statuses[0])
    return WorktreeResult(f"services {', '.join(args.scripts)}",
                          {"proxyPort": port, "services": statuses})


def _serve_for(state: NotebookState, target: Target, args: argparse.Namespace,
               seconds: float) -> None:
    """Wait ``seconds`` (an interrupt ends the wait early), then stop the started services."""
    with contextlib.suppress(KeyboardInterrupt):
        time.sleep(seconds)
    for name in args.scripts:
        stop_target_service(target, argparse.Namespace(script=name), _caller(state))


def _stop(state: NotebookState, args: argparse.Namespace) -> Any:
    result = stop_target_service(_target(state, args), args, _caller(state))
    return WorktreeResult(f"stop {args.script}", result)


def _services(state: NotebookState, args: argparse.Namespace) -> Any:
    port = args.proxy_port if args.proxy_port is not None else state.proxy_port(start=False)
    result = list_target_services(_target(state, args), args, port, _caller(state))
    return WorktreeResult("services", result)


def _rm(state: NotebookState, args: argparse.Namespace) -> Any:
    record, result = remove(args, _caller(state))
    _forget(state, record["path"])
    return WorktreeResult(f"removed {record['path']}", result)


def _archive(state: NotebookState, args: argparse.Namespace) -> Any:
    target, result = archive(args, _caller(state), state.lab.services.worktree)
    _forget(state, target.path)
    return WorktreeResult(f"archived {target.path}", result)


def _gc(state: NotebookState, args: argparse.Namespace) -> Any:
    """Plan (or apply) GC; a repository whose ``origin`` is not on GitHub gets a forge that
    is never asked, so branches not in the base are held (as the command line does). The
    plan's ``checkedAt`` stamps come from the lab's clock (so a fixed-clock notebook shows
    the same plan every time); the recent-write window stays on the system clock, since it
    is measured against the files' real modification times."""
    repo = repo_of(args)
    options = gc_options(args, forge_for_repo(repo) or UnreachableForge(),
                         services=state.lab.services.worktree.services,
                         clock=state.lab.clock)
    plan = plan_gc(repo, options)
    if not args.apply:
        return WorktreeResult(f"gc plan for {repo}", plan)
    return WorktreeResult(f"gc applied in {repo}", apply_gc(repo, plan, options))


def _proxy(state: NotebookState, args: argparse.Namespace) -> Any:
    if args.port is not None or state.proxy is None:
        state.start_proxy(args.port or 0)
    port = state.proxy_port(start=False)
    assert port is not None
    return WorktreeResult("proxy", proxy_info(port, state.lab.services.worktree))


def _new_completion(parser: argparse.ArgumentParser) -> None:
    actions = {a.dest: a for a in parser._actions}
    completes_with(actions["slug"], no_values)  # a new slug is the user's to choose
    for dest in ("repo", "dir", "setup_log"):
        completes_with(actions[dest], local_paths)


def _agent_completion(parser: argparse.ArgumentParser) -> None:
    actions = {flag: a for a in parser._actions for flag in a.option_strings}
    completes_with(actions["--repo"], local_paths)
    for flag in ("--slug", "--task", "--gate", "--deps-cmd", "--write-file"):
        completes_with(actions[flag], no_values)


#: Each command of the table's notebook surface, by name.
HANDLERS: dict[str, Callable[[NotebookState, argparse.Namespace], Any]] = {
    "new": _new, "ls": _ls, "gate": _gate, "agent": _agent, "run": _run, "start": _start,
    "stop": _stop, "services": _services, "rm": _rm, "archive": _archive, "gc": _gc,
    "proxy": _proxy}

#: Completion beyond each argument's metavar, by command.
_COMPLETION: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "new": _new_completion, "agent": _agent_completion}


def _arguments(command: Command) -> Callable[[argparse.ArgumentParser], None]:
    def declare(parser: argparse.ArgumentParser) -> None:
        command.declare(parser, NOTEBOOK)
        extra = _COMPLETION.get(command.name)
        if extra is not None:
            extra(parser)

    return declare


COMMANDS = tuple(Subcommand(command.name, command.help_for(NOTEBOOK), HANDLERS[command.name],
                            _arguments(command)) for command in commands_for(NOTEBOOK))


def worktree_table(on_change: Callable[[], None] | None = None) -> CommandTable:
    """The ``%worktree`` command table (``on_change``: called when commands change)."""
    table = CommandTable("%worktree", on_change)
    for command in COMMANDS:
        table.register(command)
    return table
