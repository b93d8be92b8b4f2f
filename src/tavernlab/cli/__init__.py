"""The ``tavernlab`` command line: every command, one module per subsystem.

One rule for every command (also in the README):

* bad usage (an unknown flag, a missing argument) prints the usage line and exits 2;
* refused input prints one line ``error: <code>: <message>`` on stderr and exits 1;
* an interrupted command (Ctrl-C) prints ``cancelled`` on stderr and exits 130, with no
  traceback;
* otherwise the command's own status (0 on success; ``tavernlab shell`` passes the shell's
  exit status through).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from tavernlab import __version__
from tavernlab.errors import TavernlabError, UsageError

#: Modules that add sub-commands, in the order they appear in ``tavernlab --help``.
COMMAND_MODULES = (
    "tavernlab.cli.demo",
    "tavernlab.cli.workspace",
    "tavernlab.cli.shell",
    "tavernlab.cli.skills",
    "tavernlab.cli.kit",
    "tavernlab.cli.worktree",
    "tavernlab.cli.kernel",
    "tavernlab.cli.replay",
    "tavernlab.cli.view",
)

#: Exit status of an interrupted command (128 + SIGINT, as shells report it).
EXIT_CANCELLED = 130


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subsystem's sub-commands registered."""
    parser = argparse.ArgumentParser(
        prog="tavernlab",
        description="Agent workspaces, sandboxed JavaScript skill scripts and git worktrees.",
    )
    parser.add_argument("--version", action="version", version=f"tavernlab {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status (see the module's rule)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.func(args)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"tavernlab: error: {exc.message}", file=sys.stderr)
        return 2
    except TavernlabError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    return status


__all__ = ["COMMAND_MODULES", "EXIT_CANCELLED", "build_parser", "main"]
