"""What an installation reports: the choice on conflicts, the source reference, and the
outcome of every package (docs/js-and-skills.md).

:class:`SkillInstallReport` keeps the results of the valid packages and, apart from them, the
packages of the source that failed validation; :func:`conflict_message` is the one wording of
a changed package installed without a choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from tavernlab.skills._collection import InvalidPackage
from tavernlab.skills._errors import InvalidSkillPackage
from tavernlab.skills._index import IndexModel, SkillIndexEntry, SkillScope, SkillSourceRef

ConflictChoice = Literal["skip", "replace"]
InstallAction = Literal["installed", "replaced", "already_installed", "skipped"]


@dataclass(frozen=True, slots=True)
class SkillSource:
    """Who asks for an install (a preset, a character, a directory...), recorded as a source
    reference on the index entry. ``label`` defaults to ``id``."""

    kind: str
    id: str
    label: str | None = None

    def ref(self, installed_hash: str) -> SkillSourceRef:
        """The index form, tied to the hash that this source installed."""
        kind, ident = self.kind.strip(), self.id.strip()
        for value, what in ((kind, "kind"), (ident, "id")):
            if not value or "\0" in value:
                raise InvalidSkillPackage(f"Skill source {what} must be non-empty without NUL")
        label = (self.label or "").strip() or ident
        return SkillSourceRef(kind=kind, id=ident, label=label, installed_hash=installed_hash)


class SkillInstallResult(IndexModel):
    """What happened to one package: ``installed``, ``replaced``, ``already_installed`` or
    ``skipped``; ``skill`` is the index entry now in effect, plus the package's warnings and
    its ``origin`` (its folder in the source, ``""`` for the top)."""

    scope: SkillScope
    name: str
    action: InstallAction
    origin: str = ""
    skill: SkillIndexEntry | None = None
    warnings: list[str] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SkillInstallReport:
    """The outcome of installing one source: a result per valid package and, kept apart, the
    packages that failed validation (each with its origin and message).

    Invalid packages never stop the valid ones, and installing does not raise for them:
    check :attr:`ok` or call :meth:`check`. ``tavernlab skill install`` prints one line per
    package and exits 1 when any package was invalid (tavernlab's way of surfacing them).
    """

    scope: SkillScope
    results: tuple[SkillInstallResult, ...]
    invalid: tuple[InvalidPackage, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether every package of the source was valid."""
        return not self.invalid

    def names(self, action: InstallAction) -> list[str]:
        """The names of the packages that had ``action``."""
        return [r.name for r in self.results if r.action == action]

    @property
    def installed(self) -> list[str]:
        """Names installed for the first time."""
        return self.names("installed")

    @property
    def replaced(self) -> list[str]:
        """Names whose changed content replaced the installed one."""
        return self.names("replaced")

    @property
    def skipped(self) -> list[str]:
        """Names kept as installed although the source's content differs."""
        return self.names("skipped")

    @property
    def already_installed(self) -> list[str]:
        """Names already installed with the same content (source references merged)."""
        return self.names("already_installed")

    def check(self) -> SkillInstallReport:
        """``self`` when every package was valid; otherwise raise :class:`InvalidSkillPackage`
        naming each invalid package (the valid ones are installed all the same)."""
        if self.invalid:
            raise InvalidSkillPackage("; ".join(f"{i.location}: {i.message}"
                                                for i in self.invalid))
        return self

    def to_json(self) -> dict[str, Any]:
        """``{scope, results, invalid}`` as ``tavernlab skill install --json`` prints it."""
        return {"scope": self.scope.model_dump(by_alias=True, exclude_none=True),
                "results": [r.model_dump(by_alias=True, exclude_none=True, mode="json")
                            for r in self.results],
                "invalid": [i.to_json() for i in self.invalid]}


def conflict_message(name: str, scope: SkillScope) -> str:
    """Upstream's message for a changed package without a choice, then how to choose (the
    keyword and the command-line flags, so reinstalling while developing needs no
    traceback-reading; tavernlab's wording) and the scope."""
    return (f"Skill '{name}' already exists with different content; conflict_strategy is "
            f"required: install again with on_conflict=\"replace\" to replace it or "
            f"on_conflict=\"skip\" to keep the installed one (command line: --replace or "
            f"--skip; scope {scope.key})")
