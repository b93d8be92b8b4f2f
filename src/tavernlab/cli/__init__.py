"""The ``tavernlab`` command line: every command, one module per subsystem.

One rule for every command (also in the README):

* bad usage (an unknown flag, a missing argument) prints the usage line and exits 2;
* refused input prints one line ``error: <code>: <message>`` on stderr and exits 1 (control
  characters in the message, such as a newline in a recorded value, are escaped);
* an interrupted command (Ctrl-C) prints ``cancelled`` on stderr and exits 130, with no
  traceback;
* otherwise the command's own status (0 on success; ``tavernlab shell`` passes the shell's
  exit status through).

The commands are registered lazily: :data:`COMMANDS` names each one with the module that
defines it and its one-line help, so ``tavernlab --help`` lists every command without importing
any command module, and running a command imports only the module that defines it (its
``register(subparsers)`` adds its commands, with their arguments and handlers).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NamedTuple

from tavernlab import __version__
from tavernlab.errors import TavernlabError, UsageError, one_line


class Command(NamedTuple):
    """One ``tavernlab`` command: the module whose ``register`` adds it, and its help line."""

    module: str
    help: str


#: Every command, in the order ``tavernlab --help`` lists them: its module and help line.
#: ``tests/test_cli_start.py`` checks that each module registers exactly its commands of this
#: table, with the same help lines, in this order.
COMMANDS: dict[str, Command] = {
    "demo": Command("tavernlab.cli._demo",
                    "play a scripted tour of every subsystem in a fresh lab"),
    "runs": Command("tavernlab.cli._workspace", "list the runs of a lab, newest first"),
    "events": Command("tavernlab.cli._workspace", "print a run's events and journal"),
    "tool": Command("tavernlab.cli._workspace", "execute one model tool call on a run"),
    "retention": Command("tavernlab.cli._workspace", "plan or apply run retention"),
    "sessions": Command("tavernlab.cli._workspace", "list or create agent sessions"),
    "shell": Command("tavernlab.cli._shell", "run a workspace.shell call on a run"),
    "skill": Command("tavernlab.cli._skills",
                     "validate, install, list, pack, lint and migrate skill packages"),
    "kit": Command("tavernlab.cli._kit",
                   "fetch and inspect the script kit (@tauritavern/kit/*)"),
    "worktree": Command("tavernlab.cli._worktree", "git worktrees for agents"),
    "kernel": Command("tavernlab.cli._kernel", "the tavernlab Jupyter kernel"),
    "run": Command("tavernlab.cli._replay", "act on one run of a lab"),
    "replay": Command("tavernlab.cli._replay",
                      "replay a .tavernrun bundle and compare every outcome"),
    "notebook": Command("tavernlab.cli._replay", "notebooks made from runs"),
    "view": Command("tavernlab.cli._view",
                    "a run as one self-contained HTML page (no kernel needed)"),
    "agent": Command("tavernlab.cli._agent", "let a model drive a run through the workspace tools"),
    "mcp": Command("tavernlab.cli._mcp", "serve a run's tools to MCP clients"),
}

#: Modules that add sub-commands, in the order their commands appear in ``tavernlab --help``.
COMMAND_MODULES = tuple(dict.fromkeys(command.module for command in COMMANDS.values()))

#: Exit status of an interrupted command (128 + SIGINT, as shells report it).
EXIT_CANCELLED = 130


def command_named(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs: its first word that is not an option (``tavernlab``'s own
    options, ``-h`` and ``--version``, take no value), or None."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(command: str | None = None, *,
                 load_all: bool = False) -> argparse.ArgumentParser:
    """The argument parser: ``command``'s module registers its commands in full (arguments
    and handlers); every other command is only listed, with its help line, and its module is
    not imported. With ``load_all``, every module registers its commands."""
    parser = argparse.ArgumentParser(
        prog="tavernlab",
        description="Agent workspaces, sandboxed JavaScript skill scripts and git worktrees.",
    )
    parser.add_argument("--version", action="version", version=f"tavernlab {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    loaded = COMMANDS[command].module if command in COMMANDS else None
    registered: set[str] = set()
    for name, entry in COMMANDS.items():
        if load_all or entry.module == loaded:
            if entry.module not in registered:
                registered.add(entry.module)
                importlib.import_module(entry.module).register(subparsers)
        else:
            subparsers.add_parser(name, help=entry.help)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status (see the module's rule)."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(command_named(words))
    args = parser.parse_args(words)
    try:
        status: int = args.func(args)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"tavernlab: error: {exc.message}", file=sys.stderr)
        return 2
    except TavernlabError as exc:
        print(f"error: {exc.code}: {one_line(exc.message)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    return status


__all__ = ["COMMANDS", "COMMAND_MODULES", "EXIT_CANCELLED", "Command", "build_parser",
           "command_named", "main"]
