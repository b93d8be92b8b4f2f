"""The seam between the host and the model-facing tools: results, errors, arguments, specs.

See docs/tool-calls.md. A tool is a :class:`ToolSpec`: an id (``workspace.read_file``,
``workspace.shell``, ``skill.run_script``...), a handler, an argument allow-list and whether
it needs the legacy compatibility mode. Engines export their specs as plain tuples; the host
builds one registry per ``Lab`` from the providers it is given, so nothing registers at import
time. A handler receives a :class:`ToolContext` (what the calling agent may see and do during
this one call: its scoped view, read records, Profile, frozen context, cancel token, clock and
the file-event recorders) and the allow-listed :class:`Arguments`; it returns
a :class:`ToolResult` or raises :class:`~tavernlab.errors.ToolError`. Storage errors map to
tool codes through :func:`tool_error_from_storage`. Anything else is an internal fault that
aborts the run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, overload

from tavernlab.cancel import CancelToken
from tavernlab.clock import Clock, IdFactory
from tavernlab.errors import (
    AccessDenied,
    NotFound,
    PathIsDirectory,
    SkillUnavailable,
    ToolError,
    WorkspaceError,
)
from tavernlab.paths import InvalidWorkspacePath, WorkspacePath
from tavernlab.workspace.macros import FrozenContext
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.scope import ReadRecords, ScopedWorkspaceFs


@dataclass(slots=True)
class ToolResult:
    """What a tool call returns to the model (and what is stored under ``tool-results/``).

    ``content`` is the text the model reads, ``structured`` the JSON payload, and
    ``resource_refs`` the workspace paths the call touched.
    """

    content: str
    structured: Any = None
    is_error: bool = False
    error_code: str | None = None
    resource_refs: list[str] = field(default_factory=list)
    call_id: str | None = None
    tool_id: str | None = None

    @classmethod
    def from_error(cls, error: ToolError) -> ToolResult:
        """The recoverable result of ``error``: content = message (unless given), structured =
        ``{error: {code, message}}`` (unless given)."""
        return cls(
            content=error.content if error.content is not None else error.message,
            structured=error.structured if error.structured is not None else {
                "error": {"code": error.code, "message": error.message}},
            is_error=True,
            error_code=error.code,
            resource_refs=list(error.resource_refs),
        )

    def to_json(self) -> dict[str, Any]:
        """The stored form: ``{callId, toolId, content, structured, isError, errorCode,
        resourceRefs}``."""
        return {
            "callId": self.call_id,
            "toolId": self.tool_id,
            "content": self.content,
            "structured": self.structured,
            "isError": self.is_error,
            "errorCode": self.error_code,
            "resourceRefs": self.resource_refs,
        }

    def __repr__(self) -> str:
        status = f"error {self.error_code}" if self.is_error else "ok"
        return f"<ToolResult {self.tool_id} {status}: {self.content[:80]!r}>"


class ToolContext(Protocol):
    """What a tool handler may see and do during one call; the host implements it.

    ``scope``, ``records``, ``profile`` and ``skills`` belong to the calling agent (the main
    agent or a return-mode sub-agent); ``frozen`` holds the run's frozen host facts and
    macros. It carries what the storage and engine tools use, and nothing more: the host's
    run-control tools (commit, finish, return) see the host's richer call context.
    """

    @property
    def token(self) -> CancelToken:
        """Cancelled by ``run.cancel()``, an interrupt or a deadline."""

    @property
    def scope(self) -> ScopedWorkspaceFs:
        """The calling agent's policy view of the workspace."""

    @property
    def records(self) -> ReadRecords:
        """The calling agent's read records."""

    @property
    def profile(self) -> Profile:
        """The calling agent's Profile."""

    @property
    def frozen(self) -> FrozenContext:
        """The run's frozen host facts and macro table."""

    @property
    def skills(self) -> Mapping[str, Any]:
        """The calling agent's bound skills (name -> binding)."""

    @property
    def shell_deadline_s(self) -> float:
        """The whole-call deadline of a shell call or ``js`` job, in seconds."""

    @property
    def output(self) -> Callable[[str, str], None] | None:
        """Who listens to the call's output as it is produced (``(stdout, stderr)`` chunks;
        ``None`` when nobody does): a notebook cell that streams a shell call."""

    @property
    def clock(self) -> Clock:
        """The lab's clock."""

    @property
    def ids(self) -> IdFactory:
        """The lab's id factory."""

    def file_written(self, path: str, sha256: str, *, mode: str) -> None:
        """Record ``workspace_file_written`` for a text-tool write."""

    def patch_applied(self, path: str, sha256: str, replacements: int) -> None:
        """Record ``workspace_patch_applied``."""


ToolHandler = Callable[[ToolContext, "Arguments"], ToolResult]
#: ``None`` when the tool may run for this call, else the ``(code, message)`` to refuse it.
Availability = Callable[[ToolContext], tuple[str, str] | None]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool, declared once: its id, handler, whether it mutates the workspace, upstream's
    base description, the allow-list of its argument names, and what a model is shown of it
    (``title``, the JSON Schema of its arguments, upstream's ``annotations``:
    ``readOnly`` / ``mutating`` / ``control``).

    The dispatcher wraps the raw JSON arguments in :class:`Arguments` with ``arguments`` as
    the allow-list before calling ``handler(context, args)``. ``available`` refuses the tool
    for some calls (for example ``workspace.commit`` in a Session run). ``compat`` marks a
    tool of the legacy compatibility mode: offered only when the Profile enables
    ``skills.legacyRunScript``, otherwise reported as unknown.

    A builtin (every tool a lab's providers declare) is known to a model as
    ``builtin:<id>`` under the alias ``<id>`` with dots as underscores. An external tool
    (``builtin=False``: an MCP server's, listed while a run goes) keeps its own id
    (``mcp/<server>/<tool>``) and declares its ``alias`` (``mcp__<server>__<tool>``), which a
    tool snapshot then makes unique among the others.
    """

    id: str
    handler: ToolHandler
    mutating: bool
    description: str
    arguments: tuple[str, ...]
    available: Availability | None = None
    compat: bool = False
    title: str = ""
    input_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)
    alias: str | None = None
    builtin: bool = True

    @property
    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments (a closed object of the allow-listed names when
        the tool declares none)."""
        if self.input_schema is not None:
            copied: dict[str, Any] = json.loads(json.dumps(self.input_schema))
            return copied
        return object_schema({name: {} for name in self.arguments}, [])

    @property
    def full_id(self) -> str:
        """The id a tool snapshot names: ``builtin:<id>`` for a builtin
        (``builtin:workspace.read_file``), the id itself for an external tool."""
        return f"builtin:{self.id}" if self.builtin else self.id

    def descriptor(self) -> dict[str, Any]:
        """Upstream's tool descriptor: ``{id, title, description, inputSchema, outputSchema,
        annotations}`` (``id`` is the :attr:`full_id`)."""
        return {"id": self.full_id, "title": self.title or self.id,
                "description": self.description, "inputSchema": self.schema,
                "outputSchema": None, "annotations": dict(self.annotations)}

    @property
    def model_name(self) -> str:
        """The name the model sees before a snapshot makes it unique: the declared ``alias``,
        else the id with dots replaced by underscores (``workspace_read_file``)."""
        return self.alias if self.alias is not None else self.id.replace(".", "_")


def object_schema(properties: Mapping[str, Any], required: Iterable[str]) -> dict[str, Any]:
    """Upstream's shape of a tool's argument schema: a closed object."""
    return {"type": "object", "additionalProperties": False, "properties": dict(properties),
            "required": list(required)}


def string_property(description: str, **extra: Any) -> dict[str, Any]:
    """A string property of a tool schema."""
    return {"type": "string", "description": description, **extra}


def integer_property(description: str, **extra: Any) -> dict[str, Any]:
    """An integer property of a tool schema."""
    return {"type": "integer", "description": description, **extra}


# --- arguments -------------------------------------------------------------------------------


class Arguments:
    """A tool's JSON arguments with an allow-list (docs/tool-calls.md). Unknown keys,
    wrong types, missing required keys and strings that are not valid Unicode (lone
    surrogates; tavernlab's wording ``<key> must be valid Unicode text``) all fail with
    ``tool.invalid_arguments``.

    An unknown key reads ``<key> is not supported``. Upstream confirms this for ``read_file``
    and ``shell``; tavernlab applies it to every tool, and when several keys are unknown it
    names the first in sorted key order (both tavernlab's choices).
    """

    def __init__(self, raw: Any, allowed: Iterable[str]) -> None:
        if not isinstance(raw, Mapping):
            raise invalid_arguments("arguments must be a JSON object")
        allowed_set = set(allowed)
        unknown = sorted(k for k in raw if k not in allowed_set)
        if unknown:
            if not all(_is_unicode(k) for k in unknown):
                raise invalid_arguments("argument names must be valid Unicode text")
            raise invalid_arguments(f"{unknown[0]} is not supported")
        self.raw: Mapping[str, Any] = raw

    def has(self, key: str) -> bool:
        """Whether the key is present (even with a null value)."""
        return key in self.raw

    def string(self, key: str, *, required: bool = False, default: str | None = None,
               missing: str | None = None) -> str | None:
        """A string argument; ``missing`` overrides the message for an absent required key."""
        value = self.raw.get(key)
        if value is None:
            if required:
                raise invalid_arguments(missing or f"{key} is required")
            return default
        if not isinstance(value, str):
            raise invalid_arguments(f"{key} must be a string")
        if not _is_unicode(value):
            raise invalid_arguments(f"{key} must be valid Unicode text")
        return value

    def required_text(self, key: str) -> str:
        """A required string, trimmed (a tool's ``path``, ``search_files``' ``query``): a
        value that is missing, not a string or empty after trimming is ``<key> is
        required``."""
        value = self.raw.get(key)
        if not isinstance(value, str):
            raise invalid_arguments(f"{key} is required")
        if not _is_unicode(value):
            raise invalid_arguments(f"{key} must be valid Unicode text")
        trimmed = value.strip()
        if not trimmed:
            raise invalid_arguments(f"{key} is required")
        return trimmed

    @overload
    def integer(self, key: str, *, default: int) -> int: ...

    @overload
    def integer(self, key: str, *, default: None = None) -> int | None: ...

    def integer(self, key: str, *, default: int | None = None) -> int | None:
        """An integer argument: absent gives ``default``; a present value must be a JSON
        integer >= 0, anything else (negative, ``1.5`` or ``2.0``, a string, a boolean,
        ``null``) is ``<key> must be a non-negative integer``. Each tool checks its own range
        afterwards."""
        if key not in self.raw:
            return default
        value = self.raw[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise invalid_arguments(f"{key} must be a non-negative integer")
        return value

    def boolean(self, key: str, *, default: bool = False) -> bool:
        """A boolean argument: absent gives ``default``; a present value that is not a JSON
        boolean (``null`` included) is ``<key> must be a boolean``."""
        if key not in self.raw:
            return default
        value = self.raw[key]
        if not isinstance(value, bool):
            raise invalid_arguments(f"{key} must be a boolean")
        return value

    def value(self, key: str, default: Any = None) -> Any:
        """The raw JSON value."""
        return self.raw.get(key, default)


def _is_unicode(text: str) -> bool:
    """False for a string holding a lone surrogate: Python's JSON accepts ``"\\udcff"`` where
    upstream's JSON parser refuses it, and no file or message can hold it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def invalid_arguments(message: str) -> ToolError:
    """``tool.invalid_arguments`` with ``message``."""
    return ToolError("tool.invalid_arguments", message)


# --- storage errors -> tool errors -------------------------------------------------------------


#: Upstream's error-type prefix of a path that fails to parse (docs/tool-calls.md).
INVALID_DATA_PREFIX = "Invalid data: "
#: Upstream's error-type prefix of a policy denial (docs/tool-calls.md).
PERMISSION_DENIED_PREFIX = "Permission denied: "


def parse_tool_path(text: str) -> WorkspacePath:
    """Parse a tool's ``path`` argument; a failure is ``workspace.invalid_path``."""
    try:
        return WorkspacePath.parse(text)
    except InvalidWorkspacePath as exc:
        raise invalid_path(exc) from None


def invalid_path(error: InvalidWorkspacePath) -> ToolError:
    """``workspace.invalid_path``: ``Invalid data: <parse message>``."""
    return ToolError("workspace.invalid_path", INVALID_DATA_PREFIX + error.message)


def access_denied(error: AccessDenied) -> ToolError:
    """``workspace.path_not_visible`` / ``workspace.path_not_writable``: ``Permission denied:
    `<path>` is not readable (writable) for this task.``"""
    return ToolError(error.code, PERMISSION_DENIED_PREFIX + error.message)


def path_is_directory(path: str) -> ToolError:
    """``workspace.path_is_directory`` with upstream's wording."""
    return ToolError(
        "workspace.path_is_directory",
        f"workspace path `{path}` is a directory; call workspace_list_files to list its "
        "contents and re-target a specific file.",
    )


def file_not_found(path: str, *, code: str = "workspace.file_not_found") -> ToolError:
    """``workspace.file_not_found`` (or ``workspace.path_not_found``). Upstream wording is
    unknown; tavernlab chooses ``workspace path `<path>` was not found.``"""
    return ToolError(code, f"workspace path `{path}` was not found.")


def tool_error_from_storage(error: WorkspaceError, path: str, *,
                            not_found_code: str = "workspace.file_not_found") -> ToolError:
    """Map a storage error to the common tool codes of docs/tool-calls.md (parse failures
    and policy denials keep upstream's ``Invalid data: `` / ``Permission denied: `` prefix;
    every other message has none)."""
    if isinstance(error, InvalidWorkspacePath):
        return invalid_path(error)
    if isinstance(error, AccessDenied):
        return access_denied(error)
    if isinstance(error, PathIsDirectory):
        return path_is_directory(error.path or path)
    if isinstance(error, SkillUnavailable):
        return ToolError(not_found_code, error.message)
    if isinstance(error, NotFound):
        return file_not_found(path, code=not_found_code)
    return ToolError(error.code, error.message)


def compact_json(value: Any) -> str:
    """Compact JSON with non-ASCII kept (how results are embedded in content)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
