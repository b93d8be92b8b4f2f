"""On-disk run records (docs/layout.md): ``run.json``, ``manifest.json`` and the
JSON file helpers every store uses (the event log is :mod:`tavernlab.events._log`).

The records are pydantic models with camelCase aliases matching upstream; they are written
with :func:`write_json` (temp file + atomic rename) so a reader never sees half a file.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticSerializationError, to_json

import tavernlab.layout as layout
from tavernlab.errors import InvalidData
from tavernlab.ondisk import Model
from tavernlab.workspace.storage import create_in_place, create_new, publish, writer_temp

RunStatus = Literal[
    "created", "initializing_workspace", "assembling_context", "calling_model",
    "dispatching_tool", "applying_workspace_patch", "creating_checkpoint",
    "awaiting_host_commit", "finishing", "completed", "partial_success", "cancelling",
    "cancelled", "failed",
]
TERMINAL_STATUSES: frozenset[str] = frozenset({"completed", "partial_success", "cancelled",
                                               "failed"})


# --- JSON files --------------------------------------------------------------------------


def write_json(path: str | os.PathLike[str], data: Any, *, indent: int | None = 2,
               ascii_only: bool = False, fresh: bool = False, exclusive: bool = False,
               staging: str | os.PathLike[str] | None = None, plain: bool = False) -> None:
    """Write JSON atomically: temp file in the same directory, flush, rename over ``path``.

    ``ascii_only`` escapes every non-ASCII character (used for data that may hold text that
    is not valid UTF-8, such as raw tool arguments with a lone surrogate). ``fresh`` says the
    file is normally new: it is then created exclusively in place, and only an existing file
    takes the temp-and-rename path. ``exclusive`` says it must be new (a tool-argument
    record): the whole temp file is hard-linked to ``path``, so an existing file raises
    ``FileExistsError`` and is left as it is, and a reader never sees part of the new one.
    ``staging`` is the folder for the temp file (a run's own, on the same file system,
    emptied when the run is opened: a writer killed before its rename leaves nothing beside
    ``path``); without it the temp file is a sibling of ``path``. ``plain`` says the caller
    knows ``data`` holds only the types :func:`pretty_json` hands to pydantic-core (it is not
    walked again to find out)."""
    text = (pretty_json(data, ascii_only=ascii_only, plain=plain) if indent == 2
            else json.dumps(data, ensure_ascii=ascii_only, indent=indent))
    content = (text + "\n").encode("utf-8")
    if exclusive:
        _link_new(path, content, staging)
        return
    _write_bytes(path, content, fresh=fresh, staging=staging)


def write_text_atomically(path: str | os.PathLike[str], text: str, *,
                          staging: str | os.PathLike[str] | None = None) -> None:
    """Write ``text`` (a JSON document, given a final newline here) the way :func:`write_json`
    does: a temporary file renamed over ``path``."""
    _write_bytes(path, (text + "\n").encode("utf-8"), staging=staging)


def write_model(path: Path, model: Model) -> None:
    """``write_json(path, dump_model(model))``, byte for byte, serialized by pydantic-core in
    one pass (a persist state's manifest and a run's persist snapshot list every file). Only
    for models without float fields (their shortest forms differ from ``json``'s); a lone
    surrogate (a file name that is not UTF-8) is left to :func:`write_json` (which refuses
    it as it always did)."""
    try:
        text = model.model_dump_json(indent=2, by_alias=True, exclude_none=True)
    except PydanticSerializationError:  # a lone surrogate: what write_json does with it
        write_json(path, dump_model(model))
        return
    _write_bytes(path, (text + "\n").encode("utf-8"))


def _write_bytes(path: str | os.PathLike[str], content: bytes, *, fresh: bool = False,
                 staging: str | os.PathLike[str] | None = None) -> None:
    """Write ``content`` atomically (see :func:`write_json`)."""
    if fresh:
        try:
            create_in_place(path, content, parents=True)
            return
        except FileExistsError:
            pass
    publish(path, content, temp=writer_temp(path, staging), parents=True)


def _link_new(path: str | os.PathLike[str], content: bytes,
              staging: str | os.PathLike[str] | None) -> None:
    """Create ``path`` holding ``content``, whole, or raise ``FileExistsError`` when it
    exists (see :func:`write_json`)."""
    create_new(path, content, temp=writer_temp(path, staging), parents=True)


def pretty_json(data: Any, *, ascii_only: bool = False, plain: bool = False) -> str:
    """``json.dumps(data, indent=2, ensure_ascii=ascii_only)``, byte for byte.

    Data made of strings, integers, booleans, ``None``, lists and string-keyed objects is
    encoded by pydantic-core (an order of magnitude faster on the large manifests and
    snapshots of persist states and on tool results; it writes exactly what ``json`` writes
    for these types), ASCII-only output then escaping what ``json`` escapes beyond that
    (see :func:`_escape_non_ascii`); anything else - a float (their shortest forms differ),
    another key type, a lone surrogate - is left to ``json.dumps``. ``plain``: the caller
    knows the data is of those types (it is not walked)."""
    if plain or _plain(data):
        try:
            text = to_json(data, indent=2).decode("utf-8")
        except (ValueError, UnicodeDecodeError):  # a lone surrogate: json's handling
            pass
        else:
            if not ascii_only or (text.isascii() and "\x7f" not in text):
                return text
            return _NOT_PRINTABLE_ASCII.sub(_escape_non_ascii, text)
    return json.dumps(data, ensure_ascii=ascii_only, indent=2)


# What ``json.dumps(ensure_ascii=True)`` escapes on top of what it always escapes (quotes,
# backslashes, control characters): DEL and everything past ASCII. Outside strings JSON
# text is ASCII, so each match lies within a string.
_NOT_PRINTABLE_ASCII = re.compile(r"[^\x00-\x7e]")


def _escape_non_ascii(match: re.Match[str]) -> str:
    """The ``\\u`` escape ``json`` writes for one character: four lowercase hex digits
    (``\\u00e9`` for ``é``); past the BMP a surrogate pair (``\\ud83d\\ude00``)."""
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}"


_SCALARS = frozenset({str, int, bool, type(None)})


_STR_KEYS = frozenset({str})


def _plain(data: Any) -> bool:
    """Whether ``data`` holds only the types :func:`pretty_json` hands to pydantic-core
    (it is run on every record a tool call writes: the types of a container's items are
    gathered by the interpreter in one step, and only the containers among them are looked
    at one by one)."""
    pending = [data]
    push, pop, scalars = pending.append, pending.pop, _SCALARS
    while pending:
        value = pop()
        kind = type(value)
        if kind is dict:
            if not _STR_KEYS.issuperset(map(type, value)):
                return False
            children = value.values()
        elif kind is list or kind is tuple:
            children = value
        elif kind in scalars:
            continue
        else:
            return False
        if not scalars.issuperset(map(type, children)):
            for child in children:
                if type(child) not in scalars:
                    push(child)
    return True


def read_json(path: Path) -> Any:
    """Read a JSON file."""
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def dump_model(model: Model) -> dict[str, Any]:
    """A model as upstream JSON: aliases, no ``None`` fields."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def model_text(model: Model) -> str:
    """``pretty_json(dump_model(model))``, the same text, serialized by pydantic-core in one
    pass when it is sure to be the same: the model's own fields hold no float (true of the
    records this is used for) and its extra fields are plain data (a float or a lone
    surrogate among them takes the long way, as :func:`pretty_json` does)."""
    extra = model.__pydantic_extra__
    if not extra or _plain(extra):
        try:
            return model.model_dump_json(indent=2, by_alias=True, exclude_none=True)
        except PydanticSerializationError:  # a lone surrogate: json's handling
            pass
    return pretty_json(dump_model(model))


# --- run.json ------------------------------------------------------------------------------


class ChatRef(Model):
    """The host chat a Chat target belongs to."""

    kind: Literal["character", "group"]
    stable_chat_id: str


class ChatTarget(Model):
    """A Chat target. Upstream's V5 shape is unknown; tavernlab chooses this one."""

    kind: Literal["chat"] = "chat"
    workspace_id: str
    stable_chat_id: str
    chat_ref: ChatRef
    persist_base_state_id: str | None = None
    input_message_count: int | None = None


class SessionTarget(Model):
    """A Session target."""

    kind: Literal["session"] = "session"
    session_id: str


class RunRecord(Model):
    """``run.json``."""

    id: str
    target: ChatTarget | SessionTarget = Field(discriminator="kind")
    generation_type: str = "normal"
    profile_id: str | None = None
    skill_scope_refs: dict[str, str] | None = None
    presentation: Literal["foreground", "background"] = "foreground"
    status: RunStatus = "created"
    created_at: datetime
    updated_at: datetime

    @field_validator("status", mode="before")
    @classmethod
    def _legacy_status(cls, value: Any) -> Any:
        """Readers map the legacy ``awaiting_commit`` to ``awaiting_host_commit``."""
        return "awaiting_host_commit" if value == "awaiting_commit" else value

    @field_validator("presentation", mode="before")
    @classmethod
    def _default_presentation(cls, value: Any) -> Any:
        """A missing (null) ``presentation`` means ``foreground``."""
        return "foreground" if value is None else value

    @property
    def is_terminal(self) -> bool:
        """Whether the status is terminal."""
        return self.status in TERMINAL_STATUSES


# --- manifest.json --------------------------------------------------------------------------


class RootSpec(Model):
    """One root of ``manifest.json``."""

    path: str
    lifecycle: Literal["run", "persistent"]
    scope: Literal["run", "chat"]
    mount: Literal["materialized", "projected_overlay"]
    visible: bool
    writable: bool
    commit: Literal["never", "on_run_completed"]

    @classmethod
    def for_root(cls, path: str, *, visible: bool, writable: bool) -> RootSpec:
        """``persist`` is persistent/chat/projected_overlay/on_run_completed; every other root
        is run/run/materialized/never."""
        if path == layout.PERSIST:
            return cls(path=path, lifecycle="persistent", scope="chat",
                       mount="projected_overlay", visible=visible, writable=writable,
                       commit="on_run_completed")
        return cls(path=path, lifecycle="run", scope="run", mount="materialized",
                   visible=visible, writable=writable, commit="never")

    def check(self) -> RootSpec:
        """Reject a persistent combination other than ``persist``'s."""
        persistent = (self.lifecycle, self.scope, self.mount, self.commit) != (
            "run", "run", "materialized", "never")
        if persistent and (self.path, self.lifecycle, self.scope, self.mount, self.commit) != (
                layout.PERSIST, "persistent", "chat", "projected_overlay", "on_run_completed"):
            raise InvalidData(f"unsupported persistent root combination for `{self.path}`")
        return self


class ManifestInput(Model):
    """``manifest.json`` ``input``."""

    mode: str = "snapshot"
    prompt_snapshot_path: str = layout.PROMPT_SNAPSHOT
    resolved_profile_path: str = layout.RESOLVED_PROFILE


class Artifact(Model):
    """``manifest.json`` ``artifacts[]``."""

    id: str
    path: str
    kind: str
    target: str
    required: bool
    assembly_order: int


class CommitPolicy(Model):
    """``manifest.json`` ``commitPolicy``."""

    default_target: Literal["message_body"] = "message_body"
    combine_template: str | None = None
    store_artifacts_in_extra: bool = True


class WorkspaceManifest(Model):
    """``manifest.json``."""

    workspace_version: int = 1
    run_id: str
    stable_chat_id: str | None = None
    chat_ref: ChatRef | None = None
    created_at: datetime
    input: ManifestInput = Field(default_factory=ManifestInput)
    roots: list[RootSpec]
    artifacts: list[Artifact] = Field(default_factory=list)
    commit_policy: CommitPolicy = Field(default_factory=CommitPolicy)
