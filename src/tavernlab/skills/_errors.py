"""The skill-package error family (docs/js-and-skills.md).

Upstream reports every package problem as a plain ``InvalidData(message)``; the messages are
upstream's where known. The codes are tavernlab's choice (upstream has none for the skill
repository), one per kind of failure so a caller can branch on them:

* ``skill.invalid_package`` - a source or package breaks a rule (front matter, name, sidecar,
  paths, limits, archive checks). Nothing was written.
* ``skill.invalid_scope`` - a scope that is not ``global`` or ``<kind>:<id>`` with a valid id.
* ``skill.not_found`` - no installed skill of that name in that scope, or a missing source.
* ``skill.conflict`` - the same name with different content and no ``skip``/``replace`` choice.
* ``skill.invalid_index`` - ``index/skills.json`` is unreadable or inconsistent.
* ``skill.storage_failed`` - an OS error while installing; the install was rolled back.
* ``skill.output_exists`` - ``tavernlab skill pack`` refuses to overwrite its output file.
"""

from __future__ import annotations

from tavernlab.errors import SkillError

__all__ = ["InvalidSkillIndex", "InvalidSkillPackage", "InvalidSkillScope", "SkillConflict",
           "SkillError", "SkillNotFound", "SkillOutputExists", "SkillStorageError"]


class InvalidSkillPackage(SkillError):
    """A skill source or package that breaks a package rule; nothing was written."""

    code = "skill.invalid_package"


class InvalidSkillScope(SkillError):
    """A malformed scope (``global``, ``preset:<id>``, ``profile:<id>``, ``character:<id>``)."""

    code = "skill.invalid_scope"


class SkillNotFound(SkillError):
    """No such installed skill (or skill source)."""

    code = "skill.not_found"


class SkillConflict(SkillError):
    """An installed skill of the same name has different content and no choice was given."""

    code = "skill.conflict"


class InvalidSkillIndex(SkillError):
    """``index/skills.json`` cannot be read, has an unknown version or duplicate entries."""

    code = "skill.invalid_index"


class SkillStorageError(SkillError):
    """An OS error while changing the repository; the change was rolled back."""

    code = "skill.storage_failed"


class SkillOutputExists(SkillError):
    """An output file (``tavernlab skill pack -o``) already exists; it is never overwritten."""

    code = "skill.output_exists"
