"""``SkillRepository``: installed skills of a lab, by scope, with the version-2 index.

spec/js-and-skills.md section 8.7. Layout under ``<data_root>/_tauritavern/skills/``::

    installed/<scope-dir>/<name>/...   the raw package files
    index/skills.json                  {"version": 2, "skills": [entry...]}
    .staging/                          install work area (emptied after every install)
    .lock                              the repository lock (flock, so it holds across kernels)

Install flow: read and validate the source in memory, each package on its own (an invalid
package is reported in the :class:`SkillInstallReport` and never stops the others) ->
compare the valid packages with the index -> write new packages into ``.staging/`` -> move
them into place (replaced packages are moved aside first) -> save the index. If anything after
the first move fails, including saving the index, every move is undone and the index keeps its
old content. A source without any valid package writes nothing at all.

tavernlab choices where upstream detail is unknown:

* ``on_conflict=None`` (the default) refuses a changed package of an installed name with
  ``skill.conflict`` and upstream's ``conflict_strategy is required`` message, and then installs
  none of the call's packages (the caller's choice is missing, not a package's validity);
  ``"skip"`` keeps the installed one and ``"replace"`` swaps the content (the entry is
  rewritten with the new package's source reference, like upstream).
* Installing from a path records a source reference ``{kind: "directory"|"archive",
  id: <absolute path>, label: <file name>}`` unless ``source=`` says otherwise; inline files
  record one only when ``source=`` is given.
* The index is written to ``index/skills.json.tmp`` and renamed over the index; the fixed
  temporary name is safe because writers hold the repository lock.
* A package folder that exists without an index entry is refused (``skill.invalid_index``)
  rather than overwritten.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from tavernlab.skills.archive import write_archive
from tavernlab.skills.collection import InvalidPackage, SourceScan
from tavernlab.skills.errors import (
    InvalidSkillIndex,
    InvalidSkillPackage,
    SkillConflict,
    SkillError,
    SkillNotFound,
    SkillStorageError,
)
from tavernlab.skills.index import (
    GLOBAL_SCOPE,
    INDEX_VERSION,
    IndexModel,
    SkillIndexEntry,
    SkillIndexFile,
    SkillScope,
    SkillSourceRef,
)
from tavernlab.skills.package import SkillPackage, validate_skill_name
from tavernlab.skills.source import is_archive, load_directory, load_inline, load_source
from tavernlab.workspace.fs import WorkspaceLock

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
    packages that failed validation (each with its origin and message; spec 8.7).

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


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def _storage_error(what: str, exc: OSError) -> SkillStorageError:
    return SkillStorageError(f"{what}: {exc.strerror or exc}")


class SkillRepository:
    """The skills installed in one lab (``lab.skills``), stored under ``data_root``."""

    def __init__(self, data_root: Path | str) -> None:
        self.data_root = Path(data_root)
        self.root = self.data_root / "_tauritavern" / "skills"
        self.installed_root = self.root / "installed"
        self.index_path = self.root / "index" / "skills.json"
        self.staging_root = self.root / ".staging"
        self._lock = WorkspaceLock(self.root / ".lock")

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
        now = datetime.now(UTC)
        self._ensure_layout()
        with self._lock.exclusive():
            index = self._load_index()
            plans: list[tuple[SkillPackage, SkillIndexEntry, InstallAction]] = []
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
               plans: list[tuple[SkillPackage, SkillIndexEntry, InstallAction]]
               ) -> list[SkillInstallResult]:
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
        """Stage, move into place, save the index; undo every move if any step fails."""
        staging = self.staging_root / f"import-{uuid.uuid4().hex}"
        undo: list[Callable[[], None]] = []
        try:
            scope_dir = self.installed_root / scope.dir_name
            for package, _ in writes:
                self._stage(staging / "new" / package.name, package.contents)
            if writes and not _is_real_dir(scope_dir):
                scope_dir.mkdir()
                undo.append(scope_dir.rmdir)
            for package, action in writes:
                target = scope_dir / package.name
                if action == "replaced" and _is_real_dir(target):
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
            self._save_index(index)
        except BaseException as exc:
            for step in reversed(undo):
                with contextlib.suppress(OSError):
                    step()
            if isinstance(exc, OSError):
                raise _storage_error("Failed to install Skill", exc) from None
            raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    @staticmethod
    def _stage(folder: Path, contents: Mapping[str, bytes]) -> None:
        for path, data in contents.items():
            target = folder.joinpath(*path.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

    # -- the index -------------------------------------------------------------------------------

    def _ensure_layout(self) -> None:
        try:
            for folder in (self.installed_root, self.index_path.parent, self.staging_root):
                folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _storage_error(f"Failed to create Skill storage in '{self.root}'", exc) \
                from None

    def _has_installed_dirs(self) -> bool:
        try:
            with os.scandir(self.installed_root) as entries:
                return any(e.is_dir(follow_symlinks=False) for e in entries)
        except FileNotFoundError:
            return False

    def _load_index(self) -> SkillIndexFile:
        """The current index (version 2); migrates a version-1 index first. Hold the lock."""
        try:
            raw = self.index_path.read_bytes()
        except FileNotFoundError:
            if self._has_installed_dirs():
                raise InvalidSkillIndex(
                    "Skill index is missing while installed skills exist") from None
            return SkillIndexFile(version=INDEX_VERSION)
        except OSError as exc:
            raise InvalidSkillIndex(f"Failed to read Skill index '{self.index_path}': "
                                    f"{exc.strerror or exc}") from None
        try:
            index = SkillIndexFile.model_validate(json.loads(raw))
        except (ValueError, ValidationError, SkillError) as exc:
            reason = " ".join(str(exc).split())
            raise InvalidSkillIndex(f"Invalid Skill index '{self.index_path}': {reason}") \
                from None
        if index.version == 1:
            return self._migrate_v1(index)
        if index.version != INDEX_VERSION:
            raise InvalidSkillIndex(f"Unsupported Skill index version {index.version}")
        self._check_index(index)
        return index

    @staticmethod
    def _check_index(index: SkillIndexFile) -> None:
        seen: set[tuple[str, str]] = set()
        for entry in index.skills:
            try:
                validate_skill_name(entry.name)
            except InvalidSkillPackage as exc:
                raise InvalidSkillIndex(f"Invalid Skill index entry '{entry.name}': "
                                        f"{exc.message}") from None
            key = (entry.scope.key, entry.name)
            if key in seen:
                raise InvalidSkillIndex(f"Duplicate Skill index entry: {key[0]}/{key[1]}")
            seen.add(key)

    def _save_index(self, index: SkillIndexFile) -> None:
        index.version = INDEX_VERSION
        index.sort()
        text = json.dumps(index.model_dump(by_alias=True, exclude_none=True, mode="json"),
                          indent=2, ensure_ascii=False) + "\n"
        temp = self.index_path.with_name(self.index_path.name + ".tmp")
        try:
            with open(temp, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temp, self.index_path)
        except OSError as exc:
            if not _is_real_dir(temp):
                with contextlib.suppress(OSError):
                    temp.unlink()
            raise _storage_error(f"Failed to save Skill index '{self.index_path}'", exc) \
                from None

    def _migrate_v1(self, index: SkillIndexFile) -> SkillIndexFile:
        """Move every version-1 skill (``installed/<name>/``) to ``installed/global/<name>/``
        and save the index as version 2; on failure every move is undone."""
        for entry in index.skills:
            entry.scope = GLOBAL_SCOPE
        self._check_index(index)
        for entry in index.skills:
            if not _is_real_dir(self.installed_root / entry.name):
                raise SkillNotFound(
                    f"Skill directory not found during v1 migration: {entry.name}")
        parked = self.staging_root / f"migrate-{uuid.uuid4().hex}"
        moves: list[tuple[Path, Path]] = []
        created: list[Path] = []
        try:
            parked.mkdir(parents=True)
            for entry in index.skills:
                os.rename(self.installed_root / entry.name, parked / entry.name)
                moves.append((self.installed_root / entry.name, parked / entry.name))
            global_dir = self.installed_root / GLOBAL_SCOPE.dir_name
            if not _is_real_dir(global_dir):
                global_dir.mkdir()
                created.append(global_dir)
            for entry in index.skills:
                target = global_dir / entry.name
                if os.path.lexists(target):
                    raise InvalidSkillIndex(
                        f"Skill index v1 migration target already exists for '{entry.name}'")
                os.rename(parked / entry.name, target)
                moves.append((parked / entry.name, target))
            self._save_index(index)
        except BaseException as exc:
            for source, target in reversed(moves):
                with contextlib.suppress(OSError):
                    os.rename(target, source)
            for folder in created:
                with contextlib.suppress(OSError):
                    folder.rmdir()
            if isinstance(exc, OSError):
                raise _storage_error("Failed to migrate the version-1 Skill index", exc) \
                    from None
            raise
        finally:
            shutil.rmtree(parked, ignore_errors=True)
        return index

    def _read_index(self) -> SkillIndexFile:
        """The index for a reader: empty when the repository was never used."""
        if not self.root.exists():
            return SkillIndexFile(version=INDEX_VERSION)
        with self._lock.exclusive():
            return self._load_index()

    # -- reading ------------------------------------------------------------------------------

    def get(self, name: str, scope: SkillScope | str = GLOBAL_SCOPE) -> SkillIndexEntry:
        """The index entry of ``name`` in ``scope``; ``skill.not_found`` otherwise."""
        target = SkillScope.parse(scope)
        entry = self._read_index().find(target, name)
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
        if not _is_real_dir(folder):
            raise SkillNotFound(f"Skill directory not found: {SkillScope.parse(scope).key}/"
                                f"{name}")
        (package,) = load_directory(folder).require_valid()
        return write_archive(package.contents)

    def list(self, scope: SkillScope | str | None = None) -> list[SkillIndexEntry]:
        """Installed skills, ordered by scope key and name (all scopes, or one)."""
        entries = self._read_index().skills
        if scope is None:
            return entries
        target = SkillScope.parse(scope)
        return [e for e in entries if e.scope == target]
