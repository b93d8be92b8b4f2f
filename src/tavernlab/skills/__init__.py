"""Skill packages, the installed-skill repository and the read-only ``skills/`` mount.

See docs/js-and-skills.md (``lint`` and ``migrate`` check and rewrite a skill's
scripts for the V5 ``js`` runner: :mod:`tavernlab.skills.lint`,
:mod:`tavernlab.skills.migrate`). ``lab.skills`` is a :class:`SkillRepository`;
:func:`bind_skills` (over :func:`resolve_effective_skills`) binds an Invocation's skills and
:class:`BoundSkillsMount` serves them, macro-projected, under ``skills/``.

The names below are imported on first use (binding and repositories are loaded only when
a lab has skills).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "BoundSkillsMount": "tavernlab.skills.mount",
    "InvalidPackage": "tavernlab.skills.collection",
    "InvalidSkillIndex": "tavernlab.skills.errors",
    "InvalidSkillPackage": "tavernlab.skills.errors",
    "InvalidSkillScope": "tavernlab.skills.errors",
    "SkillBinding": "tavernlab.skills.binding",
    "SkillConflict": "tavernlab.skills.errors",
    "SkillError": "tavernlab.skills.errors",
    "SkillFileRef": "tavernlab.skills.package",
    "SkillIndexEntry": "tavernlab.skills.index",
    "SkillInstallReport": "tavernlab.skills.report",
    "SkillInstallResult": "tavernlab.skills.report",
    "SkillNotFound": "tavernlab.skills.errors",
    "SkillOutputExists": "tavernlab.skills.errors",
    "SkillPackage": "tavernlab.skills.package",
    "SkillRepository": "tavernlab.skills.repository",
    "SkillScope": "tavernlab.skills.index",
    "SkillScopeRefs": "tavernlab.skills.binding",
    "SkillSource": "tavernlab.skills.report",
    "SkillSourceRef": "tavernlab.skills.index",
    "SkillStorageError": "tavernlab.skills.errors",
    "SourceScan": "tavernlab.skills.collection",
    "bind_skills": "tavernlab.skills.binding",
    "render_skill_prompt": "tavernlab.skills.binding",
    "resolve_effective_skills": "tavernlab.skills.binding",
    "skill_list": "tavernlab.skills.binding",
}
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


def __getattr__(name: str) -> Any:
    """Import a public name on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tavernlab.skills' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
