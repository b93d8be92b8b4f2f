"""``@tauritavern/runtime`` (V5), served by the parent (docs/js-and-skills.md).

The JavaScript side of the module lives in the worker
(:data:`tavernlab.js._bootstrap.CORE_SOURCE`) and forwards every call here:
:class:`RuntimeCapabilities` answers them with the Invocation's ``ScopedWorkspaceFs``, the
run's frozen macros and the call's input budget, and passes the run's stdout and stderr to its
:class:`~tavernlab.js._output.CommandOutput`. The pool checks the deadline and the cancel flag
before each call.

* ``workspace.readText(path)``, ``writeText(path, text)``, ``exists(path)``, ``listFiles(dir?)``
  take workspace-root paths parsed with the workspace path rules; every function, ``exists``
  included, parses first and throws the parse error with upstream's ``Invalid data: `` prefix
  (``Invalid data: Workspace path must be relative``). Messages name the path in shell form, a
  ``/`` before the normalized path (:func:`shell_form`). Writes are unchecked, create missing
  parents and are tracked for auto-commit (the scope's tracker). Bytes read are charged to the
  input budget. Storage errors (policy denials, a directory read as a file) keep their own
  text.
* ``context`` is built once per run from the frozen snapshot (:func:`runtime_context_json`);
  without a host context every field throws ``context.<field> is unavailable for this task.``
* ``macros.render(text)`` expands the frozen macros (16 MiB in and out).
* ``log.*`` writes to stderr, formatted like ``console``.

tavernlab choices where upstream is silent: ``listFiles(dir)`` on a file throws
``Cannot list `/<dir>`: it is not a directory.``; ``exists`` is ``false`` for a valid path
the storage refuses for any reason (hidden, missing, a storage error); a non-string argument
throws ``TypeError: <name> must be a string`` in the guest before reaching the parent.
"""

from __future__ import annotations

import errno
import json
from typing import Any

from tavernlab.errors import (
    AccessDenied,
    Cancelled,
    FileIo,
    InvalidData,
    NotFound,
    TavernlabError,
    WorkspaceError,
)
from tavernlab.js._budget import InputBudget
from tavernlab.js._errors import CapabilityError
from tavernlab.js._limits import INVALID_DATA_PREFIX, LIST_FILES_LIMIT, path_not_found
from tavernlab.js._output import CommandOutput
from tavernlab.paths import InvalidWorkspacePath, WorkspacePath
from tavernlab.workspace.macros import FrozenContext
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.storage import UNSUPPORTED_NODE, WriteGuard

#: Depth used for the recursive ``listFiles(dir)`` walk (no practical limit).
_LIST_DEPTH = 10_000


def runtime_context_json(context: FrozenContext) -> str | None:
    """``context`` as JSON: ``{worldInfo: {entries}, variables: {local, global}, macro}`` with
    the snapshot's raw JSON values, or ``None`` when the run has no host context."""
    snapshot = context.snapshot
    if snapshot is None:
        return None
    world_info = snapshot.get("worldInfoActivation")
    entries = world_info.get("entries", []) if isinstance(world_info, dict) else []
    variables = snapshot.get("variables")
    variables = variables if isinstance(variables, dict) else {}
    macro = context.macros.context_macro() or {
        "names": {}, "character": {}, "system": {}, "chat": {}}
    return json.dumps({
        "worldInfo": {"entries": entries},
        "variables": {"local": variables.get("local") or {},
                      "global": variables.get("global") or {}},
        "macro": macro,
    }, ensure_ascii=False)


def parse_script_path(text: Any) -> WorkspacePath:
    """A workspace-root path from a script; a bad one is a guest ``Error`` with the path rule's
    message behind ``Invalid data: `` (``Invalid data: Workspace path must be relative``)."""
    try:
        return WorkspacePath.parse(text)
    except InvalidWorkspacePath as exc:
        raise CapabilityError(INVALID_DATA_PREFIX + exc.message) from None


def shell_form(path: WorkspacePath) -> str:
    """How runtime messages name a path: ``/`` plus the normalized path (``/scratch/a.txt``)."""
    return "/" + path.text


class RuntimeCapabilities:
    """The parent side of one ``js`` run: its output buffers and its capability calls."""

    def __init__(self, scope: ScopedWorkspaceFs, context: FrozenContext, budget: InputBudget,
                 output: CommandOutput) -> None:
        self.scope = scope
        self.context = context
        self.budget = budget
        self.out = output

    def output(self, stream: int, text: str) -> None:
        """Console output (already counted against the caps by the worker)."""
        self.out.write("stdout" if stream == 1 else "stderr", text)

    def serve(self, op: str, a: Any, b: Any) -> Any:
        """Dispatch one call; storage errors become guest errors with their own text."""
        try:
            if op == "readText":
                return self.read_text(parse_script_path(a))
            if op == "writeText":
                self.write_text(parse_script_path(a), b)
                return None
            if op == "exists":
                return self.exists(parse_script_path(a))
            if op == "listFiles":
                return self.list_files(None if a is None else parse_script_path(a))
            if op == "render":
                return self.context.macros.render(a)
            if op == "log":
                self.out.write("stderr", b)
                return None
        except (CapabilityError, Cancelled):
            raise
        except (WorkspaceError, TavernlabError) as exc:
            raise CapabilityError(exc.message) from None
        raise CapabilityError(f"unknown runtime call {op}")

    def read_text(self, path: WorkspacePath) -> str:
        """``workspace.readText``."""
        try:
            data = self.scope.read_file(path, self.budget.remaining)
        except NotFound:
            raise CapabilityError(path_not_found("read", shell_form(path))) from None
        except WorkspaceError as exc:
            if exc.message.startswith("Workspace read exceeds"):
                raise CapabilityError(self.budget.exceeded_message(
                    self.budget.used + self.budget.remaining + 1)) from None
            raise
        self.budget.charge(len(data))
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise CapabilityError(f"`{shell_form(path)}` is not UTF-8 text.") from None

    def write_text(self, path: WorkspacePath, text: str) -> None:
        """``workspace.writeText``: unchecked, parents created, tracked."""
        try:
            self.scope.write_text(path, text, WriteGuard.unchecked())
        except FileIo as exc:
            if exc.errno == errno.ENOTDIR:
                raise CapabilityError(
                    f"Parent of `{shell_form(path)}` is not a directory.") from None
            raise

    def exists(self, path: WorkspacePath) -> bool:
        """``workspace.exists`` of a parsed path: false for missing and hidden paths."""
        try:
            return self.scope.exists(path)
        except WorkspaceError:
            return False

    def list_files(self, path: WorkspacePath | None) -> list[str]:
        """``workspace.listFiles()`` (the visible roots) or ``listFiles(dir)`` (files below)."""
        if path is None:
            return sorted(self.scope.policy.visible_roots)
        if not self.scope.is_visible(path):
            raise AccessDenied(path.text, "read")
        try:
            if not self.scope.metadata(path).is_dir:
                raise CapabilityError(f"Cannot list `{shell_form(path)}`: it is not a directory.")
            listing = self.scope.list_files(path, _LIST_DEPTH, LIST_FILES_LIMIT)
        except NotFound:
            raise CapabilityError(path_not_found("list", shell_form(path))) from None
        if listing.truncated:
            raise CapabilityError(f"Directory listing exceeds {LIST_FILES_LIMIT} entries; "
                                  "choose a narrower directory.")
        if listing.refused:  # never drop a node silently: the storage rule, as before
            raise InvalidData(UNSUPPORTED_NODE)
        return sorted(entry.path[len(path.text) + 1:] for entry in listing.entries
                      if entry.kind == "file")
