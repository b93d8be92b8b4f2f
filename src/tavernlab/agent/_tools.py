"""What a model is shown of the tools: an invocation's tool snapshot.

The bindings follow the Profile's ``tools.allow`` order, skipping denied tools and tools the
lab does not have (chat, world info and dice tools have no tavernlab engine), and, for the
legacy skill tools, a Profile without the compatibility mode. A return-mode child drops
commit, finish, delegate, handoff and await and gets ``task.return`` last. Each builtin's
description is its declared base text rewritten by the Profile's context (the readable and
writable roots, the message body) and then by ``tools.toolDescriptions``. The alias is the
native name with ``.`` replaced by ``_``; the full id is ``builtin:<native name>``.

The snapshot is written once per invocation to ``input/invocations/<id>/tool_snapshot.json``
(``{schemaVersion: 1, id, bindings: [{descriptor, modelAlias, maxCalls?}],
maxCallsPerInvocation}``) and never rewritten.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import tavernlab.layout as layout
from tavernlab.agent._mcp import unique_alias
from tavernlab.errors import AgentError
from tavernlab.host import ToolRegistry
from tavernlab.models import ModelTool
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.tools import ToolSpec

BUILTIN_PREFIX = "builtin:"
#: The roots every invocation can read, appended to the Profile's visible roots.
ALWAYS_VISIBLE = (layout.TOOL_RESULTS, "skills")
#: What a return-mode child never gets.
CHILD_DROPPED = frozenset({"workspace.commit", "workspace.finish", "agent.delegate",
                           "agent.handoff", "agent.await"})

Mode = Literal["root", "child"]


def alias_of(native: str) -> str:
    """A builtin's model alias: ``workspace.read_file`` → ``workspace_read_file``."""
    return native.replace(".", "_")


def visible_roots_text(profile: Profile) -> str:
    """``output/, scratch/, …, tool-results/, skills/``: the Profile's visible roots in its
    order, then the roots every invocation reads."""
    roots = list(profile.workspace.visible_roots)
    roots += [root for root in ALWAYS_VISIBLE if root not in roots]
    return ", ".join(f"{root}/" for root in roots)


def writable_roots_text(profile: Profile) -> str:
    """The Profile's writable roots, ``output/, scratch/, …``."""
    return ", ".join(f"{root}/" for root in profile.workspace.writable_roots)


@dataclass(frozen=True, slots=True)
class Binding:
    """One tool of a snapshot: the declared spec, its full id, alias, the description and
    schema the model is shown, and its per-tool cap."""

    spec: ToolSpec
    tool_id: str
    alias: str
    description: str
    schema: dict[str, Any]
    max_calls: int | None

    @property
    def native(self) -> str:
        """The native name (``workspace.write_file``), the registry's id."""
        return self.spec.id

    def descriptor(self) -> dict[str, Any]:
        """Upstream's descriptor as the snapshot stores it: the declaration's, with the
        description and schema the model is shown."""
        return {**self.spec.descriptor(), "id": self.tool_id, "description": self.description,
                "inputSchema": self.schema}

    def model_tool(self) -> ModelTool:
        """The canonical tool a provider converts to its wire format."""
        return ModelTool(tool_id=self.tool_id, model_alias=self.alias,
                         description=self.description, input_schema=self.schema)


@dataclass(frozen=True, slots=True)
class ToolSnapshot:
    """An invocation's frozen tools (its id is the invocation's)."""

    id: str
    bindings: tuple[Binding, ...]
    max_calls_per_invocation: int | None

    def has(self, native: str) -> bool:
        """Whether the tool ``native`` is advertised."""
        return any(b.native == native for b in self.bindings)

    def alias(self, native: str) -> str:
        """The alias of an advertised tool."""
        return alias_of(native)

    def by_id(self, tool_id: str) -> Binding | None:
        """The binding of a full tool id."""
        for binding in self.bindings:
            if binding.tool_id == tool_id:
                return binding
        return None

    def model_tools(self) -> list[ModelTool]:
        """The request's ``tools``, in snapshot order."""
        return [b.model_tool() for b in self.bindings]

    def to_json(self) -> dict[str, Any]:
        """``input/invocations/<id>/tool_snapshot.json``."""
        bindings = []
        for binding in self.bindings:
            entry: dict[str, Any] = {"descriptor": binding.descriptor(),
                                     "modelAlias": binding.alias}
            if binding.max_calls is not None:
                entry["maxCalls"] = binding.max_calls
            bindings.append(entry)
        return {"schemaVersion": 1, "id": self.id, "bindings": bindings,
                "maxCallsPerInvocation": self.max_calls_per_invocation}

    def summary(self) -> dict[str, Any]:
        """``context_assembled.toolSnapshot``."""
        return {"id": self.id, "maxCallsPerInvocation": self.max_calls_per_invocation,
                "tools": [{"toolId": b.tool_id, "alias": b.alias, "maxCalls": b.max_calls}
                          for b in self.bindings]}

    def turn(self) -> dict[str, Any]:
        """The tool turn of every request: all snapshot tools, choice ``auto``."""
        return {"snapshotId": self.id, "tools": [b.tool_id for b in self.bindings],
                "choice": "auto"}


def build_snapshot(registry: ToolRegistry, profile: Profile, invocation_id: str, *,
                   mode: Mode = "root", chat: bool = True,
                   external: Sequence[ToolSpec] = ()) -> ToolSnapshot:
    """The tool snapshot of an invocation with ``profile``: its builtins, then the
    ``external`` (MCP) tools' declarations under their unique aliases (a child's
    ``task.return`` stays last). Every binding is derived from its declaration the same way:
    its full id, alias, description and schema (a builtin's rewritten by the Profile)."""
    natives: list[str] = []
    for name in profile.tools.allow:
        native = name.removeprefix(BUILTIN_PREFIX)
        if native in natives or name in profile.tools.deny or native in profile.tools.deny:
            continue
        if mode == "child" and native in CHILD_DROPPED:
            continue
        if native == "task.return":
            continue
        spec = registry.get(native)
        if spec is None or (spec.compat and not profile.skills.legacy_run_script):
            continue
        if native == "workspace.commit" and not chat:
            continue
        natives.append(native)
    if mode == "child" and registry.get("task.return") is not None:
        natives.append("task.return")
    visible = set(natives)
    bindings = []
    for native in natives:
        spec = registry.get(native)
        assert spec is not None
        description, schema = _profile_context(spec, profile, visible, mode)
        override = (profile.tools.tool_descriptions.get(native)
                    or profile.tools.tool_descriptions.get(BUILTIN_PREFIX + native))
        if override is not None:
            if override.description is not None:
                description = override.description
            for key, text in override.properties.items():
                if key in schema.get("properties", {}):
                    schema["properties"][key]["description"] = text
        caps = profile.tools.max_calls_per_tool
        bindings.append(Binding(spec, spec.full_id, spec.model_name, description, schema,
                                caps.get(spec.full_id, caps.get(native))))
    if external:
        last = bindings.pop() if bindings and bindings[-1].native == "task.return" else None
        taken = {binding.alias for binding in bindings}
        if last is not None:
            taken.add(last.alias)
        caps = profile.tools.max_calls_per_tool
        for spec in external:
            alias = unique_alias(spec.model_name, taken)
            taken.add(alias)
            bindings.append(Binding(spec, spec.full_id, alias, spec.description, spec.schema,
                                    caps.get(spec.full_id)))
        if last is not None:
            bindings.append(last)
    _check_unique(bindings)
    return ToolSnapshot(invocation_id, tuple(bindings), profile.tools.max_calls_per_run)


def _check_unique(bindings: Iterable[Binding]) -> None:
    aliases: set[str] = set()
    ids: set[str] = set()
    for binding in bindings:
        if binding.alias in aliases:
            raise AgentError(f"duplicate model alias `{binding.alias}` in a tool snapshot",
                             code="tool.snapshot_duplicate_alias")
        if binding.tool_id in ids:
            raise AgentError(f"duplicate tool id `{binding.tool_id}` in a tool snapshot",
                             code="tool.snapshot_duplicate_id")
        aliases.add(binding.alias)
        ids.add(binding.tool_id)


def _set_path(schema: dict[str, Any], text: str) -> None:
    path = schema.get("properties", {}).get("path")
    if isinstance(path, dict):
        path["description"] = text


def _profile_context(spec: ToolSpec, profile: Profile, visible: set[str], mode: Mode
                     ) -> tuple[str, dict[str, Any]]:
    """The description and schema a model is shown of a builtin under ``profile``."""
    schema = copy.deepcopy(spec.schema)
    v, w = visible_roots_text(profile), writable_roots_text(profile)
    body = profile.workspace.message_body_path
    native = spec.id
    if native == "workspace.list_files":
        if mode == "child":
            _set_path(schema, f"Optional relative workspace directory or file path under {v}. "
                              "Omit to list the visible workspace roots.")
            return (f"List files visible to this delegated task under {v}. This is the same "
                    "logical workspace used by the requesting Agent; use the paths named in "
                    "the task brief.", schema)
        _set_path(schema, f"Optional relative workspace directory or file path under {v}. "
                          "Omit to list the visible workspace roots.")
        return (f"List visible Agent workspace files under {v}. Use this before reading when "
                "you need to inspect available artifacts.", schema)
    if native == "workspace.read_file":
        _set_path(schema, f"Relative workspace file path under {v}.")
        if mode == "child":
            return ("Read a visible UTF-8 task workspace file with line numbers. Omit "
                    "start_line and line_count to read the full file; oversized files return a "
                    f"bounded preview with the next line to read. Visible roots are {v}. Use "
                    "ordinary workspace paths exactly as they appear in the task brief or file "
                    "list.", schema)
        tail = (" Read the exact text you want to replace before using workspace_apply_patch; "
                "if a patch fails, fully read the file before retrying."
                if "workspace.apply_patch" in visible else " Partial reads are only for "
                "inspection.")
        return ("Read a visible UTF-8 Agent workspace file with line numbers. Omit start_line "
                "and line_count to read the full file; oversized files return a bounded "
                "preview with the next line to read." + tail, schema)
    if native == "workspace.search_files":
        _set_path(schema, f"Optional visible workspace file or directory path under {v}. "
                          "Omit to search all visible roots.")
        if mode == "child":
            return (f"Search visible UTF-8 task workspace files under {v}. Use this before "
                    "reading exact ranges.", schema)
        return (f"Search visible UTF-8 Agent workspace files under {v}. Results return "
                "snippets and refs; use workspace_read_file to read exact ranges.", schema)
    if native == "workspace.write_file":
        _set_path(schema, f"Relative workspace path. Writable prefixes are {w}.")
        if mode == "child":
            return ("Write UTF-8 text to a writable workspace file for this delegated task. "
                    "mode replace writes the complete file; mode append adds content exactly "
                    "to the end and creates the file when missing. Writable prefixes are "
                    f"{w}. Use the path requested in the task brief when one is provided.",
                    schema)
        return ("Write UTF-8 text to a writable Agent workspace file. mode replace writes the "
                "complete file; mode append adds content exactly to the end and creates the "
                f"file when missing. Use {body} for the default chat message body.", schema)
    if native == "workspace.apply_patch":
        _set_path(schema, f"Relative writable workspace file path under {w}.")
        if mode == "child":
            return ("Apply a precise single-file string replacement to a writable "
                    f"delegated-task workspace file. Writable prefixes are {w}. Fully read an "
                    "existing file before editing it; if the tool reports that it changed, "
                    "read it again and retry.", schema)
        return ("Apply a precise single-file string replacement. old_string must come from "
                "text you already read with workspace_read_file or from a file you "
                "created/replaced in this run. old_string must match exactly and uniquely "
                "unless replace_all is true. If a patch fails, fully read the file before "
                "retrying.", schema)
    if native == "workspace.shell":
        prefer = [text for tool, text in (
            ("workspace.read_file", "workspace_read_file for straightforward single-file "
                                    "text reads"),
            ("workspace.write_file", "workspace_write_file for straightforward single-file "
                                     "text writes"),
            ("workspace.apply_patch", "workspace_apply_patch for precise edits"))
            if tool in visible]
        suffix = f" Prefer {', '.join(prefer)}." if prefer else ""
        return spec.description + suffix, schema
    if native == "workspace.commit":
        _set_path(schema, f"Relative visible workspace file path to publish. Defaults to "
                          f"{body}.")
        return ("Commit a workspace text file to this run's single chat message. With no "
                f"arguments, replace the current run message with {body}. mode append "
                "appends the file text to the same message, creating it when this run has "
                "not committed yet.", schema)
    if native == "workspace.finish":
        return ("Finish the Agent run after required chat commits and workspace changes are "
                "complete.", schema)
    return spec.description, schema
