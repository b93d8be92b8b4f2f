"""``tavernlab view``: a run as one self-contained HTML page, no kernel needed.

* ``tavernlab view RUN_ID [--lab DIR] [-o FILE] [--report REPORT.json]`` builds the page of a
  run of a lab; ``tavernlab view BUNDLE.tavernrun`` the page of a bundle's recorded run (the
  page the bundle carries, if it was exported ``--with-view``).
* With ``-o`` the page is written there (replaced atomically) and its path printed; without
  it the page is served on 127.0.0.1 (a free port), its URL printed, until Ctrl-C.
* ``--report`` adds a replay report, as ``tavernlab replay --json`` writes it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tavernlab.cli._common import add_lab_argument, open_lab
from tavernlab.replay import BUNDLE_SUFFIX
from tavernlab.workspace.storage import replace_durably


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``view``."""
    view = subparsers.add_parser(
        "view", help="a run as one self-contained HTML page (no kernel needed)",
        description="Build the page of a run (a run id of a lab, or a .tavernrun bundle): "
                    "its tree, timeline, every call's arguments, result and changed files, "
                    "and a replay report if given. Write it with -o, or serve it on "
                    "127.0.0.1 until Ctrl-C.")
    view.add_argument("source", metavar="RUN_ID|BUNDLE")
    view.add_argument("-o", "--output", metavar="FILE", default=None,
                      help="write the page here instead of serving it")
    view.add_argument("--report", metavar="REPORT", default=None,
                      help="a replay report to add (what `tavernlab replay --json` prints)")
    add_lab_argument(view)
    view.set_defaults(func=_view)


def _view(args: argparse.Namespace) -> int:
    # the page builder loads the notebook's widget modules: only when the command runs
    from tavernlab.view import page_for, read_report, serve_until_interrupted

    report = None if args.report is None else read_report(args.report)
    if args.source.endswith(BUNDLE_SUFFIX) or Path(args.source).is_file():
        page = page_for(args.source, report=report)
    else:
        with open_lab(args) as lab:
            page = page_for(args.source, lab=lab, report=report)
    if args.output is not None:
        target = Path(args.output).resolve()
        target.parent.mkdir(parents=True, exist_ok=True)
        replace_durably(target, page.encode("utf-8"))
        print(target)
        return 0
    serve_until_interrupted(page, lambda url: print(f"serving the page of {args.source} at "
                                                    f"{url} (Ctrl-C stops)", flush=True))
    return 0
