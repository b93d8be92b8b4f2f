"""``tavernlab skill new|test|lint|migrate``: the skill author's commands.

``new`` scaffolds a valid package (:mod:`tavernlab.skills._scaffold`) whose tests pass as
written; ``test`` runs a skill's ``tests/`` with pytest and the :mod:`tavernlab.testing`
plugin; ``lint`` checks its scripts against what the V5 host runs; ``migrate`` rewrites legacy
``skill.run_script`` scripts as V5 scripts.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from tavernlab.cli._common import print_json
from tavernlab.errors import UsageError
from tavernlab.skills import (
    InvalidPackage,
    InvalidSkillPackage,
    MigrationPlan,
    lint_source,
    load_directory,
    load_source,
    located_notes,
    plan_migration,
    scaffold_skill,
    write_migration,
)


def register_authoring(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``new``, ``test``, ``lint`` and ``migrate`` under ``tavernlab skill``."""
    new = commands.add_parser(
        "new", help="scaffold a valid skill package whose tests pass",
        description="Write DIR/NAME/ with SKILL.md (front matter and usage), scripts/main.js "
        "(a V5 script reading process.argv and printing JSON; --legacy: the skill.run_script "
        "form), references/notes.md and tests/test_main.py for `tavernlab skill test`.")
    new.add_argument("name", metavar="NAME")
    new.add_argument("--dir", type=Path, default=Path("."), help="where to create it (.)")
    new.add_argument("--legacy", action="store_true", help="a legacy skill.run_script script")
    new.set_defaults(func=_new)
    test = commands.add_parser(
        "test", help="run a skill's tests with the tavernlab pytest plugin",
        description="Run pytest on DIR/tests (the tavern_lab and skill_run fixtures are "
        "available); extra arguments go to pytest. pytest reads its settings from DIR only "
        "(a pytest.ini, pyproject.toml, tox.ini or setup.cfg there), never from a project "
        "around it. Exits with pytest's status.")
    test.add_argument("dir", type=Path, metavar="DIR")
    test.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="PYTEST_ARGS")
    test.set_defaults(func=_test)
    _register_script_commands(commands)


def _register_script_commands(
        commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``lint`` and ``migrate``: the scripts of a skill against the V5 host."""
    lint = commands.add_parser(
        "lint", help="check a skill's scripts against what the V5 host runs",
        description="Print one finding per line, FILE:LINE:COL CODE SEVERITY: MESSAGE, for "
        "the scripts of every skill in PATH (a folder, .zip or .ttskill): legacy-only entry "
        "points, @tauritavern/runtime/v1 imports, unavailable modules and host globals, bad "
        "relative imports, module budgets, undocumented scripts. Exits 1 on any error.")
    lint.add_argument("path", type=Path, metavar="PATH")
    lint.add_argument("--json", action="store_true", help="print JSON")
    lint.set_defaults(func=_lint)

    migrate = commands.add_parser(
        "migrate", help="rewrite legacy skill.run_script scripts as V5 js scripts",
        description="Show, as a unified diff, how every legacy script (default/main export) "
        "of the skills in DIR becomes a V5 script that reads its JSON arguments from "
        "process.argv[2] and prints its result; list the SKILL.md lines to update and what "
        "needs a hand. Writes only with --write. Exits 1 when a script could not be migrated.")
    migrate.add_argument("dir", type=Path, metavar="DIR")
    migrate.add_argument("--write", action="store_true", help="rewrite the files in place")
    migrate.set_defaults(func=_migrate)


def invalid_line(invalid: InvalidPackage, word: str) -> str:
    """``<word> <location>: <message>``: one refused package, as the command prints it."""
    return f"{word} {invalid.location}: {invalid.message}"


def _new(args: argparse.Namespace) -> int:
    package = scaffold_skill(args.name, args.dir, legacy=args.legacy)
    target = args.dir / package.name
    print(f"created {target} ({len(package.files)} package files, valid; tests/ is kept out "
          f"of the package); try: tavernlab skill test {target}")
    return 0


#: Files in a skill's folder that hold its own pytest settings.
_PYTEST_CONFIGS = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def pytest_command(folder: Path, extra: list[str]) -> list[str]:
    """The pytest command line that runs ``folder/tests``: rooted at the skill's folder, its
    settings taken from the skill's own config file or from none (an empty one), so the
    options of a project the skill happens to sit in (a ``timeout`` of pytest-timeout, say)
    are neither applied nor warned about. pytest's cache (``--lf``) lives in the skill's
    ``.pytest_cache/``, which no package contains."""
    own = any((folder / name).is_file() for name in _PYTEST_CONFIGS)
    config = [] if own else ["-c", os.devnull]
    return [sys.executable, "-m", "pytest", *config, "--rootdir", str(folder),
            str(folder / "tests"), *extra]


def _test(args: argparse.Namespace) -> int:
    tests = args.dir / "tests"
    if not tests.is_dir():
        raise UsageError(f"{args.dir} has no tests/ folder to run")
    if importlib.util.find_spec("pytest") is None:
        raise UsageError("skill test needs pytest, which is not installed in this Python "
                         f"({sys.executable}): pip install pytest")
    done = subprocess.run(pytest_command(args.dir, args.pytest_args), check=False)
    return done.returncode


def _lint(args: argparse.Namespace) -> int:
    report = lint_source(load_source(args.path))
    if args.json:
        print_json(report.to_json())
    else:
        for finding in report.findings:
            print(finding)
        errors = f"{report.errors} error{'s' * (report.errors != 1)}"
        warnings = f"{report.warnings} warning{'s' * (report.warnings != 1)}"
        print(f"{errors}, {warnings} in {report.scripts} script"
              f"{'s' * (report.scripts != 1)}")
    return 1 if report.errors else 0


def _shown(plan: MigrationPlan, path: str) -> str:
    return f"{plan.package.origin}/{path}" if plan.package.origin else path


def _print_plan(plan: MigrationPlan, written: bool) -> None:
    for script in plan.scripts:
        if written:
            print(f"migrated {_shown(plan, script.path)}")
        else:
            print(script.diff(_shown(plan, script.path)), end="")
    if plan.usage_lines:
        entries = [s.path for s in plan.scripts if s.calls is not None]
        entry = entries[0] if entries else "scripts/<file>.js"
        example = f"js /skills/{plan.package.name}/{entry} '<args JSON>'"
        print(f"{_shown(plan, 'SKILL.md')} shows skill.run_script calls; update them to "
              f"the V5 command line ({example}):")
        for number, line in plan.usage_lines:
            print(f"  {_shown(plan, 'SKILL.md')}:{number}: {line}")
    notes = located_notes(plan)
    if notes:
        print("Not migrated automatically:")
        for note in notes:
            print(f"  {note}")


def _migrate(args: argparse.Namespace) -> int:
    folder: Path = args.dir
    if not folder.is_dir() or folder.is_symlink():
        raise InvalidSkillPackage(f"migrate needs a skill directory: {folder}")
    scan = load_directory(folder)
    for invalid in scan.invalid:
        print(invalid_line(invalid, "invalid"))
    plans = [plan_migration(package) for package in scan.packages]
    for plan in plans:
        if args.write:
            write_migration(folder, plan)
        _print_plan(plan, args.write)
    count = sum(len(plan.scripts) for plan in plans)
    if count == 0:
        print(f"nothing to migrate in {folder}")
    elif not args.write:
        print(f"would rewrite {count} script{'s' * (count != 1)}; run again with --write "
              "to apply")
    return 0 if scan.ok and all(plan.complete for plan in plans) else 1
