"""Development skills: a working directory bound to a lab and reinstalled when it changes.

``lab.skills.develop("path/to/my-skill")`` installs the package found there (``replace``)
and remembers the directory. Before the first tool call, ``js`` job or notebook cell of each
round of every run, the host asks :meth:`SkillDevelopment.sync` to re-validate each
development skill: a changed content hash reinstalls it and says so in one line
(``my-skill: reinstalled (hash 4c0b…→91ae…)``); an invalid edit says why and keeps the last
good version installed. Because the host syncs once per round, a change never lands in the
middle of a round (a tavernlab choice). Lines go to the ``report`` callable; by default an
install or reinstall goes to standard output and an invalid edit, a warning, to standard
error (a notebook shows both under the cell, the warning marked as one).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tavernlab.errors import SkillError
from tavernlab.skills._collection import SourceScan
from tavernlab.skills._errors import InvalidSkillPackage
from tavernlab.skills._index import GLOBAL_SCOPE, SkillScope
from tavernlab.skills._package import SkillPackage
from tavernlab.skills._report import ConflictChoice, SkillInstallReport, SkillSource


class Installer(Protocol):
    """What development needs of the repository."""

    def validate(self, path: Path | str) -> SourceScan:
        """Scan a source."""

    def install(self, path: Path | str, *, scope: SkillScope | str = ...,
                on_conflict: ConflictChoice | None = ...,
                source: SkillSource | None = ...) -> SkillInstallReport:
        """Install a source."""


@dataclass(slots=True)
class DevelopmentSkill:
    """One bound working directory: its skill name, scope, the installed hash and the last
    validation error (``None`` while the directory is valid)."""

    path: Path
    name: str
    scope: SkillScope
    installed_hash: str
    error: str | None = None


def _short(digest: str) -> str:
    return digest[:4] + "…"


#: What a line about an invalid edit says (the default report writes it to stderr).
INVALID_EDIT = ": invalid edit, keeping the installed version"


def report_line(line: str) -> None:
    """The default report: a warning (an invalid edit) to stderr, any other line, news of
    success, to stdout."""
    print(line, file=sys.stderr if INVALID_EDIT in line else sys.stdout, flush=True)


class SkillDevelopment:
    """The development skills of one repository."""

    def __init__(self, repository: Installer,
                 report: Callable[[str], None] = report_line) -> None:
        self.repository = repository
        self.report = report
        self._skills: dict[str, DevelopmentSkill] = {}
        self._lock = threading.Lock()

    def develop(self, path: Path | str, *, scope: SkillScope | str = GLOBAL_SCOPE
                ) -> DevelopmentSkill:
        """Bind ``path`` (a directory holding exactly one valid package) and install it now
        (replacing an installed skill of the same name). Bad input raises and binds
        nothing."""
        folder = Path(path).resolve()
        if not folder.is_dir():
            raise InvalidSkillPackage(f"A development skill must be a directory: {folder}")
        package = self._one_package(folder)
        target = SkillScope.parse(scope)
        self.repository.install(folder, scope=target, on_conflict="replace")
        skill = DevelopmentSkill(folder, package.name, target, package.installed_hash)
        with self._lock:
            self._skills[package.name] = skill
        self.report(f"{package.name}: installed for development "
                    f"(hash {_short(package.installed_hash)}) from {folder}")
        return skill

    def _one_package(self, folder: Path) -> SkillPackage:
        packages = self.repository.validate(folder).require_valid()
        if len(packages) != 1:
            raise InvalidSkillPackage(
                f"A development skill directory must hold one package, found {len(packages)}: "
                f"{folder}")
        return packages[0]

    def stop(self, name: str) -> None:
        """Stop watching ``name`` (what is installed stays)."""
        with self._lock:
            self._skills.pop(name, None)

    @property
    def skills(self) -> list[DevelopmentSkill]:
        """The bound development skills, by name."""
        with self._lock:
            return [self._skills[name] for name in sorted(self._skills)]

    def sync(self) -> list[str]:
        """Re-validate every development skill; reinstall the changed ones. Returns the lines
        it reported."""
        lines = []
        for skill in self.skills:
            line = self._sync_one(skill)
            if line is not None:
                self.report(line)
                lines.append(line)
        return lines

    def _sync_one(self, skill: DevelopmentSkill) -> str | None:
        try:
            package = self._one_package(skill.path)
            if package.name != skill.name:
                raise InvalidSkillPackage(f"the skill was renamed to `{package.name}`; "
                                          "bind the directory again to develop it")
        except SkillError as error:
            first = skill.error is None or skill.error != error.message
            skill.error = error.message
            return (f"{skill.name}{INVALID_EDIT} (hash {_short(skill.installed_hash)}): "
                    f"{error.message}") if first else None
        skill.error = None
        if package.installed_hash == skill.installed_hash:
            return None
        self.repository.install(skill.path, scope=skill.scope, on_conflict="replace")
        before, skill.installed_hash = skill.installed_hash, package.installed_hash
        return (f"{skill.name}: reinstalled (hash {_short(before)}→"
                f"{_short(package.installed_hash)})")
