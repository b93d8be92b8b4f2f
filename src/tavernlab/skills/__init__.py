"""Skill packages, the installed-skill repository and the read-only ``skills/`` mount.

spec/js-and-skills.md sections 8 and 9 (``lint`` and ``migrate`` check and rewrite a skill's
scripts for the V5 ``js`` runner: :mod:`tavernlab.skills.lint`,
:mod:`tavernlab.skills.migrate`). ``lab.skills`` is a :class:`SkillRepository`;
:func:`bind_skills` (over :func:`resolve_effective_skills`) binds an Invocation's skills and
:class:`BoundSkillsMount` serves them, macro-projected, under ``skills/``.
"""

from tavernlab.skills.binding import (
    SkillBinding,
    SkillScopeRefs,
    bind_skills,
    render_skill_prompt,
    resolve_effective_skills,
    skill_list,
)
from tavernlab.skills.collection import InvalidPackage, SourceScan
from tavernlab.skills.errors import (
    InvalidSkillIndex,
    InvalidSkillPackage,
    InvalidSkillScope,
    SkillConflict,
    SkillError,
    SkillNotFound,
    SkillOutputExists,
    SkillStorageError,
)
from tavernlab.skills.index import SkillIndexEntry, SkillScope, SkillSourceRef
from tavernlab.skills.mount import BoundSkillsMount
from tavernlab.skills.package import SkillFileRef, SkillPackage
from tavernlab.skills.report import SkillInstallReport, SkillInstallResult, SkillSource
from tavernlab.skills.repository import SkillRepository

__all__ = [
    "BoundSkillsMount",
    "InvalidPackage",
    "InvalidSkillIndex",
    "InvalidSkillPackage",
    "InvalidSkillScope",
    "SkillBinding",
    "SkillConflict",
    "SkillError",
    "SkillFileRef",
    "SkillIndexEntry",
    "SkillInstallReport",
    "SkillInstallResult",
    "SkillNotFound",
    "SkillOutputExists",
    "SkillPackage",
    "SkillRepository",
    "SkillScope",
    "SkillScopeRefs",
    "SkillSource",
    "SkillSourceRef",
    "SkillStorageError",
    "SourceScan",
    "bind_skills",
    "render_skill_prompt",
    "resolve_effective_skills",
    "skill_list",
]
