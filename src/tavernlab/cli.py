"""The ``tavernlab`` command line.

Each subsystem contributes its own sub-commands through a ``register(subparsers)`` function
in its own module (listed in :data:`COMMAND_MODULES`); this module only assembles them, so the
command line stays a thin surface over the core.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tavernlab.errors import InvalidData, TavernlabError

if TYPE_CHECKING:
    from tavernlab.lab import Lab

#: Modules that add sub-commands, in the order they appear in ``tavernlab --help``.
COMMAND_MODULES = (
    "tavernlab.demo.cli",
    "tavernlab.workspace.cli",
    "tavernlab.shell.cli",
    "tavernlab.skills.cli",
    "tavernlab.worktree.cli",
)


#: Environment variable naming the lab the sub-commands use when ``--lab`` is not given.
LAB_ENV = "TAVERNLAB_LAB"
#: The lab ``tavernlab demo`` creates, so ``tavernlab runs`` works right after the demo.
DEFAULT_LAB = "tavernlab-demo/lab"


def add_lab_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--lab DIR`` (default: ``$TAVERNLAB_LAB``, else ``./tavernlab-demo/lab``)."""
    parser.add_argument("--lab", default=None, metavar="DIR",
                        help=f"the lab directory (default: ${LAB_ENV}, else ./{DEFAULT_LAB})")


def lab_path(args: argparse.Namespace) -> Path:
    """The lab directory chosen by ``--lab``, the environment or the default."""
    return Path(args.lab or os.environ.get(LAB_ENV) or DEFAULT_LAB)


def open_lab(args: argparse.Namespace) -> Lab:
    """The existing lab chosen by :func:`lab_path`; a missing one is an error (commands that
    read a lab must not create an empty one by accident)."""
    from tavernlab.lab import Lab

    path = lab_path(args)
    if not (path / "_tauritavern").is_dir():
        raise InvalidData(f"no lab at {path} (run `tavernlab demo` or pass --lab DIR)")
    return Lab(path)


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with every subsystem's sub-commands registered."""
    parser = argparse.ArgumentParser(
        prog="tavernlab",
        description="Agent workspaces, sandboxed JavaScript skill scripts and git worktrees.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status.

    Sub-command handlers are stored as ``func`` on the parsed namespace and return an exit
    status. A :class:`~tavernlab.errors.TavernlabError` is printed as ``error: <code>: <message>``
    on stderr with status 1, never as a traceback.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.func(args)
    except TavernlabError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
