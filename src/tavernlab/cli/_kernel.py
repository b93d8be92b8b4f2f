"""``tavernlab kernel install``: make the tavernlab kernel available to a Jupyter elsewhere.

``pip install tavernlab`` already installs the kernel spec as Jupyter data of its environment
(``share/jupyter/kernels/tavernlab``), so a JupyterLab in the same environment lists it. This
command copies that spec to the user's Jupyter data (``--user``, the default: a tavernlab
choice, since the system-wide default of ``jupyter kernelspec install`` needs root), to
``sys.prefix`` (``--sys-prefix``) or to a prefix (``--prefix P``), pinning the kernel to this
Python (``argv[0]`` becomes ``sys.executable``) so a Jupyter installed anywhere starts a kernel
that has tavernlab.
"""

from __future__ import annotations

import argparse
import json
import site
import sys
from pathlib import Path

from tavernlab.errors import InvalidData

KERNEL_NAME = "tavernlab"
#: Where the spec ships, relative to a Jupyter data prefix.
DATA_DIR = Path("share", "jupyter", "kernels", KERNEL_NAME)


def shipped_spec() -> Path:
    """The kernel spec tavernlab ships: the copy pip installed in this environment (or the
    user's site), else the repository's ``kernel-spec/tavernlab`` when run from a checkout."""
    checkout = Path(__file__).resolve().parents[3] / "kernel-spec" / KERNEL_NAME
    for candidate in (Path(sys.prefix) / DATA_DIR, Path(site.getuserbase()) / DATA_DIR,
                      checkout):
        if (candidate / "kernel.json").is_file():
            return candidate
    raise InvalidData("the tavernlab kernel spec is not installed: reinstall tavernlab "
                      "(pip install tavernlab) so that share/jupyter/kernels/tavernlab exists")


def install_kernel(prefix: str | None = None) -> Path:
    """Copy the shipped spec to the user's Jupyter data (or to ``prefix``) with ``argv[0]``
    set to this Python; returns the installed directory. (``jupyter_client`` is imported here,
    not with the module, so every other command starts 0.1 s sooner.)"""
    from jupyter_client.kernelspec import KernelSpecManager

    manager = KernelSpecManager()
    target = Path(manager.install_kernel_spec(str(shipped_spec()), KERNEL_NAME,
                                              user=prefix is None, prefix=prefix))
    spec_file = target / "kernel.json"
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    spec["argv"][0] = sys.executable
    spec_file.write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
    return target


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tavernlab kernel install [--user | --sys-prefix | --prefix P]``."""
    parser = subparsers.add_parser("kernel", help="the tavernlab Jupyter kernel",
                                   description="Install the tavernlab kernel (an ipykernel "
                                   "that loads the tavernlab extension) for Jupyter.")
    commands = parser.add_subparsers(dest="kernel_command", metavar="COMMAND", required=True)
    install = commands.add_parser("install", help="install the kernel spec",
                                  description="Install the tavernlab kernel spec, pinned to "
                                  "this Python (default: --user).")
    where = install.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true",
                       help="the user's Jupyter data directory (the default)")
    where.add_argument("--sys-prefix", action="store_true",
                       help=f"this environment ({sys.prefix})")
    where.add_argument("--prefix", metavar="P", help="the Jupyter data of prefix P")
    install.set_defaults(func=_install)


def _install(args: argparse.Namespace) -> int:
    prefix = sys.prefix if args.sys_prefix else args.prefix
    target = install_kernel(prefix)
    print(f"installed kernel {KERNEL_NAME} in {target} (python: {sys.executable})")
    return 0
