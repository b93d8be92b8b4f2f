"""``tavernlab run export``, ``tavernlab replay`` and ``tavernlab notebook from-run``.

* ``tavernlab run export RUN_ID -o FILE [--lab DIR] [--with-view]`` writes the run as a
  ``.tavernrun`` bundle and prints its path; ``--with-view`` adds the run's self-contained
  page (``view.html``, see ``tavernlab view``) so that anyone can open it without tavernlab.
* ``tavernlab replay FILE [--skill NAME=PATH]... [--lab DIR] [--live MODEL] [--json]``
  replays a bundle in a fresh lab (a temporary one unless ``--lab`` names a new or empty
  directory, which is kept) and exits 0 when every outcome is identical, 1 when not,
  printing the headline and the first divergence with its diff, and a model-driven run's
  model turns (``--json``: the whole report). ``--live MODEL`` continues a model-driven
  run from its divergence with that model as a new run (the lab is kept and named):
  ``MODEL`` is a model name as ``tavernlab.models.from_spec`` reads it (``openai:…``,
  ``scripted:FILE.json`` …).
* ``tavernlab notebook from-run FILE -o NOTEBOOK [--force]`` writes a notebook that replays
  the run step by step with the magics; an existing NOTEBOOK is replaced only with
  ``--force``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from tavernlab.cli._common import add_lab_argument, open_lab
from tavernlab.errors import UsageError
from tavernlab.models import ModelProvider
from tavernlab.replay import OutputExists, read_bundle, replay, write_notebook


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``run export``, ``replay`` and ``notebook from-run``."""
    run = subparsers.add_parser("run", help="act on one run of a lab",
                                description="Act on one run of a lab.")
    run_commands = run.add_subparsers(dest="run_command", metavar="COMMAND", required=True)
    export = run_commands.add_parser("export", help="write a run as a .tavernrun bundle",
                                     description="Write a run as a .tavernrun replay bundle.")
    export.add_argument("run_id", metavar="RUN_ID")
    export.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="the bundle to write (replaced atomically)")
    export.add_argument("--with-view", action="store_true",
                        help="add the run's page (view.html) for anyone without tavernlab")
    add_lab_argument(export)
    export.set_defaults(func=_export)

    play = subparsers.add_parser(
        "replay", help="replay a .tavernrun bundle and compare every outcome",
        description="Replay a .tavernrun bundle in a fresh lab and compare every outcome with "
                    "the recording: exit 0 when identical, 1 when not.")
    play.add_argument("bundle", metavar="FILE")
    play.add_argument("--skill", action="append", default=[], metavar="NAME=PATH",
                      help="replay against another version of a bound skill (repeatable)")
    play.add_argument("--lab", metavar="DIR", default=None,
                      help="replay in this new or empty directory and keep it")
    play.add_argument("--live", metavar="MODEL", default=None,
                      help="continue a model-driven run from its divergence with this model, "
                           "as a new run (e.g. scripted:FILE.json)")
    play.add_argument("--json", action="store_true", help="print the whole report as JSON")
    play.set_defaults(func=_replay)

    notebook = subparsers.add_parser("notebook", help="notebooks made from runs",
                                     description="Notebooks made from runs.")
    notebook_commands = notebook.add_subparsers(dest="notebook_command", metavar="COMMAND",
                                                required=True)
    from_run = notebook_commands.add_parser(
        "from-run", help="write a notebook that replays a bundle's run step by step",
        description="Write a notebook whose cells replay a bundle's run with the magics.")
    from_run.add_argument("bundle", metavar="FILE")
    from_run.add_argument("-o", "--output", required=True, metavar="NOTEBOOK")
    from_run.add_argument("--force", action="store_true",
                          help="replace NOTEBOOK when it exists (else refused)")
    from_run.set_defaults(func=_from_run)


def _export(args: argparse.Namespace) -> int:
    with open_lab(args) as lab:
        path = lab.open_run(args.run_id).export(args.output)
        if args.with_view:
            from tavernlab.view import page_for  # loads the widget modules: only when asked

            bundle = read_bundle(path)
            page = page_for(args.run_id, lab=lab)
            dataclasses.replace(bundle, page=page.encode("utf-8")).write(path)
        print(path)
    return 0


def _skills(pairs: list[str]) -> dict[str, str]:
    skills: dict[str, str] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--skill takes NAME=PATH, not `{pair}`")
        skills[name] = path
    return skills


def live_model(spec: str) -> ModelProvider:
    """The provider the model name ``spec`` names (``tavernlab.models.from_spec``: a bad
    name, an unreadable scripted file or a missing credential is one error line)."""
    from tavernlab.models import from_spec

    return from_spec(spec)


def _replay(args: argparse.Namespace) -> int:
    live = live_model(args.live) if args.live else None
    report = replay(args.bundle, lab=args.lab, skills=_skills(args.skill) or None, live=live)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        print(report)
    return 0 if report.identical else 1


def _from_run(args: argparse.Namespace) -> int:
    target = Path(args.output)
    if (target.exists() or target.is_symlink()) and not args.force:
        raise OutputExists(f"{target} exists; pass --force to replace it")
    print(write_notebook(args.bundle, args.output))
    return 0
