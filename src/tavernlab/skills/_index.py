"""Scopes and the installed-skill index ``index/skills.json`` (docs/js-and-skills.md).

tavernlab choices where upstream detail is unknown:

* A scope's stable key is ``<kind>:<id>`` (``preset:My Preset``, ``profile:writer``,
  ``character:alice``; ``global`` for the global scope). Its folder is ``global`` or
  ``<kind>_<16 hex>``, the hex being the first 8 bytes of the SHA-256 of the key.
* In the index a scope is stored as ``{"kind": "global"}`` or ``{"kind": "preset", "id": ...}``.
* Index **version 1** (the pre-scope layout) is ``{"version": 1, "skills": [entry...]}`` with
  the same entry fields minus ``scope``, each skill stored at ``installed/<name>/``. Reading it
  migrates every skill to the global scope (``installed/global/<name>/``) and rewrites the
  index as version 2 (see :mod:`tavernlab.skills._repository`).
* Preset and character ids are any non-empty string without NUL (trimmed); profile ids use
  ``[a-z0-9_-]``, at most 128 characters, as upstream requires.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from tavernlab.ondisk import Model
from tavernlab.skills._errors import InvalidSkillScope
from tavernlab.skills._package import uses_name_characters

INDEX_VERSION = 2
ScopeKind = Literal["global", "preset", "profile", "character"]
SCOPE_KINDS: tuple[ScopeKind, ...] = ("global", "preset", "profile", "character")
MAX_PROFILE_ID_LENGTH = 128


class IndexModel(Model):
    """Base of the index's JSON: the on-disk model's camelCase aliases; unknown fields are
    ignored on read."""

    model_config = ConfigDict(extra="ignore")


def _check_id(kind: ScopeKind, raw: str | None) -> str | None:
    if kind == "global":
        if raw not in (None, ""):
            raise InvalidSkillScope("The global Skill scope has no id")
        return None
    value = (raw or "").strip()
    if not value:
        raise InvalidSkillScope(f"Skill scope {kind} needs an id ({kind}:<id>)")
    if "\0" in value:
        raise InvalidSkillScope("Skill scope id cannot contain NUL")
    if kind == "profile" and (len(value) > MAX_PROFILE_ID_LENGTH
                              or not uses_name_characters(value)):
        raise InvalidSkillScope(
            "Profile scope id must use lowercase ASCII letters, digits, '-' or '_' "
            f"(at most {MAX_PROFILE_ID_LENGTH} characters)")
    return value


class SkillScope(IndexModel):
    """Where a skill is installed: ``global``, or a preset, profile or character by id."""

    model_config = ConfigDict(frozen=True)

    kind: ScopeKind = "global"
    id: str | None = Field(default=None, validate_default=True)

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _check_id(info.data.get("kind", "global"), value)

    @classmethod
    def parse(cls, value: SkillScope | str) -> SkillScope:
        """``global`` or ``<kind>:<id>`` (``preset:My Preset``); a scope passes through."""
        if isinstance(value, SkillScope):
            return value
        text = value.strip()
        if text == "global":
            return cls()
        kind, sep, ident = text.partition(":")
        if not sep or kind not in SCOPE_KINDS or kind == "global":
            raise InvalidSkillScope(
                f"Unknown Skill scope `{value}`; use global, preset:<id>, profile:<id> or "
                "character:<id>")
        return cls.model_validate({"kind": kind, "id": ident})

    @property
    def key(self) -> str:
        """The stable key ``global`` or ``<kind>:<id>``."""
        return "global" if self.kind == "global" else f"{self.kind}:{self.id}"

    @property
    def dir_name(self) -> str:
        """``global`` or ``<kind>_<first 8 bytes of sha256(key) as hex>``."""
        if self.kind == "global":
            return "global"
        return f"{self.kind}_{hashlib.sha256(self.key.encode('utf-8')).hexdigest()[:16]}"

    def __str__(self) -> str:
        return self.key


GLOBAL_SCOPE = SkillScope()


class SkillSourceRef(IndexModel):
    """Where an installed skill came from (a preset, a character, a directory, an archive)."""

    kind: str
    id: str
    label: str
    installed_hash: str


class SkillIndexEntry(IndexModel):
    """One installed skill: an entry of ``index/skills.json``."""

    scope: SkillScope = Field(default_factory=SkillScope)
    name: str
    description: str
    display_name: str | None = None
    source_kind: str | None = None
    license: str | None = None
    author: str | None = None
    version: str | None = None
    tags: list[str] = Field(default_factory=list)
    installed_hash: str
    file_count: int
    total_bytes: int
    has_scripts: bool
    has_binary: bool
    installed_at: datetime
    source_refs: list[SkillSourceRef] = Field(default_factory=list)

    def merge_source_refs(self, refs: list[SkillSourceRef]) -> bool:
        """Add ``refs`` (a ref with the same kind and id is replaced); sorted by kind, id.
        Returns whether anything changed."""
        before = [r.model_dump() for r in self.source_refs]
        merged = [r for r in self.source_refs
                  if all((r.kind, r.id) != (n.kind, n.id) for n in refs)] + list(refs)
        merged.sort(key=lambda r: (r.kind, r.id))
        self.source_refs = merged
        return before != [r.model_dump() for r in merged]


class SkillIndexFile(IndexModel):
    """The whole ``index/skills.json``: ``{version, skills}``."""

    version: int
    skills: list[SkillIndexEntry] = Field(default_factory=list)

    def find(self, scope: SkillScope, name: str) -> SkillIndexEntry | None:
        """The entry for ``name`` in ``scope``."""
        for entry in self.skills:
            if entry.scope == scope and entry.name == name:
                return entry
        return None

    def sort(self) -> None:
        """Order entries by scope key, then name."""
        self.skills.sort(key=lambda e: (e.scope.key, e.name))
