"""Persist versions of a chat (docs/persist.md).

A chat's stable persistent content lives in immutable states
``persistent-states/<state-id>/{manifest.json, persist/...}``. A run starts from a base state
(its ``persist/`` holds hard links to the state's files, and ``input/persist_snapshot.json``
records the starting point); the model edits ``persist/`` like any root; on
``workspace.finish`` the run publishes the tree as a new state with the exact change list
(unchanged files linked, changed ones copied: :mod:`tavernlab.workspace.persist._persist_tree`), or
reuses a state it published earlier when the tree equals it.

tavernlab choices where upstream is unknown (documented here and in the docstrings below):

* State ids are ``pst_`` + a UUID v4 as 32 hex characters.
* Change records are ``{"kind": "added"|"modified"|"deleted"|"directoryAdded"|
  "directoryDeleted", "path", "sha256"?, "bytes"?}``, ordered by path; at one path a file that
  became a directory is ``deleted`` then ``directoryAdded`` and the reverse is
  ``directoryDeleted`` then ``added``.
* ``directories`` lists every directory of the tree (empty or not).
* Revision reuse: ``revision_of`` names the state this run published earlier; the new tree is
  compared with that state *and the states it revised in turn* (the run's revision chain), and
  the first equal one is returned unchanged. So revising S1 into S2 by adding an empty
  directory, then removing it again, returns S1.
* Publication is crash-safe: the tree is linked and copied to
  ``persistent-states/.<id>.tmp-<uuid>``, the manifest written, and the directory renamed into
  place; leftovers of a killed publisher are hidden (dot names are never states) and removed
  by the next publication, which holds the repository-wide lock.
* A run's start checks the base state's tree against its manifest by paths and sizes, not by
  re-reading every file (its files are never written after publication).
"""

from __future__ import annotations

import contextlib
import json.encoder
import os
import shutil
import uuid
from collections.abc import Callable
from datetime import datetime
from functools import partial
from itertools import islice
from operator import itemgetter, le
from pathlib import Path

from pydantic import Field, PrivateAttr, ValidationError
from pydantic_core import PydanticSerializationError

import tavernlab.layout as layout
from tavernlab.clock import RANDOM_IDS, SYSTEM_CLOCK, Clock, IdFactory
from tavernlab.errors import InvalidData, PersistStateError
from tavernlab.events import collector_paused
from tavernlab.locks import file_lock
from tavernlab.ondisk import Model
from tavernlab.workspace.persist._persist_tree import (
    ChangeList,
    FileEntry,
    FileList,
    NotTheManifest,
    Tree,
    copy_tree,
    diff_trees,
    implied_directories,
    link_or_copy,
    link_tree,
    materialize,
    scan_tree,
)
from tavernlab.workspace.records import read_json, write_model, write_text_atomically
from tavernlab.workspace.roots import check_dir_name
from tavernlab.workspace.storage import LabLinks, ParsedFiles, identity

#: A JSON string as ``json`` writes it with non-ASCII kept (pydantic-core escapes alike).
_json_string: Callable[[str], str] = json.encoder.encode_basestring

STATES_DIR = "persistent-states"
MANIFEST = "manifest.json"
PERSIST_ROOT = layout.PERSIST
SUPPORTED_VERSIONS = (1, 2)


class PersistSnapshot(Model):
    """``input/persist_snapshot.json``: where a run's ``persist/`` started.

    Snapshots without ``directories`` (older writers) are accepted; their directory set is
    derived from the files' parents.
    """

    base_state_id: str | None = None
    files: FileList = Field(default_factory=list)
    directories: list[str] | None = None
    #: ``(files, their count, the "files" member as the model writer renders it)``, when a
    #: run's start had that text already (its base state's manifest lists the same files in
    #: the same order, rendered alike); used while ``files`` is still that list, as long.
    _files_member: tuple[list[FileEntry], int, str] | None = PrivateAttr(default=None)

    def json_text(self) -> str:
        """The snapshot's file text: what :func:`~tavernlab.workspace.records.write_model`
        writes for it (indented by two, camelCase keys in field order, an absent base or
        directory list left out), rendered directly (a large state's snapshot lists every
        file, and a dict per entry for the generic serializer cost more than the text)."""
        string = _json_string
        parts = [] if self.base_state_id is None else [
            f'  "baseStateId": {string(self.base_state_id)}']
        known = self._files_member
        if known is not None and known[0] is self.files and known[1] == len(self.files):
            parts.append(known[2])
        elif self.files:
            entries = ",\n".join([
                f'    {{\n      "path": {string(path)},\n      "sha256": {string(digest)},\n'
                f'      "bytes": {size}\n    }}' for path, digest, size in self.files])
            parts.append(f'  "files": [\n{entries}\n  ]')
        else:
            parts.append('  "files": []')
        if self.directories is not None:
            names = ",\n".join([f"    {string(name)}" for name in self.directories])
            parts.append(f'  "directories": [\n{names}\n  ]' if names
                         else '  "directories": []')
        # joined, not concatenated: growing a text of megabytes in place costs a copy more
        return "".join(["{\n", ",\n".join(parts), "\n}"])

    def write(self, path: Path) -> None:
        """Write the snapshot to ``path`` (:meth:`json_text`, atomically); a file name that
        is not UTF-8 goes through :func:`~tavernlab.workspace.records.write_model`, which
        handles it as it does for any model."""
        try:
            write_text_atomically(path, self.json_text())
        except UnicodeEncodeError:
            write_model(path, self)

    def directory_set(self) -> set[str]:
        """The base directories (derived from file parents when not recorded)."""
        if self.directories is not None:
            return set(self.directories)
        return implied_directories(f.path for f in self.files)


class StateManifest(Model):
    """A persist state's ``manifest.json`` (version 2; version 1 lacks ``directories``)."""

    version: int = 2
    state_id: str
    run_id: str
    workspace_id: str
    stable_chat_id: str
    base_state_id: str | None = None
    revision_of: str | None = None
    created_at: datetime
    files: FileList = Field(default_factory=list)
    directories: list[str] | None = None
    changes: ChangeList = Field(default_factory=list)


class PersistRepository:
    """The persist states of one chat workspace (``chats/<workspace-id>/``)."""

    def __init__(self, chat_dir: Path, workspace_id: str, stable_chat_id: str, *,
                 clock: Clock = SYSTEM_CLOCK, ids: IdFactory = RANDOM_IDS) -> None:
        self.chat_dir = chat_dir
        self.clock = clock
        self.ids = ids
        self.states_dir = chat_dir / STATES_DIR
        self.workspace_id = workspace_id
        self.stable_chat_id = stable_chat_id

    def state_dir(self, state_id: str) -> Path:
        """Where a state lives."""
        return self.states_dir / state_id

    def _lock(self) -> contextlib.AbstractContextManager[None]:
        return file_lock(self.chat_dir / ".persistent-states.lock")

    # -- loading and validation --------------------------------------------------------------

    def load(self, state_id: str) -> StateManifest:
        """Load and validate a state; failures carry the upstream ``agent.persistent_state_*``
        code as both ``code`` and message prefix."""
        try:
            check_dir_name(state_id, "persist state id")
        except InvalidData as exc:
            raise _state_error("invalid", f"{state_id}: {exc.message}") from None
        directory = self.state_dir(state_id)
        if not directory.is_dir() or directory.is_symlink():
            raise _state_error("not_found", f"persist state `{state_id}` does not exist")
        path = directory / MANIFEST
        parsed = _MANIFESTS.get(str(path), lambda: self._parsed(state_id, path))
        manifest = (_copied(parsed.manifest) if parsed is not None
                    else self._checked(state_id, path))
        return self._validated(state_id, manifest)

    @staticmethod
    def _parsed(state_id: str, path: Path) -> _Parsed | None:
        """The manifest, if it is exactly well-formed (strict validation straight from the
        JSON bytes, in one pass: a large state's manifest lists every file); ``None`` sends
        it through :meth:`_checked` for the precise error."""
        try:
            manifest = StateManifest.model_validate_json(path.read_bytes(), strict=True)
        except (OSError, ValidationError):
            return None
        return _Parsed(manifest) if manifest.version in SUPPORTED_VERSIONS else None

    def _checked(self, state_id: str, path: Path) -> StateManifest:
        """The manifest parsed step by step, each failure with its own code."""
        try:
            raw = read_json(path)
        except (OSError, ValueError) as exc:
            raise _state_error("invalid", f"manifest of `{state_id}` is unreadable: {exc}"
                               ) from None
        if not isinstance(raw, dict):
            raise _state_error("invalid", f"manifest of `{state_id}` is not an object")
        if raw.get("version") not in SUPPORTED_VERSIONS:
            raise _state_error("version_unsupported",
                               f"persist state `{state_id}` has version {raw.get('version')!r}")
        try:
            return StateManifest.model_validate(raw)
        except ValidationError as exc:
            raise _state_error("invalid", f"manifest of `{state_id}`: {exc.errors()[0]['msg']}"
                               ) from None

    def _validated(self, state_id: str, manifest: StateManifest) -> StateManifest:
        """The checks of :meth:`load` after parsing (identity, workspace, ``persist/``)."""
        directory = self.state_dir(state_id)
        if manifest.version == 1:
            manifest.directories = None
        if manifest.state_id != state_id:
            raise _state_error("manifest_mismatch", f"manifest of `{state_id}` names "
                               f"`{manifest.state_id}`")
        if manifest.workspace_id != self.workspace_id:
            raise _state_error("workspace_mismatch", f"persist state `{state_id}` belongs to "
                               f"`{manifest.workspace_id}`, not `{self.workspace_id}`")
        root = directory / PERSIST_ROOT
        if not root.exists():
            raise _state_error("root_missing", f"persist state `{state_id}` has no persist/")
        if root.is_symlink() or not root.is_dir():
            raise _state_error("root_invalid", f"persist/ of `{state_id}` is not a directory")
        return manifest

    def directories_of(self, manifest: StateManifest) -> set[str]:
        """A state's directory set; for version 1 (no inventory) read from its stored tree."""
        if manifest.directories is not None:
            return set(manifest.directories)
        return set(scan_tree(self.state_dir(manifest.state_id) / PERSIST_ROOT,
                             state=True).directories)

    def exists(self, state_id: str) -> bool:
        """Whether a state directory with that id exists."""
        return self.state_dir(state_id).is_dir()

    def state_ids(self) -> list[str]:
        """Ids of every published state, sorted."""
        if not self.states_dir.is_dir():
            return []
        return sorted(p.name for p in self.states_dir.iterdir()
                      if p.is_dir() and not p.name.startswith("."))

    # -- a run's starting point --------------------------------------------------------------

    def initialize(self, persist_dir: Path, base_state_id: str | None,
                   links: LabLinks | None = None, manifest: StateManifest | None = None
                   ) -> PersistSnapshot:
        """Fill a run's empty ``persist/`` from the base state and return its snapshot. With
        ``links`` (the run's containment records them) the files are hard links to the
        state's, each recorded in ``links``; without, they are copies (a link nobody records
        would look planted). ``manifest`` is the base's, when the caller loaded it already."""
        if base_state_id is None:
            persist_dir.mkdir(parents=True, exist_ok=True)
            return PersistSnapshot(base_state_id=None, files=[], directories=[])
        if manifest is None or manifest.state_id != base_state_id:
            manifest = self.load(base_state_id)
        source = self.state_dir(base_state_id) / PERSIST_ROOT
        if persist_dir.exists():
            persist_dir.rmdir()  # the run's root was created empty; fail loudly otherwise
        entries = manifest.files
        with collector_paused():  # see publish
            contents, in_order, member = self._contents(manifest)
            try:
                filled = link_tree(source, persist_dir, link=links is not None,
                                   expected=contents)
            except NotTheManifest:
                filled = None
            if filled is None or filled.files != len(contents):  # every file, each listed
                shutil.rmtree(persist_dir)
                persist_dir.mkdir()
                raise _state_error("root_invalid", f"persist/ of `{base_state_id}` does not "
                                   "match its manifest")
            if links is not None:
                links.add_all(filled.links)
            # the manifest's entries were validated when it was read
            files = list(entries) if in_order else sorted(entries)  # each run its own list
            snapshot = PersistSnapshot.model_construct(
                base_state_id=base_state_id, files=files,  # by path: the first field
                directories=sorted(filled.directories))
            if in_order and member is not None:  # the manifest's text of these very files
                snapshot._files_member = (files, len(files), member)
            return snapshot

    def _contents(self, manifest: StateManifest) -> _Derived:
        """What a run's start derives from the state ``manifest`` (see :class:`_Parsed`),
        kept with the parsed manifest of this process, so every run that starts from the
        state reuses it, as long as ``manifest`` lists the very entries of the kept one."""
        path = str(self.state_dir(manifest.state_id) / MANIFEST)
        parsed = _MANIFESTS.get(path, lambda: None)  # only what is kept: nothing is parsed
        entries = manifest.files
        if parsed is None or parsed.manifest.files != entries:  # (the same tuples: quick)
            return _file_contents(entries), _in_order(entries), None
        if parsed.contents is None:  # the first start from it (two at once build it alike)
            parsed.contents = _file_contents(parsed.manifest.files), _in_order(entries), None
        return parsed.contents

    # -- publication ---------------------------------------------------------------------

    def publish(self, *, run_id: str, persist_dir: Path, snapshot: PersistSnapshot,
                revision_of: str | None = None, links: LabLinks | None = None
                ) -> tuple[StateManifest, bool]:
        """Publish a run's ``persist/`` (serialized by the repository-wide lock).

        ``links`` are the links :meth:`initialize` made (the run's containment): a file that
        is still one of them is unchanged (its digest is the snapshot's, nothing is read) and
        is linked into the new state; every other file is copied. Returns the state and
        whether an earlier state of the revision chain was reused.
        """
        with self._lock(), collector_paused():  # tens of thousands of acyclic objects
            self.states_dir.mkdir(parents=True, exist_ok=True)
            self._remove_leftovers()
            if revision_of is None:  # nothing to compare with: scan and store in one walk
                return self._new_state(run_id, partial(copy_tree, persist_dir, links=links),
                                       snapshot, revision_of), False
            tree = scan_tree(persist_dir, links=links)
            for earlier in self._revision_chain(revision_of, run_id):
                if tree.same_as(earlier.files, self.directories_of(earlier)):
                    return earlier, True
            return self._new_state(run_id, partial(_materialized, tree), snapshot,
                                   revision_of), False

    def _new_state(self, run_id: str, store: Callable[[Path], Tree], snapshot: PersistSnapshot,
                   revision_of: str | None) -> StateManifest:
        """A new state whose ``persist/`` ``store(target)`` fills, returning its tree."""
        state_id = self.ids.new("pst")
        if self.state_dir(state_id).exists():
            raise _state_error("exists", f"persist state `{state_id}` already exists",
                               code="agent.persistent_state_exists")
        staging = self.states_dir / f".{state_id}.tmp-{uuid.uuid4().hex}"
        try:
            tree = store(staging / PERSIST_ROOT)
            base = self._base_contents(snapshot)
            manifest = StateManifest(
                state_id=state_id, run_id=run_id, workspace_id=self.workspace_id,
                stable_chat_id=self.stable_chat_id, base_state_id=snapshot.base_state_id,
                revision_of=revision_of, created_at=self.clock.now(),
                files=tree.file_entries(), directories=sorted(tree.directories),
                changes=diff_trees(base, snapshot.directory_set(), tree),
            )
            member = _write_manifest(staging / MANIFEST, manifest)
            os.rename(staging, self.state_dir(state_id))
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        path = str(self.state_dir(state_id) / MANIFEST)
        # the next run starts here: its file contents are the tree's (sorted, as listed)
        _MANIFESTS.put(path, identity(path),
                       _Parsed(_copied(manifest), (tree.files, True, member)))
        return manifest

    def _base_contents(self, snapshot: PersistSnapshot) -> dict[str, tuple[str, int]]:
        """``(sha256, size)`` by path of the files a run started with (never to be changed:
        it may be the one its start derived from the base state's manifest, kept with it)."""
        if snapshot.base_state_id is not None:
            path = str(self.state_dir(snapshot.base_state_id) / MANIFEST)
            parsed = _MANIFESTS.get(path, lambda: None)
            if (parsed is not None and parsed.contents is not None
                    and parsed.manifest.files == snapshot.files):  # the same tuples: quick
                return parsed.contents[0]
        return _file_contents(snapshot.files)

    def _revision_chain(self, state_id: str, run_id: str) -> list[StateManifest]:
        chain: list[StateManifest] = []
        current: str | None = state_id
        while current is not None and current not in {m.state_id for m in chain}:
            manifest = self.load(current)
            chain.append(manifest)
            current = manifest.revision_of if manifest.run_id == run_id else None
        return chain

    def _remove_leftovers(self) -> None:
        for entry in self.states_dir.iterdir():
            if entry.name.startswith(".") and ".tmp-" in entry.name:
                shutil.rmtree(entry, ignore_errors=True)

    # -- forks and pruning -----------------------------------------------------------------

    def copy_to(self, other: PersistRepository, state_ids: list[str]) -> None:
        """Copy states into another chat's repository (a chat fork), rewriting their identity."""
        with other._lock():
            other.states_dir.mkdir(parents=True, exist_ok=True)
            for state_id in state_ids:
                manifest = self.load(state_id)
                if other.exists(state_id):
                    continue
                staging = other.states_dir / f".{state_id}.tmp-{uuid.uuid4().hex}"
                shutil.copytree(self.state_dir(state_id) / PERSIST_ROOT, staging / PERSIST_ROOT,
                                symlinks=True, copy_function=_link_or_copy)
                manifest.workspace_id = other.workspace_id
                manifest.stable_chat_id = other.stable_chat_id
                write_model(staging / MANIFEST, manifest)
                os.rename(staging, other.state_dir(state_id))

    def prune(self, candidates: list[str], referenced: set[str]) -> list[str]:
        """Delete the candidate states no message or swipe references; returns the deleted ids.

        Unlisted orphans stay. A candidate that is a file (not a state directory) is rejected
        before anything is deleted.
        """
        with self._lock():
            for state_id in candidates:
                check_dir_name(state_id, "persist state id")
                path = self.state_dir(state_id)
                if path.exists() and (path.is_symlink() or not path.is_dir()):
                    raise _state_error("invalid", f"`{state_id}` is not a persist state "
                                       "directory")
            deleted = []
            for state_id in candidates:
                if state_id in referenced or not self.state_dir(state_id).is_dir():
                    continue
                shutil.rmtree(self.state_dir(state_id))
                deleted.append(state_id)
            return deleted


#: What a run's start derives from its base state's manifest: ``(sha256, size)`` of each
#: file by path (shared: never to be changed), whether the file list is sorted by path, and
#: the manifest's ``"files"`` member as written, when this process wrote it.
_Derived = tuple[dict[str, tuple[str, int]], bool, str | None]


class _Parsed:
    """A state's manifest as parsed, never changed (:meth:`PersistRepository.load` hands
    out copies), and what a run's start derives from it, once derived (or, for a state
    published here, known from the publication)."""

    __slots__ = ("contents", "manifest")

    def __init__(self, manifest: StateManifest, contents: _Derived | None = None) -> None:
        self.manifest = manifest
        self.contents = contents


def _write_manifest(path: Path, manifest: StateManifest) -> str | None:
    """:func:`~tavernlab.workspace.records.write_model` of ``manifest``, byte for byte (its
    pydantic-core text and a final newline, written atomically; a lone surrogate goes to
    ``write_model`` itself); returns the text's ``"files"`` member, the very text a run's
    persist snapshot of the same files has (same serializer, same depth), or ``None``."""
    try:
        text = manifest.model_dump_json(indent=2, by_alias=True, exclude_none=True)
    except PydanticSerializationError:
        write_model(path, manifest)
        return None
    write_text_atomically(path, text)
    # a member of the top object is the only line indented by two that names "files" (a
    # JSON string holds no newline), and its list closes at the first line "  ]" after it
    begin = text.index('\n  "files": ') + 1
    end = (begin + len(_NO_FILES) if text.startswith(_NO_FILES, begin)
           else text.index("\n  ]", begin) + 4)
    return text[begin:end]


_NO_FILES = '  "files": []'


#: Parsed manifests of this process (a state's manifest never changes once it is published;
#: the next run, every regenerate and swipe start from the same state).
_MANIFESTS: ParsedFiles[_Parsed] = ParsedFiles()


def _file_contents(entries: list[FileEntry]) -> dict[str, tuple[str, int]]:
    """``(sha256, size)`` by path, built in C (no Python frame per file)."""
    return dict(zip(map(itemgetter(0), entries),
                    zip(map(itemgetter(1), entries), map(itemgetter(2), entries), strict=True),
                    strict=True))


def _in_order(entries: list[FileEntry]) -> bool:
    """Whether ``entries`` are sorted (by path, their first field)."""
    return all(map(le, entries, islice(entries, 1, None)))


def _copied(manifest: StateManifest) -> StateManifest:
    """A copy of ``manifest`` that shares nothing mutable with it (its lists are copied;
    their entries are tuples)."""
    directories = manifest.directories
    return manifest.model_copy(update={
        "files": list(manifest.files), "changes": list(manifest.changes),
        "directories": None if directories is None else list(directories)})


def _materialized(tree: Tree, target: Path) -> Tree:
    """``tree`` stored at ``target`` (:func:`materialize`): a ``store`` of ``_new_state``."""
    materialize(tree, target)
    return tree


def _link_or_copy(source: str, target: str) -> None:
    """``shutil.copytree``'s copy function for a fork: a state file is linked, not copied."""
    link_or_copy(source, target)


def _state_error(kind: str, detail: str, *, code: str | None = None) -> PersistStateError:
    code = code or f"agent.persistent_state_{kind}"
    return PersistStateError(f"{code}: {detail}", code=code)
