"""Roots and policy: which workspace paths an agent may see and write (docs/workspace.md,
"Roots and policy"), and the one answer to "what may the model do with this path" (:class:`Access`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from tavernlab.errors import InvalidData
from tavernlab.layout import DEFAULT_ROOTS as DEFAULT_ROOTS  # the policy's default
from tavernlab.layout import RESERVED_NAMES, TOOL_RESULTS
from tavernlab.paths import WorkspacePath

#: Roots the runtime always makes visible and never writable.
READ_ONLY_ROOTS: tuple[str, ...] = (TOOL_RESULTS, "skills")
SKILLS_ROOT = "skills"
#: Names a Profile may not use as a root. Upstream's full V5 list is unknown; tavernlab
#: chooses exactly this list (docs/layout.md, "A run directory"): the run's hidden internals, and
#: tavernlab's own ``journal.jsonl`` and ``js-jobs/`` (the bytes of each ``run.js`` job).
RESERVED_ROOT_NAMES: frozenset[str] = RESERVED_NAMES

AccessLevel = Literal["hidden", "read_only", "writable"]


@dataclass(frozen=True, slots=True)
class Access:
    """What the model may do with one path: ``level`` is ``hidden`` (not visible at all),
    ``read_only`` or ``writable``; ``creates_children`` says whether new entries may be made
    inside it (a writable directory, or a writable root, which itself is not writable)."""

    level: AccessLevel
    creates_children: bool

    @property
    def visible(self) -> bool:
        """Whether the model sees the path."""
        return self.level != "hidden"

    @property
    def writable(self) -> bool:
        """Whether the model may write (replace, remove, rename) the path itself."""
        return self.level == "writable"


@dataclass(frozen=True, slots=True)
class Policy:
    """The effective visible and writable roots of an Invocation (docs/workspace.md)."""

    visible_roots: tuple[str, ...]
    writable_roots: tuple[str, ...]

    @classmethod
    def from_profile(cls, visible: Iterable[str] = DEFAULT_ROOTS,
                     writable: Iterable[str] = DEFAULT_ROOTS) -> Policy:
        """Apply upstream's rules to a Profile's root lists.

        Each root must be one valid path segment and not a reserved name; ``tool-results``
        and ``skills`` are added to the visible list and removed from the writable list; both
        lists are sorted and de-duplicated. A writable root must also be visible.
        """
        if isinstance(visible, str) or isinstance(writable, str):
            raise InvalidData("Workspace roots must be a list of root names, not a string")
        visible_set = {_root_name(r) for r in visible} | set(READ_ONLY_ROOTS)
        writable_set = {_root_name(r) for r in writable} - set(READ_ONLY_ROOTS)
        hidden = sorted(writable_set - visible_set)
        if hidden:
            raise InvalidData(f"Writable workspace roots must also be visible: {', '.join(hidden)}")
        return cls(tuple(sorted(visible_set)), tuple(sorted(writable_set)))

    @property
    def materialized_roots(self) -> tuple[str, ...]:
        """The visible roots that are real directories of the run (all but ``skills``, which
        the skills mount serves)."""
        return tuple(r for r in self.visible_roots if r != SKILLS_ROOT)

    def is_visible(self, path: WorkspacePath | None) -> bool:
        """The logical root, a visible root, or anything below one (segment-wise)."""
        return path is None or path.root in self.visible_roots

    def access(self, path: WorkspacePath | None, *, directory: bool = True) -> Access:
        """The access of ``path`` (``None`` is the logical root); ``directory`` says whether
        the node is a directory (only a directory can take children)."""
        if not self.is_visible(path):
            return Access("hidden", False)
        writable = self.is_writable(path)
        root_accepts = (path is not None and len(path.parts) == 1
                        and path.root in self.writable_roots)
        return Access("writable" if writable else "read_only",
                      directory and (writable or root_accepts))

    def is_writable(self, path: WorkspacePath | None) -> bool:
        """A strict child of a writable root (a root itself never is), never under ``skills/``."""
        return (path is not None and len(path.parts) > 1 and path.root in self.writable_roots
                and path.root != SKILLS_ROOT)


def _root_name(root: str) -> str:
    parsed = WorkspacePath.parse(root)
    if len(parsed.parts) != 1:
        raise InvalidData(f"Workspace root must be a single path segment: {root}")
    if parsed.text in RESERVED_ROOT_NAMES:
        raise InvalidData(f"Workspace root name is reserved: {root}")
    return parsed.text
