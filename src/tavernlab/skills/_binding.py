"""The effective skill set of an Invocation and how the model is told about it.

See docs/js-and-skills.md. Scopes resolve ``global`` -> ``preset`` ->
``profile`` -> ``character`` (a later scope overrides the same name), then the Profile's
``skills.visible`` and ``skills.deny`` apply (deny wins). The result is a set of
:class:`SkillBinding` values: each names exactly one installed package (scope folder + name),
is fixed when the Invocation is prepared and is reused across rounds and resume. Reads go to
that package's current files; if it disappears they fail, and there is never a fallback to a
package of the same name in another scope.

:func:`bind_skills` is what a run uses when it prepares an Invocation: the effective set
under the Profile's policy, optionally narrowed to named skills, plus the mount serving it.

tavernlab choices where upstream detail is unknown: the system-prompt section wording
(:func:`render_skill_prompt`); ``visible`` accepts ``"*"`` or a list that may contain ``"*"``;
naming a skill that is not in the effective set fails with
``NotFound("Skill is not available: skills/<name>")`` instead of being dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict

from tavernlab.errors import SkillUnavailable
from tavernlab.ondisk import Model
from tavernlab.skills._index import GLOBAL_SCOPE, ScopeKind, SkillIndexEntry, SkillScope
from tavernlab.skills._mount import BoundSkillsMount
from tavernlab.skills._repository import SkillRepository

if TYPE_CHECKING:
    from tavernlab.workspace.macros import FrozenMacros
    from tavernlab.workspace.roots import Profile


class SkillScopeRefs(Model):
    """The scopes a run draws skills from besides ``global``: a preset, a profile and a
    character id (each optional). Frozen into the run (``skillScopeRefs``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    preset: str | None = None
    profile: str | None = None
    character: str | None = None

    def scopes(self) -> list[SkillScope]:
        """``global`` then each given scope, in resolution order."""
        given: list[tuple[ScopeKind, str | None]] = [
            ("preset", self.preset), ("profile", self.profile), ("character", self.character)]
        return [GLOBAL_SCOPE] + [SkillScope(kind=kind, id=ident) for kind, ident in given
                                 if ident is not None]


@dataclass(frozen=True, slots=True)
class SkillBinding:
    """One bound skill: the installed package ``scope``/``name`` living in ``package_dir``.

    ``installed_hash`` and ``description`` are what the index said when the binding was made;
    the mount always serves the package's current files.
    """

    name: str
    description: str
    scope: SkillScope
    package_dir: Path
    installed_hash: str

    @property
    def skill_md_path(self) -> str:
        """The workspace path the model reads first: ``skills/<name>/SKILL.md``."""
        return f"skills/{self.name}/SKILL.md"

    @classmethod
    def of(cls, repository: SkillRepository, entry: SkillIndexEntry) -> SkillBinding:
        """Bind an index entry of ``repository``."""
        return cls(entry.name, entry.description, entry.scope,
                   repository.package_dir(entry.name, entry.scope), entry.installed_hash)


def _visible_set(visible: str | Iterable[str]) -> set[str] | None:
    """``None`` means every skill (``"*"``)."""
    if isinstance(visible, str):
        return None if visible == "*" else {visible}
    names = set(visible)
    return None if "*" in names else names


def resolve_effective_skills(repository: SkillRepository, refs: SkillScopeRefs | None = None,
                             *, visible: str | Iterable[str] = "*",
                             deny: Iterable[str] = ()) -> dict[str, SkillBinding]:
    """The bindings of an Invocation, by name (sorted): scopes in order, later wins, then
    ``visible`` (names or ``"*"``) and ``deny`` (which always wins)."""
    order = {scope: rank for rank, scope in enumerate((refs or SkillScopeRefs()).scopes())}
    chosen: dict[str, tuple[int, SkillIndexEntry]] = {}
    for entry in repository.list():
        rank = order.get(entry.scope)
        if rank is None:
            continue
        current = chosen.get(entry.name)
        if current is None or rank > current[0]:
            chosen[entry.name] = (rank, entry)
    allowed = _visible_set(visible)
    denied = set(deny)
    return {name: SkillBinding.of(repository, entry)
            for name, (_, entry) in sorted(chosen.items())
            if name not in denied and (allowed is None or name in allowed)}


def bind_skills(repository: SkillRepository, profile: Profile, *,
                names: Iterable[str] | None = None,
                scopes: SkillScopeRefs | Mapping[str, str] | None = None,
                macros: FrozenMacros) -> tuple[dict[str, SkillBinding], BoundSkillsMount]:
    """Bind an Invocation's skills: the effective set for ``scopes`` (``preset``,
    ``profile``, ``character`` ids) under ``profile.skills`` (``visible``/``deny``), narrowed
    to ``names`` when given, and the ``skills/`` mount serving them with ``macros``."""
    refs = scopes if isinstance(scopes, SkillScopeRefs) else SkillScopeRefs.model_validate(
        dict(scopes or {}))
    bound = resolve_effective_skills(repository, refs, visible=profile.skills.visible,
                                     deny=profile.skills.deny)
    if names is not None:
        wanted = sorted(set(names))
        for name in wanted:
            if name not in bound:
                raise SkillUnavailable(name)
        bound = {name: bound[name] for name in wanted}
    return bound, BoundSkillsMount(bound, macros)


def _ordered(bindings: Iterable[SkillBinding] | Mapping[str, SkillBinding]
             ) -> list[SkillBinding]:
    items = bindings.values() if isinstance(bindings, Mapping) else bindings
    unique = {b.name: b for b in items}
    return [unique[name] for name in sorted(unique)]


def render_skill_prompt(bindings: Iterable[SkillBinding] | Mapping[str, SkillBinding]) -> str:
    """The system-prompt section listing each effective skill exactly once (name,
    description, ``skills/<name>/SKILL.md``); ``""`` when no skill is bound."""
    ordered = _ordered(bindings)
    if not ordered:
        return ""
    lines = ["## Skills",
             "These skills are mounted read-only under skills/. Read a skill's SKILL.md with "
             "the workspace tools before using it; run its scripts with "
             "`js /skills/<name>/scripts/<file>.js ARG...` in workspace.shell."]
    lines += [f"- {b.name}: {b.description} ({b.skill_md_path})" for b in ordered]
    return "\n".join(lines) + "\n"


def skill_list(bindings: Iterable[SkillBinding] | Mapping[str, SkillBinding]
               ) -> tuple[str, dict[str, Any]]:
    """The compatibility-mode ``skill.list`` result: one line per effective skill,
    ``<name>: <description> (skills/<name>/SKILL.md)``, and ``{skills: [{name, description,
    path}]}`` as structured content."""
    ordered = _ordered(bindings)
    content = "\n".join(f"{b.name}: {b.description} ({b.skill_md_path})" for b in ordered)
    structured = {"skills": [{"name": b.name, "description": b.description,
                              "path": b.skill_md_path} for b in ordered]}
    return content, structured


def bindings_to_json(bindings: Mapping[str, SkillBinding]) -> list[dict[str, Any]]:
    """The bindings as stored in a run's ``input/skill_bindings.json`` (sorted by name)."""
    return [{"name": b.name, "description": b.description,
             "scope": b.scope.model_dump(mode="json"), "installedHash": b.installed_hash}
            for b in _ordered(bindings)]


def bindings_from_json(repository: SkillRepository, data: Iterable[Mapping[str, Any]]
                       ) -> dict[str, SkillBinding]:
    """Rebuild a run's fixed bindings: each points at the same installed package (scope and
    name) it was bound to, whatever the scope rules would pick today."""
    out: dict[str, SkillBinding] = {}
    for item in data:
        scope = SkillScope.model_validate(item["scope"])
        name = str(item["name"])
        out[name] = SkillBinding(name, str(item["description"]), scope,
                                 repository.package_dir(name, scope),
                                 str(item["installedHash"]))
    return out
