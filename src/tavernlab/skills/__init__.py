"""Skill packages, the installed-skill repository and the read-only ``skills/`` mount.

See docs/js-and-skills.md (``lint`` and ``migrate`` check and rewrite a skill's
scripts for the V5 ``js`` runner: :mod:`tavernlab.skills._lint`,
:mod:`tavernlab.skills._migrate`). ``lab.skills`` is a :class:`SkillRepository`;
:func:`bind_skills` (over :func:`resolve_effective_skills`) binds an Invocation's skills and
:class:`BoundSkillsMount` serves them, macro-projected, under ``skills/``.

The names below are imported on first use (binding and repositories are loaded only when
a lab has skills).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tavernlab.lazy import lazy_names

if TYPE_CHECKING:
    from tavernlab.skills._archive import read_archive_files, write_archive
    from tavernlab.skills._binding import (
        SkillBinding,
        SkillScopeRefs,
        bind_skills,
        bindings_from_json,
        bindings_to_json,
        render_skill_prompt,
        resolve_effective_skills,
        skill_list,
    )
    from tavernlab.skills._collection import InvalidPackage, SourceScan
    from tavernlab.skills._compat_tools import SKILL_COMPAT_TOOLS
    from tavernlab.skills._errors import (
        InvalidSkillIndex,
        InvalidSkillPackage,
        InvalidSkillScope,
        SkillConflict,
        SkillError,
        SkillNotFound,
        SkillOutputExists,
        SkillStorageError,
    )
    from tavernlab.skills._index import SkillIndexEntry, SkillScope, SkillSourceRef
    from tavernlab.skills._lint import lint_source
    from tavernlab.skills._migrate import (
        MigrationPlan,
        located_notes,
        plan_migration,
        write_migration,
    )
    from tavernlab.skills._mount import BoundSkillsMount
    from tavernlab.skills._package import SkillFileRef, SkillPackage, validate_skill_name
    from tavernlab.skills._report import (
        ConflictChoice,
        SkillInstallReport,
        SkillInstallResult,
        SkillSource,
    )
    from tavernlab.skills._repository import SkillRepository
    from tavernlab.skills._run_script import run_script_tools
    from tavernlab.skills._scaffold import scaffold_skill
    from tavernlab.skills._source import load_directory, load_inline, load_source

_HOMES = {
    "BoundSkillsMount": "tavernlab.skills._mount",
    "InvalidPackage": "tavernlab.skills._collection",
    "InvalidSkillIndex": "tavernlab.skills._errors",
    "InvalidSkillPackage": "tavernlab.skills._errors",
    "InvalidSkillScope": "tavernlab.skills._errors",
    "SkillBinding": "tavernlab.skills._binding",
    "SkillConflict": "tavernlab.skills._errors",
    "SkillError": "tavernlab.skills._errors",
    "SkillFileRef": "tavernlab.skills._package",
    "SkillIndexEntry": "tavernlab.skills._index",
    "SkillInstallReport": "tavernlab.skills._report",
    "SkillInstallResult": "tavernlab.skills._report",
    "SkillNotFound": "tavernlab.skills._errors",
    "SkillOutputExists": "tavernlab.skills._errors",
    "SkillPackage": "tavernlab.skills._package",
    "SkillRepository": "tavernlab.skills._repository",
    "SkillScope": "tavernlab.skills._index",
    "SkillScopeRefs": "tavernlab.skills._binding",
    "SkillSource": "tavernlab.skills._report",
    "SkillSourceRef": "tavernlab.skills._index",
    "SkillStorageError": "tavernlab.skills._errors",
    "SourceScan": "tavernlab.skills._collection",
    "bind_skills": "tavernlab.skills._binding",
    "render_skill_prompt": "tavernlab.skills._binding",
    "resolve_effective_skills": "tavernlab.skills._binding",
    "skill_list": "tavernlab.skills._binding",
    "ConflictChoice": "tavernlab.skills._report",
    "MigrationPlan": "tavernlab.skills._migrate",
    "SKILL_COMPAT_TOOLS": "tavernlab.skills._compat_tools",
    "bindings_from_json": "tavernlab.skills._binding",
    "bindings_to_json": "tavernlab.skills._binding",
    "lint_source": "tavernlab.skills._lint",
    "load_directory": "tavernlab.skills._source",
    "load_inline": "tavernlab.skills._source",
    "load_source": "tavernlab.skills._source",
    "located_notes": "tavernlab.skills._migrate",
    "plan_migration": "tavernlab.skills._migrate",
    "read_archive_files": "tavernlab.skills._archive",
    "run_script_tools": "tavernlab.skills._run_script",
    "scaffold_skill": "tavernlab.skills._scaffold",
    "validate_skill_name": "tavernlab.skills._package",
    "write_archive": "tavernlab.skills._archive",
    "write_migration": "tavernlab.skills._migrate",
}
__all__ = [
    "SKILL_COMPAT_TOOLS",
    "BoundSkillsMount",
    "ConflictChoice",
    "InvalidPackage",
    "InvalidSkillIndex",
    "InvalidSkillPackage",
    "InvalidSkillScope",
    "MigrationPlan",
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
    "bindings_from_json",
    "bindings_to_json",
    "lint_source",
    "load_directory",
    "load_inline",
    "load_source",
    "located_notes",
    "plan_migration",
    "read_archive_files",
    "render_skill_prompt",
    "resolve_effective_skills",
    "run_script_tools",
    "scaffold_skill",
    "skill_list",
    "validate_skill_name",
    "write_archive",
    "write_migration",
]


__getattr__ = lazy_names(__name__, _HOMES)
