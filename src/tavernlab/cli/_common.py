"""What every ``tavernlab`` sub-command shares: the lab it works on.

Commands that read a lab take ``--lab DIR``; without it they use ``$TAVERNLAB_LAB``, else
``./.tavernlab``, the lab a notebook in this folder uses, so the command line and the notebook
agree. ``--demo`` asks for the lab ``tavernlab demo`` made (``./tavernlab-demo/lab``). A
command that reads a lab never creates an empty one by accident.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from tavernlab.errors import InvalidData, UsageError
from tavernlab.host import Lab

#: Environment variable naming the lab the sub-commands use when ``--lab`` is not given.
LAB_ENV = "TAVERNLAB_LAB"
#: The lab a notebook in the working directory uses (and the commands, by default).
DEFAULT_LAB = ".tavernlab"
#: The lab ``tavernlab demo`` creates (``--demo``).
DEMO_LAB = "tavernlab-demo/lab"


def add_lab_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--lab DIR`` (default: ``$TAVERNLAB_LAB``, else ``./.tavernlab``) and ``--demo``
    (the demo's lab)."""
    parser.add_argument("--lab", default=None, metavar="DIR",
                        help=f"the lab directory (default: ${LAB_ENV}, else ./{DEFAULT_LAB}, "
                             "the lab of a notebook in this folder)")
    parser.add_argument("--demo", action="store_true",
                        help=f"use the lab `tavernlab demo` made (./{DEMO_LAB})")


def lab_path(args: argparse.Namespace) -> Path:
    """The lab directory chosen by ``--lab`` or ``--demo``, the environment or the default."""
    if getattr(args, "demo", False):
        if args.lab is not None:
            raise UsageError("give --lab DIR or --demo, not both")
        return Path(DEMO_LAB)
    return Path(args.lab or os.environ.get(LAB_ENV) or DEFAULT_LAB)


def existing_lab_path(args: argparse.Namespace) -> Path:
    """The directory of :func:`lab_path` when a lab is there; a missing one is an error
    (``no lab at <dir> ...``), and nothing is created."""
    path = lab_path(args)
    if not (path / "_tauritavern").is_dir():
        hint = ("run `tavernlab demo` first" if getattr(args, "demo", False) else
                "pass --lab DIR, or --demo for the lab `tavernlab demo` made")
        raise InvalidData(f"no lab at {path} ({hint})")
    return path


def open_lab(args: argparse.Namespace) -> Lab:
    """The existing lab chosen by :func:`lab_path`; a missing one is an error."""
    return Lab(existing_lab_path(args))


def print_json(value: Any) -> None:
    """Print ``value`` as the commands' ``--json`` output: indented, non-ASCII kept."""
    print(json.dumps(value, indent=2, ensure_ascii=False))
