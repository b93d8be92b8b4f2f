"""``tavernlab skill validate|install|list|pack``: skill packages from the command line
(the authoring commands ``new``, ``test``, ``lint`` and ``migrate`` are in
:mod:`tavernlab.cli._skill_author`).

``install`` and ``list`` work on a lab directory given with ``--lab`` (default
``$TAVERNLAB_LAB``, else ``./.tavernlab``, the lab of a notebook in the folder; ``--demo``:
the lab ``tavernlab demo`` creates; the shared rule of
:func:`tavernlab.cli._common.lab_path`), whose skills live under
``<lab>/_tauritavern/skills/``. ``install`` creates the lab's skill storage when it is
missing; ``list`` refuses a directory that holds no lab (``no lab at <dir> ...``, exit 1)
and creates nothing. ``validate`` and ``pack`` need no lab.

``validate`` and ``install`` print one line per package found in the source, in the order of
the package folders: ``ok <name>: ...`` / ``installed: <name> in <scope> ...`` for a valid
package (its warnings follow on indented ``  warning: ...`` lines) and ``invalid <folder>:
<message>`` (``invalid: <folder>: <message>`` for ``install``) for one that failed validation
(``.`` is the source's top). The valid packages are
installed all the same; the command exits 1 when any package was invalid (tavernlab's way of
surfacing the install report). A bad source as a whole (missing, unreadable, no ``SKILL.md``
anywhere, a refused archive) or a conflict without ``--replace``/``--skip`` prints one line,
``error: <code>: <message>``, and exits 1 (the shared handler in :mod:`tavernlab.cli`);
nothing is installed or written then.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tavernlab.cli._common import add_lab_argument, existing_lab_path, lab_path, print_json
from tavernlab.cli._skill_author import invalid_line, register_authoring
from tavernlab.host import make_lab_dir
from tavernlab.skills import (
    ConflictChoice,
    InvalidSkillPackage,
    SkillInstallResult,
    SkillOutputExists,
    SkillPackage,
    SkillRepository,
    SkillStorageError,
    load_directory,
    load_source,
    write_archive,
)
from tavernlab.workspace.storage import create_new


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tavernlab skill`` and its sub-commands."""
    parser = subparsers.add_parser(
        "skill", help="validate, install, list, pack, lint and migrate skill packages",
        description="Skill packages: a folder with SKILL.md (YAML front matter with name and "
        "description), optional scripts/, references/, assets/ and agents/tauritavern.json.")
    commands = parser.add_subparsers(dest="skill_command", metavar="COMMAND", required=True)

    validate = commands.add_parser(
        "validate", help="check a skill folder or archive without installing it",
        description="Check every skill found in PATH (a folder, .zip or .ttskill) and print "
        "its files, installed hash and warnings. Writes nothing.")
    validate.add_argument("path", type=Path, metavar="PATH")
    validate.add_argument("--json", action="store_true", help="print JSON")
    validate.set_defaults(func=_validate)

    install = commands.add_parser(
        "install", help="install the skills of a folder or archive into a lab",
        description="Install every skill found in PATH into the lab. The same content is "
        "'already installed'; a changed skill of an installed name needs --replace or --skip.")
    install.add_argument("path", type=Path, metavar="PATH")
    add_lab_argument(install)
    install.add_argument("--scope", default="global",
                         help="global (default), preset:<id>, profile:<id> or character:<id>")
    choice = install.add_mutually_exclusive_group()
    choice.add_argument("--replace", dest="on_conflict", action="store_const", const="replace",
                        help="replace an installed skill whose content differs")
    choice.add_argument("--skip", dest="on_conflict", action="store_const", const="skip",
                        help="keep an installed skill whose content differs")
    install.add_argument("--json", action="store_true", help="print JSON")
    install.set_defaults(func=_install)

    listing = commands.add_parser("list", help="list the skills installed in a lab",
                                  description="List installed skills by scope and name.")
    add_lab_argument(listing)
    listing.add_argument("--scope", default=None, help="only this scope")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=_list)

    pack = commands.add_parser(
        "pack", help="pack a skill folder into a .zip",
        description="Validate the skill(s) in DIR and write a deterministic ZIP that "
        "'tavernlab skill install' accepts. An existing output file is never overwritten.")
    pack.add_argument("dir", type=Path, metavar="DIR")
    pack.add_argument("-o", "--output", type=Path, default=None,
                      help="archive to write (default: ./<name>.zip)")
    pack.set_defaults(func=_pack)
    register_authoring(commands)


def _describe(package: SkillPackage) -> str:
    where = f" (in {package.origin}/)" if package.origin else ""
    return (f"{package.name}{where}: {len(package.files)} files, {package.total_bytes} bytes, "
            f"installed hash {package.installed_hash}")


def _print_in_origin_order(lines: list[tuple[str, list[str]]]) -> None:
    """Print ``(origin, lines)`` groups sorted by origin."""
    for _, group in sorted(lines, key=lambda item: item[0]):
        for line in group:
            print(line)


def _validate(args: argparse.Namespace) -> int:
    scan = load_source(args.path)
    if args.json:
        print_json({"packages": [p.summary() for p in scan.packages],
                     "invalid": [i.to_json() for i in scan.invalid]})
        return 0 if scan.ok else 1
    groups = [(p.origin, [f"ok {_describe(p)}"] + [f"  warning: {w}" for w in p.warnings])
              for p in scan.packages]
    groups += [(i.origin, [invalid_line(i, "invalid")]) for i in scan.invalid]
    _print_in_origin_order(groups)
    return 0 if scan.ok else 1


_ACTION_WORDS = {"installed": "installed", "replaced": "replaced",
                 "already_installed": "already installed", "skipped": "skipped (kept installed)"}


def _result_lines(result: SkillInstallResult) -> list[str]:
    digest = result.skill.installed_hash if result.skill else ""
    return ([f"{_ACTION_WORDS[result.action]}: {result.name} in {result.scope.key} "
             f"(installed hash {digest})"] + [f"  warning: {w}" for w in result.warnings])


def _install(args: argparse.Namespace) -> int:
    on_conflict: ConflictChoice | None = args.on_conflict
    folder = lab_path(args)
    make_lab_dir(folder.resolve())
    report = SkillRepository(folder).install(args.path, scope=args.scope,
                                             on_conflict=on_conflict)
    if args.json:
        print_json(report.to_json())
        return 0 if report.ok else 1
    groups = [(r.origin, _result_lines(r)) for r in report.results]
    groups += [(i.origin, [invalid_line(i, "invalid:")]) for i in report.invalid]
    _print_in_origin_order(groups)
    return 0 if report.ok else 1


def _list(args: argparse.Namespace) -> int:
    entries = SkillRepository(existing_lab_path(args)).list(args.scope)
    if args.json:
        print_json([e.model_dump(by_alias=True, exclude_none=True, mode="json")
                     for e in entries])
        return 0
    if not entries:
        print(f"no skills installed in {lab_path(args)}")
        return 0
    rows = [("SCOPE", "NAME", "VERSION", "FILES", "DESCRIPTION")] + [
        (e.scope.key, e.name, e.version or "-", str(e.file_count), e.description)
        for e in entries]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
              + "  " + row[4])
    return 0


def _pack(args: argparse.Namespace) -> int:
    folder: Path = args.dir
    if not folder.is_dir() or folder.is_symlink():
        raise InvalidSkillPackage(f"pack needs a skill directory: {folder}")
    packages = load_directory(folder).require_valid()
    files = {(f"{p.origin}/{path}" if p.origin else path): data
             for p in packages for path, data in p.contents.items()}
    name = packages[0].name if len(packages) == 1 else folder.resolve().name
    output: Path = args.output if args.output is not None else Path(f"{name}.zip")
    data = write_archive(files)
    try:
        create_new(output, data)
    except FileExistsError:
        raise SkillOutputExists(f"Output file already exists: {output}") from None
    except OSError as exc:
        raise SkillStorageError(f"Failed to write {output}: {exc.strerror or exc}") from None
    count = sum(len(p.files) for p in packages)
    print(f"packed {', '.join(p.name for p in packages)} ({count} files, {len(data)} bytes) "
          f"into {output}", file=sys.stdout)
    return 0
