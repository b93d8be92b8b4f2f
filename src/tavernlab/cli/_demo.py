"""The ``tavernlab demo`` sub-command."""

from __future__ import annotations

import argparse
from pathlib import Path

from tavernlab.demo import run_demo


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tavernlab demo [DIR]``."""
    parser = subparsers.add_parser(
        "demo",
        help="play a scripted tour of every subsystem in a fresh lab",
        description="Create a lab in DIR and play a scripted agent run, skill scripts, a shell "
        "and worktrees through it, printing every step. Needs no configuration.",
    )
    parser.add_argument("dir", nargs="?", default="tavernlab-demo", type=Path,
                        help="where to create the lab (default: ./tavernlab-demo)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    run_demo(args.dir)
    return 0
