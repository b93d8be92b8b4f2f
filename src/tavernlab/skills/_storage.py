"""The on-disk side of the skill repository: its folders and ``index/skills.json``.

See docs/js-and-skills.md. :class:`SkillIndexStore` reads, checks, saves and migrates
the index (version 2; a version-1 index is migrated on read); the repository
(:mod:`tavernlab.skills._repository`) holds the lock while it calls it. :func:`fresh_dir` makes
the work folders under ``.staging/`` with names from an :class:`~tavernlab.clock.IdFactory`.

tavernlab choices where upstream detail is unknown:

* The index is written to ``index/skills.json.tmp`` and renamed over the index; the fixed
  temporary name is safe because writers hold the repository lock.
* A work folder is never reused: when a name from the id factory already exists (a folder left
  by a process that died, which may hold the only copy of a replaced package), the next id is
  taken instead, so deterministic ids (``SequentialIds``) are safe across restarts.
* An install is atomic from the index's point of view. Before it moves any folder it writes
  its plan (:data:`PLAN_NAME`: the scope, and each package's name, action and new hash) into
  its work folder; the index save is the commit. A process killed in the middle leaves the
  work folder, and the next process that loads the index (under the lock) finishes the job
  (:meth:`SkillIndexStore.recover`): when the index holds every planned package with its new
  hash, the new folders are moved into place; otherwise every move is undone (the replaced
  folders moved back, the folders of new names removed). Either way every listed skill's
  folder holds the files of its entry, and the work folder is removed. A work folder without
  a plan (killed while staging the new files, before any move) is simply removed, unless it
  holds a folder moved aside (left by a version that wrote no plan: it may hold the only copy
  of a package, so it stays); folders of other work (a version-1 migration) are left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from pathlib import Path

from pydantic import ValidationError

from tavernlab.clock import IdFactory
from tavernlab.locks import ReadWriteLock
from tavernlab.skills._errors import (
    InvalidSkillIndex,
    InvalidSkillPackage,
    SkillError,
    SkillNotFound,
    SkillStorageError,
)
from tavernlab.skills._index import GLOBAL_SCOPE, INDEX_VERSION, SkillIndexFile, SkillScope
from tavernlab.skills._package import validate_skill_name
from tavernlab.workspace.storage import publish, read_regular


def is_real_dir(path: Path) -> bool:
    """Whether ``path`` is a directory itself (not a symlink to one)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def storage_error(what: str, exc: OSError) -> SkillStorageError:
    """``<what>: <OS reason>`` as a :class:`SkillStorageError`."""
    return SkillStorageError(f"{what}: {exc.strerror or exc}")


#: The plan of an install, in its work folder (see the module docstring).
PLAN_NAME = "plan.json"
#: Prefix of the work folders of installs (``<prefix>_<id>``).
IMPORT_PREFIX = "import"


def write_plan(folder: Path, scope: SkillScope, packages: list[tuple[str, str, str]]) -> None:
    """Write the plan of the install working in ``folder``: ``(name, action, new hash)`` of
    each package it moves into ``scope`` (whole: written beside, then renamed)."""
    data = {"scope": scope.model_dump(by_alias=True, exclude_none=True, mode="json"),
            "packages": [{"name": n, "action": a, "hash": h} for n, a, h in packages]}
    publish(folder / PLAN_NAME, json.dumps(data, ensure_ascii=False).encode("utf-8"),
            temp=f"{folder / PLAN_NAME}.tmp")


def fresh_dir(parent: Path, prefix: str, ids: IdFactory) -> Path:
    """Create and return a new folder ``<parent>/<id>`` that did not exist before."""
    while True:
        folder = parent / ids.new(prefix)
        try:
            folder.mkdir(parents=True)
        except FileExistsError:
            continue
        return folder


class SkillIndexStore:
    """The index of one repository and the folders it describes. Hold the repository lock
    around every call except :meth:`read`, which takes it."""

    def __init__(self, root: Path, ids: IdFactory, lock: ReadWriteLock) -> None:
        self.root = root
        self.installed_root = root / "installed"
        self.index_path = root / "index" / "skills.json"
        self.staging_root = root / ".staging"
        self.ids = ids
        self._lock = lock

    def ensure_layout(self) -> None:
        """Create the installed, index and staging folders when missing."""
        try:
            for folder in (self.installed_root, self.index_path.parent, self.staging_root):
                folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise storage_error(f"Failed to create Skill storage in '{self.root}'", exc) \
                from None

    def _has_installed_dirs(self) -> bool:
        try:
            with os.scandir(self.installed_root) as entries:
                return any(e.is_dir(follow_symlinks=False) for e in entries)
        except FileNotFoundError:
            return False

    def load(self) -> SkillIndexFile:
        """The current index (version 2); migrates a version-1 index first, and finishes
        what a killed install left (:meth:`recover`). Hold the lock."""
        index = self._load()
        if self._leftovers():
            self.recover(index)
        return index

    def _leftovers(self) -> list[Path]:
        """The work folders of installs that did not finish (their process died)."""
        try:
            with os.scandir(self.staging_root) as entries:
                return sorted(Path(e.path) for e in entries
                              if e.name.startswith(IMPORT_PREFIX + "_")
                              and e.is_dir(follow_symlinks=False))
        except FileNotFoundError:
            return []

    def recover(self, index: SkillIndexFile) -> list[str]:
        """Finish or undo every install a killed process left (see the module docstring),
        given the index as saved; returns the names of the work folders removed. Hold the
        lock."""
        removed = []
        for folder in self._leftovers():
            try:
                plan = json.loads((folder / PLAN_NAME).read_text(encoding="utf-8"))
            except FileNotFoundError:
                if os.path.lexists(folder / "old"):
                    continue  # no plan, yet a folder moved aside: an older version's leftover
                plan = None  # killed while staging: nothing was moved yet
            except (OSError, ValueError) as exc:
                raise InvalidSkillIndex(f"Unreadable install plan '{folder / PLAN_NAME}': "
                                        f"{exc}") from None
            if plan is not None:
                try:
                    self._settle(index, folder, plan)
                except OSError as exc:
                    raise storage_error("Failed to repair an interrupted Skill install",
                                        exc) from None
                except (KeyError, TypeError, ValueError) as exc:  # not a plan this wrote
                    raise InvalidSkillIndex(f"Invalid install plan '{folder / PLAN_NAME}': "
                                            f"{exc!r}") from None
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
        return removed

    def _settle(self, index: SkillIndexFile, folder: Path, plan: dict[str, object]) -> None:
        """Move the folders of one interrupted install so they match ``index``."""
        scope = SkillScope.model_validate(plan["scope"])
        packages = plan["packages"]
        if not isinstance(packages, list):
            raise TypeError("packages is not a list")
        scope_dir = self.installed_root / scope.dir_name
        committed = all(
            (entry := index.find(scope, p["name"])) is not None
            and entry.installed_hash == p["hash"] for p in packages)
        for package in packages:
            name = package["name"]
            target, new, old = scope_dir / name, folder / "new" / name, folder / "old" / name
            if committed:
                if os.path.lexists(new):  # not moved in yet
                    if os.path.lexists(target):
                        old.parent.mkdir(parents=True, exist_ok=True)
                        os.rename(target, folder / "old" / f"{name}.superseded")
                    scope_dir.mkdir(parents=True, exist_ok=True)
                    os.rename(new, target)
            elif os.path.lexists(old):  # a replaced folder was moved aside: put it back
                if os.path.lexists(target):
                    shutil.rmtree(target)
                os.rename(old, target)
            elif (package["action"] == "installed" and not os.path.lexists(new)
                  and is_real_dir(target)):
                shutil.rmtree(target)  # a new name moved in before the index was saved

    def _load(self) -> SkillIndexFile:
        try:
            raw = read_regular(self.index_path)  # a FIFO or device is refused, not waited on
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
        self.check(index)
        return index

    @staticmethod
    def check(index: SkillIndexFile) -> None:
        """Refuse an index whose entries have an invalid name or repeat a scope and name."""
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

    def save(self, index: SkillIndexFile) -> None:
        """Write ``index`` (current version, sorted) atomically as pretty JSON."""
        index.version = INDEX_VERSION
        index.sort()
        text = json.dumps(index.model_dump(by_alias=True, exclude_none=True, mode="json"),
                          indent=2, ensure_ascii=False) + "\n"
        try:
            publish(self.index_path, text.encode("utf-8"),
                    temp=f"{self.index_path}.tmp")
        except OSError as exc:
            raise storage_error(f"Failed to save Skill index '{self.index_path}'", exc) \
                from None

    def _migrate_v1(self, index: SkillIndexFile) -> SkillIndexFile:
        """Move every version-1 skill (``installed/<name>/``) to ``installed/global/<name>/``
        and save the index as version 2; on failure every move is undone."""
        for entry in index.skills:
            entry.scope = GLOBAL_SCOPE
        self.check(index)
        for entry in index.skills:
            if not is_real_dir(self.installed_root / entry.name):
                raise SkillNotFound(
                    f"Skill directory not found during v1 migration: {entry.name}")
        moves: list[tuple[Path, Path]] = []
        created: list[Path] = []
        parked: Path | None = None
        try:
            parked = fresh_dir(self.staging_root, "migrate", self.ids)
            for entry in index.skills:
                os.rename(self.installed_root / entry.name, parked / entry.name)
                moves.append((self.installed_root / entry.name, parked / entry.name))
            global_dir = self.installed_root / GLOBAL_SCOPE.dir_name
            if not is_real_dir(global_dir):
                global_dir.mkdir()
                created.append(global_dir)
            for entry in index.skills:
                target = global_dir / entry.name
                if os.path.lexists(target):
                    raise InvalidSkillIndex(
                        f"Skill index v1 migration target already exists for '{entry.name}'")
                os.rename(parked / entry.name, target)
                moves.append((parked / entry.name, target))
            self.save(index)
        except BaseException as exc:
            for source, target in reversed(moves):
                with contextlib.suppress(OSError):
                    os.rename(target, source)
            for folder in created:
                with contextlib.suppress(OSError):
                    folder.rmdir()
            if isinstance(exc, OSError):
                raise storage_error("Failed to migrate the version-1 Skill index", exc) \
                    from None
            raise
        finally:
            if parked is not None:
                shutil.rmtree(parked, ignore_errors=True)
        return index

    def read(self) -> SkillIndexFile:
        """The index for a reader: empty when the repository was never used."""
        if not self.root.exists():
            return SkillIndexFile(version=INDEX_VERSION)
        with self._lock.exclusive():
            return self.load()
