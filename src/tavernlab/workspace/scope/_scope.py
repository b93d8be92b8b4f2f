"""``ScopedWorkspaceFs``: an Invocation's policy view over the run's shared ``WorkspaceFs``.

See docs/workspace.md. Every model-side caller (tools, shell, scripts) uses this
view, never the storage port directly. It is a view, not a copy: two views of the same run
share one :class:`~tavernlab.workspace.storage.WorkspaceFs` and its lock.

* :class:`Policy` - visible and writable roots with upstream's normalization rules.
* :class:`SkillsMount` - the seam for the read-only ``skills/`` root: every path under
  ``skills/`` is served by the mount (macro-projected skill files), never by the run directory.
  :class:`EmptySkillsMount` is the mount of an Invocation with no bound skills.
* :class:`~tavernlab.workspace.scope._tracking.MutationTracker` (defined in
  :mod:`tavernlab.workspace.scope._tracking`, re-exported here) - the text-mutation tracker that
  feeds auto-commit, plus the set of paths a caller touched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tavernlab.errors import AccessDenied, InvalidData, NotFound, PathIsDirectory, SkillUnavailable
from tavernlab.paths import WorkspacePath, display
from tavernlab.workspace.roots import (
    DEFAULT_ROOTS,
    READ_ONLY_ROOTS,
    RESERVED_ROOT_NAMES,
    SKILLS_ROOT,
    Access,
    Policy,
)
from tavernlab.workspace.scope._tracking import TEXT_EXTENSIONS, MutationTracker, is_text_file
from tavernlab.workspace.storage import (
    WorkspaceAppendResult,
    WorkspaceDirectoryEntry,
    WorkspaceDirectoryScan,
    WorkspaceEntry,
    WorkspaceFile,
    WorkspaceFileList,
    WorkspaceFs,
    WorkspaceMetadata,
    WriteGuard,
    decode_text,
    sha256_hex,
    walk_entries,
)

#: The policy (:mod:`tavernlab.workspace.roots._policy`) and the text-mutation tracker
#: (:mod:`tavernlab.workspace.scope._tracking`) live in modules of their own; these names stay
#: importable from here for the view's callers.
__all__ = [
    "DEFAULT_ROOTS", "READ_ONLY_ROOTS", "RESERVED_ROOT_NAMES", "SKILLS_ROOT", "TEXT_EXTENSIONS",
    "Access", "EmptySkillsMount", "MutationTracker", "Policy", "ScopedWorkspaceFs", "SkillsMount",
    "is_text_file",
]

# --- the skills seam -------------------------------------------------------------------------


class SkillsMount(Protocol):
    """What the scoped view needs from the ``skills/`` mount. Paths are always under ``skills``.

    Implementations serve the Invocation's bound skill packages with macro projection
    (docs/js-and-skills.md); sizes report projected lengths.
    """

    def metadata(self, path: WorkspacePath) -> WorkspaceMetadata:
        """Metadata of ``skills`` or a node below it."""

    def read_dir(self, path: WorkspacePath, max_entries: int | None
                 ) -> list[WorkspaceDirectoryEntry]:
        """One level below ``skills`` or a directory in it, sorted by path."""

    def read_file(self, path: WorkspacePath, max_bytes: int | None) -> bytes:
        """The projected bytes of a skill file."""


class EmptySkillsMount:
    """The ``skills/`` mount of an Invocation with no bound skills: an empty directory."""

    def metadata(self, path: WorkspacePath) -> WorkspaceMetadata:
        """``skills`` is an empty directory; anything below it is not available."""
        if len(path.parts) == 1:
            return WorkspaceMetadata("directory", 0)
        raise _skill_unavailable(path)

    def read_dir(self, path: WorkspacePath, max_entries: int | None
                 ) -> list[WorkspaceDirectoryEntry]:
        """No children."""
        self.metadata(path)
        return []

    def read_file(self, path: WorkspacePath, max_bytes: int | None) -> bytes:
        """``skills`` is a directory; nothing below it exists."""
        if len(path.parts) == 1:
            raise PathIsDirectory(path.text)
        raise _skill_unavailable(path)


def _skill_unavailable(path: WorkspacePath) -> SkillUnavailable:
    return SkillUnavailable(path.parts[1], path=path.text)


# --- the scoped view ----------------------------------------------------------------------


class ScopedWorkspaceFs:
    """The Invocation's policy view: same operations as ``WorkspaceFs``, checked and tracked.

    ``check`` is called before every operation (the shell and the sandbox pass a function
    that raises :class:`~tavernlab.errors.Cancelled` once cancellation was requested, so new
    operations fail while those already started complete).
    """

    def __init__(self, fs: WorkspaceFs, policy: Policy, *,
                 skills: SkillsMount | None = None,
                 tracker: MutationTracker | None = None,
                 check: Callable[[], None] | None = None) -> None:
        self.fs = fs
        self.policy = policy
        self.skills: SkillsMount = skills if skills is not None else EmptySkillsMount()
        self.tracker = tracker if tracker is not None else MutationTracker()
        self.check = check

    def derive(self, *, tracker: MutationTracker | None = None,
               check: Callable[[], None] | None = None) -> ScopedWorkspaceFs:
        """The same view (same storage, policy and mount) with another tracker or check."""
        return ScopedWorkspaceFs(self.fs, self.policy, skills=self.skills,
                                 tracker=tracker if tracker is not None else self.tracker,
                                 check=check)

    # -- policy helpers --------------------------------------------------------------------

    def _begin(self) -> None:
        if self.check is not None:
            self.check()

    def require_visible(self, path: WorkspacePath | None) -> None:
        """Raise ``WorkspaceAccessDenied(read)`` unless ``path`` is visible."""
        if not self.policy.is_visible(path):
            raise AccessDenied(display(path), "read")

    def require_writable(self, path: WorkspacePath | None) -> None:
        """Raise ``WorkspaceAccessDenied(write)`` unless ``path`` is writable."""
        if not self.policy.is_writable(path):
            raise AccessDenied(display(path), "write")

    def is_visible(self, path: WorkspacePath | None) -> bool:
        """Whether the policy lets this Invocation read ``path``."""
        return self.policy.is_visible(path)

    def is_writable(self, path: WorkspacePath | None) -> bool:
        """Whether the policy lets this Invocation write ``path``."""
        return self.policy.is_writable(path)

    @staticmethod
    def _in_skills(path: WorkspacePath | None) -> bool:
        return path is not None and path.root == SKILLS_ROOT

    # -- queries ------------------------------------------------------------------------------

    def read_file(self, path: WorkspacePath, max_bytes: int | None) -> bytes:
        """The bytes of a visible file (projected under ``skills/``)."""
        self._begin()
        self.require_visible(path)
        if self._in_skills(path):
            return self.skills.read_file(path, max_bytes)
        return self.fs.read_file(path, max_bytes)

    def read_text(self, path: WorkspacePath) -> WorkspaceFile:
        """A visible file as UTF-8 text with its digest."""
        data = self.read_file(path, None)
        return WorkspaceFile(path.text, decode_text(path.text, data), len(data), sha256_hex(data))

    def metadata(self, path: WorkspacePath | None) -> WorkspaceMetadata:
        """Metadata of the logical root or a visible node."""
        self._begin()
        self.require_visible(path)
        if path is None:
            return WorkspaceMetadata("directory", 0)
        if self._in_skills(path):
            return self.skills.metadata(path)
        return self.fs.metadata(path)

    def exists(self, path: WorkspacePath | None) -> bool:
        """False for a missing path *and* for one this Invocation may not read; never raises
        for policy reasons."""
        if not self.policy.is_visible(path):
            return False
        try:
            self.metadata(path)
        except (NotFound, AccessDenied):
            return False
        return True

    def read_dir(self, path: WorkspacePath | None, max_entries: int | None
                 ) -> list[WorkspaceDirectoryEntry]:
        """One level of a visible directory; the logical root lists exactly the visible roots.

        More children (or more roots) than ``max_entries`` fails instead of truncating, and
        so does a symlink or special child (use :meth:`scan_dir` to see those as refused).
        """
        return self.scan_dir(path, max_entries).strict()

    def scan_dir(self, path: WorkspacePath | None, max_entries: int | None
                 ) -> WorkspaceDirectoryScan:
        """One level of a visible directory with its refused children (symlinks, special
        files) reported instead of failing; see ``WorkspaceFs.scan_dir``."""
        self._begin()
        self.require_visible(path)
        if path is None:
            if max_entries is not None and len(self.policy.visible_roots) > max_entries:
                raise InvalidData(f"Workspace directory exceeds {max_entries} entries: ")
            return WorkspaceDirectoryScan([
                WorkspaceDirectoryEntry(root, self.metadata(WorkspacePath(root)))
                for root in self.policy.visible_roots])
        if self._in_skills(path):
            return WorkspaceDirectoryScan(self.skills.read_dir(path, max_entries))
        return self.fs.scan_dir(path, max_entries)

    def list_files(self, path: WorkspacePath | None, depth: int, max_entries: int
                   ) -> WorkspaceFileList:
        """Recursive listing of a visible path (see ``WorkspaceFs.list_files``): refused
        entries below it are skipped and listed in ``refused``."""
        self._begin()
        self.require_visible(path)
        if path is not None and not self._in_skills(path):
            return self.fs.list_files(path, depth, max_entries)
        if path is not None and not self.metadata(path).is_dir:
            return WorkspaceFileList([WorkspaceEntry(path.text, "file")], False)
        return walk_entries(lambda p: self.scan_dir(p, None), path, depth, max_entries)

    def digest(self, path: WorkspacePath) -> str | None:
        """SHA-256 of a visible file (projected under ``skills/``), ``None`` when missing."""
        try:
            return sha256_hex(self.read_file(path, None))
        except NotFound:
            return None

    # -- mutations -------------------------------------------------------------------------

    def write_file(self, path: WorkspacePath, data: bytes, guard: WriteGuard) -> str:
        """Guarded write of a writable file (parent must exist); returns its SHA-256."""
        self._begin()
        self.require_writable(path)
        digest = self.fs.write_file(path, data, guard)
        self.tracker.wrote(path)
        return digest

    def write_text(self, path: WorkspacePath, text: str, guard: WriteGuard) -> str:
        """Guarded text write, creating missing parents; returns its SHA-256."""
        self._begin()
        self.require_writable(path)
        digest = self.fs.write_text(path, text, guard)
        self.tracker.wrote(path)
        return digest

    def replace_text(self, path: WorkspacePath, text: str, sha256: str | None) -> str:
        """``workspace.write_file``'s replace of a writable file, one look and one write under
        one hold of the lock (see ``WorkspaceFs.replace_text``): created when missing,
        replaced when its digest is ``sha256``; returns the new SHA-256."""
        self._begin()
        self.require_visible(path)
        self.require_writable(path)
        digest = self.fs.replace_text(path, text, sha256)
        self.tracker.wrote(path)
        return digest

    def append_file(self, path: WorkspacePath, data: bytes) -> None:
        """Native append to a writable file (created if missing)."""
        self._begin()
        self.require_writable(path)
        self.fs.append_file(path, data)
        self.tracker.wrote(path)

    def append_text(self, path: WorkspacePath, text: str, *, parents: bool = False
                    ) -> WorkspaceAppendResult:
        """Text append to a writable file; returns the whole new text and the old digest.
        ``parents`` creates missing parent directories first."""
        self._begin()
        self.require_writable(path)
        result = self.fs.append_text(path, text, parents=parents)
        self.tracker.wrote(path)
        return result

    def create_dir(self, path: WorkspacePath, recursive: bool) -> None:
        """``mkdir`` / ``mkdir -p`` of a writable path; the path and every directory the
        port made for it count as touched."""
        self._begin()
        self.require_writable(path)
        made = self.fs.create_dir(path, recursive)
        self.tracker.made_dirs(path, made)

    def remove(self, path: WorkspacePath, recursive: bool) -> None:
        """Remove a writable file or directory; clears the candidate when it goes with it."""
        self._begin()
        self.require_writable(path)
        self.fs.remove(path, recursive)
        self.tracker.removed(path)

    def rename(self, src: WorkspacePath, dst: WorkspacePath) -> None:
        """Rename between writable paths; the candidate follows it (docs/workspace.md)."""
        self._begin()
        self.require_writable(src)
        self.require_writable(dst)
        kind = self.fs.rename(src, dst)
        self.tracker.renamed(src, dst, directory=kind == "directory")

    def copy_file(self, src: WorkspacePath, dst: WorkspacePath) -> None:
        """Copy a visible file to a writable target (projected bytes out of ``skills/``)."""
        self._begin()
        self.require_visible(src)
        self.require_writable(dst)
        if self._in_skills(src):
            self.fs.write_file(dst, self.skills.read_file(src, None), WriteGuard.unchecked())
        else:
            self.fs.copy_file(src, dst)
        self.tracker.wrote(dst)

