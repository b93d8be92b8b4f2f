"""``SkillRepository``: installed skills of a lab, by scope, with the version-2 index.

See docs/js-and-skills.md. Layout under ``<data_root>/_tauritavern/skills/``::

    installed/<scope-dir>/<name>/...   the raw package files
    index/skills.json                  {"version": 2, "skills": [entry...]}
    .staging/                          install work area (emptied after every install)
    .lock                              the repository lock (flock, so it holds across kernels)

Install flow: read and validate the source in memory, each package on its own (an invalid
package is reported in the :class:`SkillInstallReport` and never stops the others) ->
compare the valid packages with the index -> write new packages into ``.staging/`` with the
install's plan -> move them into place (replaced packages are moved aside first) -> save the
index. If anything after the first move fails, including saving the index, every move is undone
and the index keeps its old content; if the process is killed instead, the next one to load the
index finishes or undoes the install by its plan (:mod:`tavernlab.skills._storage`). A source
without any valid package writes nothing at all.

Time (``installedAt``) and the names of work folders come from the ``clock`` and ``ids`` the
repository is given (:mod:`tavernlab.clock`; the system ones by default), so a lab with a fixed
clock and sequential ids installs byte-identical indexes. The index itself is kept by
:class:`~tavernlab.skills._storage.SkillIndexStore`; outcomes are the types of
:mod:`tavernlab.skills._report`.

tavernlab choices where upstream detail is unknown:

* ``on_conflict=None`` (the default) refuses a changed package of an installed name with
  ``skill.conflict`` and upstream's ``conflict_strategy is required`` message, and then installs
  none of the call's packages (the caller's choice is missing, not a package's validity);
  ``"skip"`` keeps the installed one and ``"replace"`` swaps the content (the entry is
  rewritten with the new package's source reference, like upstream).
* Installing from a path records a source reference ``{kind: "directory"|"archive",
  id: <absolute path>, label: <file name>}`` unless ``source=`` says otherwise; inline files
  record one only when ``source=`` is given.
* A package folder that exists without an index entry is refused (``skill.invalid_index``)
  rather than overwritten.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from functools import partial
from pathlib import Path

from tavernlab.clock import RANDOM_IDS, SYSTEM_CLOCK, Clock, IdFactory
from tavernlab.locks import ReadWriteLock
from tavernlab.skills._archive import write_archive
from tavernlab.skills._collection import SourceScan
from tavernlab.skills._develop import DevelopmentSkill, SkillDevelopment
from tavernlab.skills._errors import (
    InvalidSkillIndex,
    InvalidSkillPackage,
    SkillConflict,
    SkillNotFound,
)
from tavernlab.skills._index import (
    GLOBAL_SCOPE,
    SkillIndexEntry,
    SkillIndexFile,
    SkillScope,
    SkillSourceRef,
)
from tavernlab.skills._package import SkillPackage, validate_skill_name
from tavernlab.skills._report import (
    ConflictChoice,
    InstallAction,
    SkillInstallReport,
    SkillInstallResult,
    SkillSource,
    conflict_message,
)
from tavernlab.skills._source import is_archive, load_directory, load_inline, load_source
from tavernlab.skills._storage import (
    IMPORT_PREFIX,
    SkillIndexStore,
    fresh_dir,
    is_real_dir,
    storage_error,
    write_plan,
)

Plan = tuple[SkillPackage, SkillIndexEntry, InstallAction]


def _entry(package: SkillPackage, scope: SkillScope, now: datetime,
           refs: list[SkillSourceRef]) -> SkillIndexEntry:
    sidecar = package.sidecar

    def trimmed(value: str | None) -> str | None:
        return (value or "").strip() or None

    return SkillIndexEntry(
        scope=scope, name=package.name, description=package.description,
        display_name=trimmed(sidecar.display_name) if sidecar else None,
        source_kind=trimmed(sidecar.source_kind) if sidecar else None,
        license=package.frontmatter.license, author=package.frontmatter.author,
        version=package.frontmatter.version, tags=package.tags,
        installed_hash=package.installed_hash, file_count=len(package.files),
        total_bytes=package.total_bytes, has_scripts=package.has_scripts,
        has_binary=package.has_binary, installed_at=now, source_refs=refs)


class SkillRepository:
    """The skills installed in one lab (``lab.skills``), stored under ``data_root``."""

    def __init__(self, data_root: Path | str, *, clock: Clock = SYSTEM_CLOCK,
                 ids: IdFactory = RANDOM_IDS) -> None:
        self.data_root = Path(data_root)
        self.root = self.data_root / "_tauritavern" / "skills"
        self.installed_root = self.root / "installed"
        self.index_path = self.root / "index" / "skills.json"
        self.staging_root = self.root / ".staging"
        self._lock = ReadWriteLock(self.root / ".lock")
        self.clock = clock
        self._development: SkillDevelopment | None = None
        self.store = SkillIndexStore(self.root, ids, self._lock)
        self.installed_root = self.store.installed_root
        self.index_path = self.store.index_path
        self.staging_root = self.store.staging_root

    # -- sources --------------------------------------------------------------------------

    def validate(self, path: Path | str) -> SourceScan:
        """Check a directory or ZIP without installing it: its valid packages (files, hashes,
        warnings) and its invalid ones. Raises only when the source itself is bad."""
        return load_source(path)

    def install(self, path: Path | str, *, scope: SkillScope | str = GLOBAL_SCOPE,
                on_conflict: ConflictChoice | None = None,
                source: SkillSource | None = None) -> SkillInstallReport:
        """Install every valid skill found in a directory or ZIP (``.ttskill`` too) into
        ``scope`` (``global``, ``preset:<id>``, ``profile:<id>``, ``character:<id>``); the
        invalid ones are reported in the result (:class:`SkillInstallReport`)."""
        scan = load_source(path)
        if source is None:
            origin = Path(path)
            source = SkillSource("archive" if is_archive(origin) else "directory",
                                 str(origin.resolve()), origin.name)
        return self._install_scan(scan, scope, on_conflict, source)

    def install_files(self, files: Mapping[str, bytes | str], *,
                      scope: SkillScope | str = GLOBAL_SCOPE,
                      on_conflict: ConflictChoice | None = None,
                      source: SkillSource | None = None) -> SkillInstallReport:
        """Install inline files (path -> content), as embedded in a preset or character."""
        return self._install_scan(load_inline(files), scope, on_conflict, source)

    def _install_scan(self, scan: SourceScan, scope: SkillScope | str,
                      on_conflict: ConflictChoice | None,
                      source: SkillSource | None) -> SkillInstallReport:
        report = self.install_packages(scan.packages, scope=scope, on_conflict=on_conflict,
                                       source=source)
        return SkillInstallReport(report.scope, report.results, scan.invalid)

    def install_packages(self, packages: Iterable[SkillPackage], *,
                         scope: SkillScope | str = GLOBAL_SCOPE,
                         on_conflict: ConflictChoice | None = None,
                         source: SkillSource | None = None) -> SkillInstallReport:
        """Install validated packages: new names install, the same hash merges source
        references ("already installed"), a different hash needs ``skip`` or ``replace``
        (without one, :class:`SkillConflict` and nothing is installed). All packages of one
        call are saved with one index write and rolled back together."""
        if on_conflict not in (None, "skip", "replace"):
            raise ValueError("on_conflict must be None, 'skip' or 'replace'")
        target = SkillScope.parse(scope)
        chosen = list(packages)
        names = [p.name for p in chosen]
        if len(set(names)) != len(names):
            raise InvalidSkillPackage("Skill packages to install must have distinct names")
        if not chosen:
            return SkillInstallReport(target, ())
        now = self.clock.now()
        self.store.ensure_layout()
        with self._lock.exclusive():
            index = self.store.load()
            plans: list[Plan] = []
            for package in chosen:
                refs = [source.ref(package.installed_hash)] if source is not None else []
                entry = _entry(package, target, now, refs)
                existing = index.find(target, package.name)
                if existing is None:
                    action: InstallAction = "installed"
                elif existing.installed_hash == package.installed_hash:
                    action = "already_installed"
                elif on_conflict is None:
                    raise SkillConflict(conflict_message(package.name, target))
                else:
                    action = "skipped" if on_conflict == "skip" else "replaced"
                plans.append((package, entry, action))
            return SkillInstallReport(target, tuple(self._apply(index, target, plans)))

    # -- installing ----------------------------------------------------------------------------

    def _apply(self, index: SkillIndexFile, scope: SkillScope,
               plans: list[Plan]) -> list[SkillInstallResult]:
        results: list[SkillInstallResult] = []
        index_changed = False
        writes: list[tuple[SkillPackage, InstallAction]] = []
        for package, entry, action in plans:
            existing = index.find(scope, package.name)
            if action == "already_installed" and existing is not None:
                index_changed |= existing.merge_source_refs(entry.source_refs)
                entry = existing
            elif action == "skipped":
                entry = existing if existing is not None else entry
            else:
                if existing is not None:
                    index.skills.remove(existing)
                index.skills.append(entry)
                index_changed = True
                writes.append((package, action))
            results.append(SkillInstallResult(scope=scope, name=package.name, action=action,
                                              origin=package.origin, skill=entry,
                                              warnings=list(package.warnings)))
        if index_changed:
            self._commit(index, scope, writes)
        return results

    def _commit(self, index: SkillIndexFile, scope: SkillScope,
                writes: list[tuple[SkillPackage, InstallAction]]) -> None:
        """Stage, move into place, save the index; undo every move if any step fails. The
        work folder is removed afterwards - the folders moved aside first, so a kill while
        it is removed never leaves them without the plan that says they are done with - or,
        when an undo step failed, kept for the next load of the index to finish."""
        staging: Path | None = None
        undo: list[Callable[[], None]] = []
        settled = True
        try:
            staging = fresh_dir(self.staging_root, IMPORT_PREFIX, self.store.ids)
            scope_dir = self.installed_root / scope.dir_name
            for package, _ in writes:
                self._stage(staging / "new" / package.name, package.contents)
            write_plan(staging, scope, [(p.name, action, p.installed_hash)
                                        for p, action in writes])
            if writes and not is_real_dir(scope_dir):
                scope_dir.mkdir()
                undo.append(scope_dir.rmdir)
            for package, action in writes:
                target = scope_dir / package.name
                if action == "replaced" and is_real_dir(target):
                    backup = staging / "old" / package.name
                    backup.parent.mkdir(parents=True, exist_ok=True)
                    os.rename(target, backup)
                    undo.append(partial(os.rename, backup, target))
                elif os.path.lexists(target):
                    raise InvalidSkillIndex(
                        f"Skill directory exists without an index entry: "
                        f"{scope.key}/{package.name}")
                os.rename(staging / "new" / package.name, target)
                undo.append(partial(shutil.rmtree, target))
            self.store.save(index)
        except BaseException as exc:
            for step in reversed(undo):
                try:
                    step()
                except OSError:
                    settled = False
            if isinstance(exc, OSError):
                raise storage_error("Failed to install Skill", exc) from None
            raise
        finally:
            if staging is not None and settled:
                shutil.rmtree(staging / "old", ignore_errors=True)
                shutil.rmtree(staging, ignore_errors=True)

    @staticmethod
    def _stage(folder: Path, contents: Mapping[str, bytes]) -> None:
        for path, data in contents.items():
            target = folder.joinpath(*path.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

    # -- development ---------------------------------------------------------------------------

    @property
    def development(self) -> SkillDevelopment:
        """The working directories bound as development skills (see :meth:`develop`)."""
        if self._development is None:
            self._development = SkillDevelopment(self)
        return self._development

    def develop(self, path: Path | str, *, scope: SkillScope | str = GLOBAL_SCOPE
                ) -> DevelopmentSkill:
        """Bind a working directory as a development skill: installed now (``replace``) and
        reinstalled whenever its content changes, checked once per round of every run (see
        :mod:`tavernlab.skills._develop`)."""
        return self.development.develop(path, scope=scope)

    def sync_development(self) -> list[str]:
        """Reinstall the development skills that changed (nothing when none is bound)."""
        return [] if self._development is None else self._development.sync()

    # -- reading ------------------------------------------------------------------------------

    def get(self, name: str, scope: SkillScope | str = GLOBAL_SCOPE) -> SkillIndexEntry:
        """The index entry of ``name`` in ``scope``; ``skill.not_found`` otherwise."""
        target = SkillScope.parse(scope)
        entry = self.store.read().find(target, name)
        if entry is None:
            raise SkillNotFound(f"Skill not found: {target.key}/{name}")
        return entry

    def package_dir(self, name: str, scope: SkillScope | str = GLOBAL_SCOPE) -> Path:
        """Where the raw files of ``name`` in ``scope`` live (whether or not it exists)."""
        return self.installed_root / SkillScope.parse(scope).dir_name / validate_skill_name(name)

    def export(self, name: str, scope: SkillScope | str = GLOBAL_SCOPE) -> bytes:
        """A ZIP of the installed raw files: importing it again gives the same hash."""
        self.get(name, scope)
        folder = self.package_dir(name, scope)
        if not is_real_dir(folder):
            raise SkillNotFound(f"Skill directory not found: {SkillScope.parse(scope).key}/"
                                f"{name}")
        (package,) = load_directory(folder).require_valid()
        return write_archive(package.contents)

    def list(self, scope: SkillScope | str | None = None) -> list[SkillIndexEntry]:
        """Installed skills, ordered by scope key and name (all scopes, or one)."""
        entries = self.store.read().skills
        if scope is None:
            return entries
        target = SkillScope.parse(scope)
        return [e for e in entries if e.scope == target]
