"""``%worktree``: agentproto worktrees from a notebook, mirroring ``tavernlab worktree``.

The repository defaults to the git repository around the notebook (the kernel's working
directory); every tool runs against the current lab's worktree runtime
(``lab.services.worktree``). ``new`` provisions with live progress (:mod:`.progress`) and
makes the new worktree the *current worktree*, the default of ``gate``, ``run``, ``start``,
``stop`` and ``services`` (``--worktree PATH|SLUG`` names another). ``agent`` runs the
``worktree-agent`` workflow (the flags of ``worktree-agent run``, with ``--repo`` defaulting to
the notebook's repository): provision with the same progress, the coding step on the agentproto
daemon, the gate's output streamed, the approval asked in the notebook. Services started here
live in the kernel until ``stop``, ``rm`` or the kernel's exit, behind this notebook's proxy
(``proxy`` starts or shows it; ``start`` starts it on a free port when needed).

A kernel interrupt during ``new`` takes the provision's cancellation path (slot released,
install killed, worktree and branch removed), prints ``cancelled after 1.2 s`` and re-raises
``KeyboardInterrupt``. Every command returns a :class:`~.display.WorktreeResult`.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable
from typing import Any

from IPython.core.error import StdinNotImplementedError, UsageError

from tavernlab.cancel import CancelToken
from tavernlab.notebook.commands import CommandTable, Subcommand
from tavernlab.notebook.completion import completes_with, local_paths, no_values
from tavernlab.notebook.display import WorktreeResult
from tavernlab.notebook.errors import cell_interrupted
from tavernlab.notebook.output import CellOutput, Stopwatch
from tavernlab.notebook.progress import start_progress
from tavernlab.notebook.state import NotebookState, WorktreeRef
from tavernlab.worktree.agent_args import CannotAsk, CliUsageError, build_input, make_approve
from tavernlab.worktree.agent_args import add_arguments as add_agent_arguments
from tavernlab.worktree.commands import (
    Target,
    add_gc_arguments,
    add_new_arguments,
    add_rm_arguments,
    add_script_arguments,
    add_target_arguments,
    find_linked,
    gc_options,
    list_services,
    new_input,
    new_repo,
    remove,
    run_script,
    stop_service,
    target_of,
)
from tavernlab.worktree.context import ProvisionContext, run_with_provision_context
from tavernlab.worktree.daemon import DaemonAgentHost, resolve_mcp_url
from tavernlab.worktree.errors import DaemonUnreachableError, ProvisionCancelledError
from tavernlab.worktree.forge import UnreachableForge, forge_for_repo
from tavernlab.worktree.gc import apply_gc, plan_gc
from tavernlab.worktree.git import DEFAULT_REF, git, git_run, resolves_to_commit
from tavernlab.worktree.listing import WorktreeRecord, list_worktrees, main_repo_root, real
from tavernlab.worktree.tools import call_tool
from tavernlab.worktree.workflow import run_worktree_agent

SUMMARY = """%worktree COMMAND [OPTIONS]: git worktrees for agents (like `tavernlab worktree`).

The repository defaults to the git repository around the notebook; `new` makes the new
worktree the current one, which the other commands use unless given --worktree."""

#: The ``Examples`` block of ``%worktree?``: one magic call a line.
EXAMPLES = """%worktree new fix-login --deps-cmd "npm ci"
%worktree gate npm test
%worktree agent --slug fix-it --task "make the tests pass" --gate "npm test"
%worktree start web
%worktree ls
%worktree rm fix-login --delete-branch
%worktree gc
%worktree gc --apply"""

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


def _base(session: NotebookState, repo: str, given: str | None) -> str:
    """``--base`` when given, else :func:`default_base` (its note printed in the cell)."""
    if given is not None:
        return given
    base, note = default_base(repo)
    if note is not None:
        CellOutput(session.shell).say(note)
    return base


def _repo(args: argparse.Namespace) -> str:
    return main_repo_root(os.path.abspath(args.repo or "."))


def find_worktree_ref(repo: str, ref: str) -> WorktreeRecord:
    """The linked worktree named by ``ref``: its path, or its slug (the folder name, or the
    branch ``wt/<slug>``)."""
    return find_linked(repo, ref)


def _target(session: NotebookState, args: argparse.Namespace) -> Target:
    return target_of(args, current=lambda: Target(*_current(session)))


def _current(session: NotebookState) -> tuple[str, str, str]:
    ref = session.current_worktree()
    return ref.repo, ref.path, ref.branch


def _new(session: NotebookState, args: argparse.Namespace) -> Any:
    repo = new_repo(args)
    result = _provision(session, repo, new_input(args, repo=repo,
                                                 base=_base(session, repo, args.base)))
    return WorktreeResult(f"worktree {args.slug}", result)


def _provision(session: NotebookState, repo: str, tool_input: dict[str, Any]) -> Any:
    """``worktree.provision`` with the progress display (an interrupt cancels it); the new
    worktree becomes the current one."""
    slug = tool_input["slug"]
    token = CancelToken()
    progress = start_progress(slug, token)
    watch = Stopwatch()
    context = ProvisionContext(caller_key="notebook", signal=token, on_progress=progress.update,
                                on_output=progress.output)
    runtime = session.lab.services.worktree
    try:
        result = run_with_provision_context(
            context, lambda: call_tool("worktree.provision", tool_input, runtime))
    except ProvisionCancelledError as exc:
        progress.close("cancelled")
        if exc.interrupted:
            CellOutput(session.shell).note(watch.cancelled_line())
            raise cell_interrupted() from None
        raise
    except BaseException:
        progress.close("failed")
        raise
    progress.close("ok")
    session.worktree = WorktreeRef(repo, result["cwd"], result["branch"])
    return result


def _new_arguments(parser: argparse.ArgumentParser) -> None:
    add_new_arguments(parser)
    actions = {a.dest: a for a in parser._actions}
    completes_with(actions["slug"], no_values)  # a new slug is the user's to choose
    for dest in ("repo", "dir", "setup_log"):
        completes_with(actions[dest], local_paths)


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


def _agent(session: NotebookState, args: argparse.Namespace) -> Any:
    """The ``worktree-agent`` workflow: provision (with the progress display), the coding
    step on the agentproto daemon, the gate (its output streamed), the approval (``--yes``,
    else asked with ``input()`` when the kernel takes input, else refused: the worktree
    stays), then cleanup. The new worktree is the current one until the cleanup removes it."""
    try:
        parsed = build_input(vars(args), default_repo=".")
    except CliUsageError as exc:
        raise UsageError(f"%worktree agent: {exc.reason}") from None
    repo = main_repo_root(parsed.input["repoRoot"])
    inputs = {**parsed.input, "repoRoot": repo,
              "base": _base(session, repo, parsed.input.get("base"))}
    host = _connect_daemon()
    out = CellOutput(session.shell)
    approve = make_approve(parsed.yes, tty=lambda: True, ask=_kernel_ask,
                           unattended="this kernel takes no input")
    with host:
        result = run_worktree_agent(
            inputs, host, approve, session.lab.services.worktree,
            provision=lambda tool_input: _provision(session, repo, tool_input),
            on_gate_line=lambda stream, line: out.js_chunk(stream, line + "\n"))
    out.finish()
    current = session.worktree
    if result["cleanup"].get("removed") and current is not None \
            and real(current.path) == real(result["cwd"]):
        session.worktree = None
    return WorktreeResult(f"worktree-agent {inputs['slug']}", result)


def _agent_arguments(parser: argparse.ArgumentParser) -> None:
    actions = add_agent_arguments(parser)
    completes_with(actions["--repo"], local_paths)
    for flag in ("--slug", "--task", "--gate", "--deps-cmd", "--write-file"):
        completes_with(actions[flag], no_values)


def _ls(session: NotebookState, args: argparse.Namespace) -> Any:
    repo = _repo(args)
    return WorktreeResult(f"worktrees of {repo}", list_worktrees(repo))


def _command_line(words: list[str]) -> str:
    """One word is the command line as written; several are quoted and joined."""
    return words[0] if len(words) == 1 else shlex.join(words)


def _gate(session: NotebookState, args: argparse.Namespace) -> Any:
    if not args.cmd:
        raise UsageError("%worktree gate: give the check command (%worktree gate CMD)")
    target = _target(session, args)
    cmd = _command_line(args.cmd)
    result = call_tool("worktree.run-gate", {"cwd": target.path, "cmd": cmd},
                       session.lab.services.worktree)
    return WorktreeResult(f"gate {cmd!r} in {target.path}", result)


def _run(session: NotebookState, args: argparse.Namespace) -> Any:
    result = run_script(_target(session, args), args, session.lab.services.worktree)
    return WorktreeResult(f"script {args.script}", result)


def _start(session: NotebookState, args: argparse.Namespace) -> Any:
    target = _target(session, args)
    tool_input = {"repoRoot": target.repo, "worktreePath": target.path,
                  "branch": target.branch, "base": args.base, "script": args.script,
                  "proxyPort": session.proxy_port(start=True)}
    result = call_tool("worktree.start-service", tool_input, session.lab.services.worktree)
    return WorktreeResult(f"service {args.script}", result)


def _stop(session: NotebookState, args: argparse.Namespace) -> Any:
    result = stop_service(_target(session, args), args, session.lab.services.worktree)
    return WorktreeResult(f"stop {args.script}", result)


def _services(session: NotebookState, args: argparse.Namespace) -> Any:
    result = list_services(_target(session, args), args, session.proxy_port(start=False),
                           session.lab.services.worktree)
    return WorktreeResult("services", result)


def _rm(session: NotebookState, args: argparse.Namespace) -> Any:
    record, result = remove(args, session.lab.services.worktree)
    if session.worktree is not None and real(session.worktree.path) == real(record["path"]):
        session.worktree = None
    return WorktreeResult(f"removed {record['path']}", result)


def _gc(session: NotebookState, args: argparse.Namespace) -> Any:
    """Plan (or apply) GC; a repository whose ``origin`` is not on GitHub gets a forge that
    is never asked, so branches not in the base are held (as the command line does). The
    plan's ``checkedAt`` stamps come from the lab's clock (so a fixed-clock notebook shows
    the same plan every time); the recent-write window stays on the system clock, since it
    is measured against the files' real modification times."""
    repo = _repo(args)
    options = gc_options(args, forge_for_repo(repo) or UnreachableForge(),
                         services=session.lab.services.worktree.services,
                         clock=session.lab.clock)
    plan = plan_gc(repo, options)
    if not args.apply:
        return WorktreeResult(f"gc plan for {repo}", plan)
    return WorktreeResult(f"gc applied in {repo}", apply_gc(repo, plan, options))


def _proxy(session: NotebookState, args: argparse.Namespace) -> Any:
    if args.port is not None or session.proxy is None:
        session.start_proxy(args.port or 0)
    port = session.proxy_port(start=False)
    return WorktreeResult("proxy", {"port": port, "url": f"http://127.0.0.1:{port}",
                                    "hosts": session.lab.services.worktree.table.hosts()})


_CURRENT = "the current worktree"


def _gate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--worktree", metavar="PATH|SLUG", help="default: the current worktree")
    parser.add_argument("--repo", help="repository of a --worktree SLUG")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD",
                        help="the check command (one quoted string, or words)")


COMMANDS = (
    Subcommand("new", "provision a worktree (live progress; interrupt cancels)", _new,
               _new_arguments),
    Subcommand("ls", "list the repository's worktrees", _ls,
               lambda p: p.add_argument("--repo")),
    Subcommand("gate", "run a check command in a worktree", _gate, _gate_arguments),
    Subcommand("agent", "provision, run a coding agent on the agentproto daemon, gate, "
               "approve and clean up", _agent, _agent_arguments),
    Subcommand("run", "run a committed script once", _run,
               lambda p: add_script_arguments(p, default_help=_CURRENT)),
    Subcommand("start", "start a service behind the notebook's proxy", _start,
               lambda p: add_script_arguments(p, default_help=_CURRENT)),
    Subcommand("stop", "stop a service started in this kernel", _stop,
               lambda p: add_script_arguments(p, default_help=_CURRENT)),
    Subcommand("services", "list a worktree's declared services", _services,
               lambda p: add_target_arguments(p, default_help=_CURRENT)),
    Subcommand("rm", "stop services, run teardown and remove a worktree", _rm,
               add_rm_arguments),
    Subcommand("gc", "plan (or --apply) garbage collection of worktrees", _gc, add_gc_arguments),
    Subcommand("proxy", "start (or show) the notebook's *.localhost proxy", _proxy,
               lambda p: p.add_argument("--port", type=int, default=None,
                                        help="0 or absent: a free port")),
)


def worktree_table(on_change: Callable[[], None] | None = None) -> CommandTable:
    """The ``%worktree`` command table (``on_change``: called when commands change)."""
    table = CommandTable("%worktree", on_change)
    for command in COMMANDS:
        table.register(command)
    return table
