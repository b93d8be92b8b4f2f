"""``%tavern``: the current lab and run, skills, the workspace tree and the events.

Every command returns an object that displays richly (a lab with its recent runs, a run's
card, a tool result, a tree, an event table, skill tables). Other issues add commands to the
same table (``%tavern timeline``) with
:func:`tavernlab.notebook.register_tavern_command`.
"""

from __future__ import annotations

import argparse
import weakref
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError

from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.errors import UsageError as TavernUsageError
from tavernlab.events import EVENT_TYPES, JOURNAL_TYPES
from tavernlab.notebook._commands import CommandTable, Subcommand, natural, positive
from tavernlab.notebook._completion import completes_with, local_paths
from tavernlab.notebook._display import EventList, SkillList, notice, status_view
from tavernlab.notebook._state import DEFAULT_CHAT, NotebookState

SUMMARY = """%tavern COMMAND [OPTIONS]: the notebook's current lab and run.

The lab defaults to ./.tavernlab beside the notebook and is created on first use; another
lab is created only with --create. The run starts on first use in the notebook's own chat
(notebook:<file>; the shared chat `notebook` when the kernel does not know the notebook's
path). `%tavern lab PATH --create --fixed-clock --ids SEED` opens a lab whose times and ids
are the same on every run of the notebook. Each command returns a rich object."""

#: The ``Examples`` block of ``%tavern?``: one magic call a line.
EXAMPLES = """%tavern lab ./demo-lab --fixed-clock --ids 7
%tavern run new --chat notes --skills greeter
%tavern tree output
%tavern events --last 5
%tavern skill dev skills/greeter
%tavern run finish"""


def _lab(state: NotebookState, args: argparse.Namespace) -> Any:
    """Show the current lab, or switch to the one at PATH; ``--fixed-clock`` and ``--ids
    SEED`` open it with a :class:`FixedClock` / :class:`SequentialIds` (what a notebook whose
    outputs must be the same on every run, such as the demo notebooks, starts with). A lab
    opened again with the same seed continues after the ids it holds (never reusing one)."""
    if not args.path:
        if args.fixed_clock or args.ids is not None:
            raise UsageError("%tavern lab: --fixed-clock and --ids need a PATH (they apply "
                             "when a lab is opened)")
        return state.lab
    try:
        return state.use_lab(args.path, clock=FixedClock() if args.fixed_clock else None,
                               ids=None if args.ids is None else SequentialIds(args.ids),
                               create=args.create)
    except TavernUsageError as exc:
        raise UsageError(f"%tavern lab: {exc.message}") from None


def _lab_arguments(parser: argparse.ArgumentParser) -> None:
    completes_with(parser.add_argument("path", nargs="?", metavar="PATH",
                                       help="switch to the lab at PATH"), local_paths)
    parser.add_argument("--create", action="store_true",
                        help="create a new lab at PATH when there is none (else refused)")
    parser.add_argument("--fixed-clock", action="store_true",
                        help="open it with a fixed clock (2026-01-01, 1 ms per reading)")
    parser.add_argument("--ids", metavar="SEED",
                        help="open it with sequential ids derived from SEED")


def _run_new(state: NotebookState, args: argparse.Namespace) -> Any:
    skills = [s.strip() for s in args.skills.split(",") if s.strip()] if args.skills else None
    if args.chat is not None and args.shared_chat:
        raise UsageError("%tavern run new: give --chat ID or --shared-chat, not both")
    chat = DEFAULT_CHAT if args.shared_chat else args.chat
    return state.new_run(chat_id=chat, skills=skills, legacy_run_script=args.legacy,
                           presentation="background" if args.background else "foreground")


def _run_new_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chat", default=None, metavar="ID",
                        help="the chat the run works for (default: the notebook's own, "
                             f"else the shared chat {DEFAULT_CHAT!r})")
    parser.add_argument("--shared-chat", action="store_true",
                        help=f"work in the chat {DEFAULT_CHAT!r} that notebooks share")
    parser.add_argument("--skills", metavar="A,B", help="bind only these skills")
    parser.add_argument("--legacy", action="store_true",
                        help="offer the legacy skill.run_script tool")
    parser.add_argument("--background", action="store_true",
                        help="a background run (no commit needed before finishing)")


def _run_open(state: NotebookState, args: argparse.Namespace) -> Any:
    return state.open_run(args.run_id)


def _run_finish(state: NotebookState, args: argparse.Namespace) -> Any:
    run = state.run
    state.enter_cell(run)
    return run.finish(args.reason)


def _run_cancel(state: NotebookState, args: argparse.Namespace) -> Any:
    if not state.has_run:
        return notice("no current run")
    count = state.run.cancel()
    return notice(f"cancelled {count} running call{'s' if count != 1 else ''} or job"
                  f"{'s' if count != 1 else ''} of {state.run.id}")


def _status(state: NotebookState, args: argparse.Namespace) -> Any:
    settings = state.settings
    return status_view(str(state.lab_path), state.run if state.has_run else None,
                       [("chat_per_notebook", settings.chat_per_notebook),
                        ("round_per_cell", settings.round_per_cell),
                        ("raise_on_error", settings.raise_on_error),
                        ("stream", settings.stream)],
                       chat=f"{state.default_chat} ({state.chat_reason})")


def _skill_install(state: NotebookState, args: argparse.Namespace) -> Any:
    return state.lab.skills.install(args.dir, scope=args.scope,
                                      on_conflict="replace" if args.replace else None)


def _skill_install_arguments(parser: argparse.ArgumentParser) -> None:
    completes_with(parser.add_argument(
        "dir", metavar="DIR", help="a skill folder, a folder of skills or a zip"), local_paths)
    parser.add_argument("--replace", action="store_true",
                        help="replace an installed skill whose content changed")
    parser.add_argument("--scope", default="global",
                        help="global (default), preset:ID, profile:ID or character:ID")


def _skill_list(state: NotebookState, args: argparse.Namespace) -> Any:
    return SkillList(state.lab.skills.list(args.scope))


def _skill_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scope", default=None, help="only this scope")


def _skill_dev(state: NotebookState, args: argparse.Namespace) -> Any:
    """Bind DIR as a development skill (reinstalled whenever it changes, once per round), or
    list the bound ones."""
    development = state.lab.skills.development
    if args.dir is None:
        return [f"{s.name}: {s.path} (hash {s.installed_hash[:12]}"
                f"{', invalid: ' + s.error if s.error else ''})" for s in development.skills]
    skill = state.lab.skills.develop(args.dir, scope=args.scope)
    return f"{skill.name}: {skill.path} (hash {skill.installed_hash[:12]})"


def _skill_dev_arguments(parser: argparse.ArgumentParser) -> None:
    completes_with(parser.add_argument(
        "dir", nargs="?", default=None, metavar="DIR",
        help="the skill's working directory (none: list the bound ones)"), local_paths)
    parser.add_argument("--scope", default="global",
                        help="global (default), preset:ID, profile:ID or character:ID")


def _tree(state: NotebookState, args: argparse.Namespace) -> Any:
    return state.run.tree(args.path, depth=args.depth, include_hidden=args.hidden)


def _tree_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", default="", metavar="PATH",
                        help="the folder to show (default: the whole workspace)")
    parser.add_argument("--depth", type=natural, default=None, metavar="N",
                        help="levels below PATH (default: all)")
    parser.add_argument("--hidden", action="store_true", help="also the run's own files")


def _events(state: NotebookState, args: argparse.Namespace) -> Any:
    known = EVENT_TYPES | JOURNAL_TYPES
    unknown = [t for t in args.type or () if t not in known]
    if unknown:
        raise UsageError(f"%tavern events: unknown event type {unknown[0]!r}; the types are: "
                         f"{', '.join(sorted(known))}")
    records = state.run.events(types=args.type, journal=not args.no_journal)
    if args.last is not None:
        records = records[-args.last:]
    return EventList(records)


def _events_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--last", type=positive, default=None, metavar="N",
                        help="only the last N records (default: all)")
    parser.add_argument("--type", action="append", metavar="TYPE",
                        help="only records of this type (repeatable)")
    parser.add_argument("--no-journal", action="store_true", help="events.jsonl only")


#: The MCP server each notebook (its NotebookState) runs in the background (``%tavern mcp serve``).
_MCP_SERVERS: weakref.WeakKeyDictionary[NotebookState, Any] = weakref.WeakKeyDictionary()


def _mcp_serve(state: NotebookState, args: argparse.Namespace) -> Any:
    """Serve the current run's model-facing tools over streamable HTTP on 127.0.0.1, in the
    background: an MCP client's calls show in the live tree and timeline like a model's."""
    running = _MCP_SERVERS.get(state)
    if running is not None and running.running:
        raise UsageError(f"%tavern mcp serve: already serving run {running.agent.run.id} at "
                         f"{running.url} (`%tavern mcp stop` first)")
    if args.http is not None and not 0 < args.http < 65536:
        raise UsageError("%tavern mcp serve: --http takes a port between 1 and 65535")
    from tavernlab.agent import ExternalAgent
    from tavernlab.mcp_server import HttpServer

    run = state.run
    agent = ExternalAgent.attach(state.lab, run)
    try:
        server = HttpServer(agent, args.http or 0).start()
    except BaseException:
        agent.close()
        raise
    _MCP_SERVERS[state] = server
    return notice(f"serving run {run.id} at {server.url} (MCP client config: "
                  f'{{"mcpServers": {{"tavernlab": {{"url": "{server.url}"}}}}}})')


def _mcp_stop(state: NotebookState, args: argparse.Namespace) -> Any:
    """Stop the background MCP server; the run stays as it is."""
    server = _MCP_SERVERS.pop(state, None)
    if server is None:
        return notice("no MCP server is running")
    server.stop()
    return notice(f"stopped serving run {server.agent.run.id}")


BUILTIN_COMMANDS = (
    Subcommand("lab", "show the current lab, or switch to the lab at PATH", _lab,
               _lab_arguments),
    Subcommand("run new", "start a run in the current lab and make it current", _run_new,
               _run_new_arguments),
    Subcommand("run open", "reopen a run of the current lab by id and make it current",
               _run_open, lambda p: p.add_argument("run_id", metavar="RUN_ID")),
    Subcommand("run finish", "finish the current run (workspace.finish)", _run_finish,
               lambda p: p.add_argument("--reason", default=None)),
    Subcommand("run cancel", "cancel the current run's running calls and jobs", _run_cancel),
    Subcommand("status", "the current lab, run and settings", _status),
    Subcommand("skill install", "install the skills found in DIR into the current lab",
               _skill_install, _skill_install_arguments),
    Subcommand("skill list", "the skills installed in the current lab", _skill_list,
               _skill_list_arguments),
    Subcommand("skill dev", "develop the skill in DIR: reinstalled whenever it changes, "
               "checked once per round", _skill_dev, _skill_dev_arguments),
    Subcommand("tree", "the current run's workspace as the model sees it", _tree,
               _tree_arguments),
    Subcommand("events", "the current run's events and journal records", _events,
               _events_arguments),
    Subcommand("mcp serve", "serve the current run's tools to MCP clients over HTTP on "
               "127.0.0.1, in the background", _mcp_serve,
               lambda p: p.add_argument("--http", type=int, default=None, metavar="PORT",
                                        help="the port (default: a free one)")),
    Subcommand("mcp stop", "stop serving the current run over MCP", _mcp_stop),
)


def tavern_table(on_change: Callable[[], None] | None = None) -> CommandTable:
    """A ``%tavern`` command table holding the built-in commands (``on_change``: called
    when commands change)."""
    table = CommandTable("%tavern", on_change)
    for command in BUILTIN_COMMANDS:
        table.register(command)
    return table
