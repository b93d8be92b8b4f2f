"""Reading, verifying and writing ``.tavernrun`` bundles (the format: :mod:`.manifest`).

Limits (tavernlab's choice): at most :data:`MAX_MEMBERS` members, each at most
:data:`MAX_MEMBER_BYTES`, together at most :data:`MAX_BUNDLE_BYTES` uncompressed. Export
refuses a run over them with ``replay.bundle_too_large`` before writing anything; reading
refuses such a bundle the same way before decompressing anything.

Reading reuses the skill archive rules (:func:`tavernlab.skills.read_archive_files`):
control characters in names, symlink entries, escaping or absolute paths, encryption, the
compression ratio and sizes that disagree with the central directory are refused, and nothing
is extracted to disk. Then every member is verified: only ``manifest.json``,
``manifest.sha256``, ``blobs/<sha256>`` and the optional ``view.html`` may exist (the run's
page for anyone without tavernlab, see :mod:`tavernlab.view`; a replay never reads it), the
manifest must match its digest, its format version must be one this tavernlab reads, each
blob must hash to its name, every digest the manifest names must be present, every path it
names must be a normalized relative path, and every model response a model-driven run
recorded must be one of its run files. The ids the actions name have the shapes the host
gives them (a call id and an agent id match ``[A-Za-z0-9_.:-]{1,256}``, an invocation id and
a job id ``[A-Za-z0-9_-]{1,128}``), and so do the bound skills' names and hashes: a bundle is
shared, and these values are copied into reports and generated notebooks. A failure names
the member.

Writing is deterministic (the same run gives the same bytes: entries sorted, fixed times) and
atomic (a temporary file in the target directory, renamed into place).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tavernlab.errors import InvalidData
from tavernlab.paths import WorkspacePath
from tavernlab.replay._actions import JsJob, Reopen, Subagent, ToolCall
from tavernlab.replay._errors import BundleInvalid, BundleTooLarge, BundleVersionUnsupported
from tavernlab.replay._manifest import FORMAT, FORMAT_VERSION, BundleManifest
from tavernlab.skills import (
    InvalidSkillPackage,
    read_archive_files,
    validate_skill_name,
    write_archive,
)
from tavernlab.workspace.roots import check_call_id, check_dir_name
from tavernlab.workspace.storage import replace_durably

#: File name extension of a bundle.
BUNDLE_SUFFIX = ".tavernrun"
#: Most members a bundle may hold.
MAX_MEMBERS = 100_000
#: Largest member, uncompressed.
MAX_MEMBER_BYTES = 64 * 1024 * 1024
#: Largest bundle: all members together, uncompressed.
MAX_BUNDLE_BYTES = 256 * 1024 * 1024
MANIFEST = "manifest.json"
MANIFEST_DIGEST = "manifest.sha256"
BLOBS = "blobs/"
#: The optional member holding the run's self-contained page.
VIEW_PAGE = "view.html"


def sha256_of(data: bytes) -> str:
    """The hex SHA-256 of ``data`` (a blob's name)."""
    return hashlib.sha256(data).hexdigest()


def check_sizes(sizes: Iterable[tuple[str, int]]) -> None:
    """Refuse members over the bundle limits (``replay.bundle_too_large``)."""
    total = 0
    for count, (name, size) in enumerate(sizes, 1):
        total += size
        if count > MAX_MEMBERS:
            raise BundleTooLarge(f"a bundle holds at most {MAX_MEMBERS} members")
        if size > MAX_MEMBER_BYTES:
            raise BundleTooLarge(f"bundle member {name} has {size} bytes; the limit is "
                                 f"{MAX_MEMBER_BYTES}")
        if total > MAX_BUNDLE_BYTES:
            raise BundleTooLarge(f"the bundle exceeds {MAX_BUNDLE_BYTES} bytes uncompressed")


@dataclass(frozen=True)
class Bundle:
    """A verified bundle in memory: its manifest and its blobs by digest."""

    manifest: BundleManifest
    blobs: Mapping[str, bytes]
    path: Path | None = None
    #: The bundle's ``view.html`` (the run's page), if it carries one.
    page: bytes | None = None

    def blob(self, digest: str) -> bytes:
        """The bytes stored under ``digest``."""
        return self.blobs[digest]

    def run_file(self, path: str) -> bytes:
        """A file of the recorded run directory (``BundleInvalid`` when it is not there)."""
        digest = self.manifest.run.files.get(path)
        if digest is None:
            raise BundleInvalid(f"the bundle has no run file {path}")
        return self.blobs[digest]

    def run_json(self, path: str) -> Any:
        """A JSON file of the recorded run directory (``BundleInvalid`` when it is not
        JSON)."""
        try:
            return json.loads(self.run_file(path))
        except (ValueError, RecursionError) as exc:
            raise BundleInvalid(f"the bundle's run file {path} is not JSON: {exc}") from None

    def has_run_file(self, path: str) -> bool:
        """Whether the recorded run directory holds ``path``."""
        return path in self.manifest.run.files

    def recorded_events(self) -> bytes:
        """The recorded ``events.jsonl`` as the current format writes it: a bundle of format
        1 or 2 has its lifecycle events upgraded (:func:`tavernlab.replay._upgrade.
        upgrade_events`), a newer one is returned as recorded."""
        events = self.run_file("events.jsonl") if self.has_run_file("events.jsonl") else b""
        if self.manifest.format_version >= 3:
            return events
        from tavernlab.replay._upgrade import upgrade_events

        journal = self.run_file("journal.jsonl") if self.has_run_file("journal.jsonl") else b""
        return upgrade_events(events, journal, record=self.manifest.record,
                              ids=self.manifest.ids, state_changes=self._state_changes)

    def recorded_journal(self) -> bytes:
        """The recorded ``journal.jsonl`` as the current format writes it (a format 1 or 2
        bundle's cancelled js jobs gain their reason: :func:`tavernlab.replay._upgrade.
        upgrade_journal`)."""
        journal = self.run_file("journal.jsonl") if self.has_run_file("journal.jsonl") else b""
        if self.manifest.format_version >= 3:
            return journal
        from tavernlab.replay._upgrade import upgrade_journal

        events = self.run_file("events.jsonl") if self.has_run_file("events.jsonl") else b""
        return upgrade_journal(journal, events)

    def _state_changes(self, state_id: str) -> list[dict[str, Any]]:
        """The ``changes`` a persist state the run published lists in its manifest."""
        for state in self.manifest.persist_states:
            digest = state.tree.files.get("manifest.json")
            if state.state_id == state_id and digest is not None:
                changes: list[dict[str, Any]] = json.loads(self.blobs[digest]).get(
                    "changes") or []
                return changes
        return []

    # -- writing ------------------------------------------------------------------------------

    def members(self) -> dict[str, bytes]:
        """The ZIP members of this bundle."""
        manifest = self.manifest.model_dump(mode="json", by_alias=True)
        text = json.dumps(manifest, ensure_ascii=False, indent=1).encode("utf-8")
        members = {MANIFEST: text, MANIFEST_DIGEST: (sha256_of(text) + "\n").encode("ascii")}
        for digest in sorted(self.manifest.digests()):
            members[BLOBS + digest] = self.blobs[digest]
        if self.page is not None:
            members[VIEW_PAGE] = self.page
        return members

    def write(self, path: str | Path) -> Path:
        """Write the bundle atomically at ``path`` (parent directories are created); refuses
        a bundle over the limits before writing anything. Returns the absolute path."""
        target = Path(path).resolve()
        members = self.members()
        check_sizes((name, len(data)) for name, data in members.items())
        data = write_archive(members)
        target.parent.mkdir(parents=True, exist_ok=True)
        replace_durably(target, data)
        return target


# -- reading ----------------------------------------------------------------------------------


def read_bundle(path: str | Path) -> Bundle:
    """Read and verify the bundle at ``path`` (see the module notes for every check)."""
    source = Path(path)
    if not source.is_file():
        raise BundleInvalid(f"no bundle at {source}")
    if source.stat().st_size > MAX_BUNDLE_BYTES:
        raise BundleTooLarge(f"{source.name} is larger than {MAX_BUNDLE_BYTES} bytes")
    try:
        members = read_archive_files(source, check_sizes)
    except InvalidSkillPackage as exc:
        raise BundleInvalid(f"{source.name} is not a readable bundle: {exc.message}") from None
    manifest = _manifest(source.name, members)
    blobs = _blobs(members)
    for digest, places in manifest.digests().items():
        if digest not in blobs:
            raise BundleInvalid(f"bundle member {BLOBS}{digest} is missing (named by "
                                f"{places[0]})")
    _check_paths(manifest)
    _check_ids(manifest)
    return Bundle(manifest, blobs, source.resolve(), members.get(VIEW_PAGE))


def _manifest(label: str, members: Mapping[str, bytes]) -> BundleManifest:
    text = members.get(MANIFEST)
    digest = members.get(MANIFEST_DIGEST)
    if text is None or digest is None:
        raise BundleInvalid(f"{label} has no {MANIFEST if text is None else MANIFEST_DIGEST}")
    if digest.decode("ascii", "replace").strip() != sha256_of(text):
        raise BundleInvalid(f"bundle member {MANIFEST} does not match its digest in "
                            f"{MANIFEST_DIGEST}")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BundleInvalid(f"bundle member {MANIFEST} is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BundleInvalid(f"{label} is not a {FORMAT} bundle")
    version = data.get("formatVersion")
    if not isinstance(version, int) or version < 1:
        raise BundleInvalid(f"bundle member {MANIFEST} has no valid formatVersion")
    if version > FORMAT_VERSION:
        raise BundleVersionUnsupported(
            f"{label} has bundle format version {version}, newer than the version "
            f"{FORMAT_VERSION} this tavernlab reads: upgrade tavernlab to replay it")
    try:
        return BundleManifest.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise BundleInvalid(f"bundle member {MANIFEST}: {where}: {error['msg']}") from None


def _blobs(members: Mapping[str, bytes]) -> dict[str, bytes]:
    blobs: dict[str, bytes] = {}
    for name, data in members.items():
        if name in (MANIFEST, MANIFEST_DIGEST, VIEW_PAGE):
            continue
        digest = name.removeprefix(BLOBS)
        if not name.startswith(BLOBS) or len(digest) != 64 or digest.strip("0123456789abcdef"):
            raise BundleInvalid(f"unexpected bundle member {name}")
        if sha256_of(data) != digest:
            raise BundleInvalid(f"bundle member {name} does not match its digest (its bytes "
                                "were changed)")
        blobs[digest] = data
    return blobs


def _relative(path: str, what: str) -> None:
    try:
        normal = WorkspacePath.parse(path).text
    except InvalidData as exc:
        raise BundleInvalid(f"bundle member {MANIFEST}: {what} `{path}`: {exc.message}"
                            ) from None
    if normal != path:
        raise BundleInvalid(f"bundle member {MANIFEST}: {what} `{path}` is not a normalized "
                            "relative path")


def _check_paths(manifest: BundleManifest) -> None:
    """Every path and id the manifest names, before any of it is used as a file name."""
    states = ([manifest.persist_base] if manifest.persist_base else []) + manifest.persist_states
    try:
        check_dir_name(manifest.run_id, "run id")
        for state in states:
            check_dir_name(state.state_id, "persist state id")
    except InvalidData as exc:
        raise BundleInvalid(f"bundle member {MANIFEST}: {exc.message}") from None
    trees = [("run file", manifest.run), ("index file", manifest.index)]
    trees += [("persist state file", state.tree) for state in states]
    for what, tree in trees:
        for path in [*tree.files, *tree.directories]:
            _relative(path, what)
    for skill in manifest.skills:
        for path in skill.files:
            _relative(path, f"file of skill {skill.name}")
    agent = manifest.agent
    for response in agent.responses if agent is not None else []:
        _relative(response.path, "model response")
        if response.path not in manifest.run.files:
            raise BundleInvalid(f"the bundle has no run file {response.path}, the recorded "
                                f"model response of invocation `{response.invocation_id}` "
                                f"round {response.round}")


def _check_ids(manifest: BundleManifest) -> None:
    """Every id an action names, and every bound skill's name and hash, has the shape the
    host gives it (a value from a shared file reaches reports and generated notebooks)."""
    try:
        for index, action in enumerate(manifest.actions):
            where = f"action {index}"
            if isinstance(action, ToolCall):
                check_call_id(action.call_id, f"{where}: call_id")
                check_dir_name(action.invocation_id, f"{where}: invocation id")
            elif isinstance(action, JsJob):
                check_dir_name(action.job_id, f"{where}: job id")
            elif isinstance(action, Subagent):
                check_call_id(action.agent_id, f"{where}: agent_id")
                check_dir_name(action.invocation_id, f"{where}: invocation id")
            elif isinstance(action, Reopen):
                check_dir_name(action.invocation_id, f"{where}: invocation id")
        for skill in manifest.skills:
            check_call_id(skill.installed_hash, "installed hash of a bound skill")
    except InvalidData as exc:
        raise BundleInvalid(f"bundle member {MANIFEST}: {exc.message}") from None
    for skill in manifest.skills:
        try:
            valid = validate_skill_name(skill.name) == skill.name
        except InvalidSkillPackage:
            valid = False
        if not valid:
            raise BundleInvalid(f"bundle member {MANIFEST}: bound skill name "
                                f"{skill.name[:40]!r} is not a valid skill name")
