"""Module loaders: how each mode resolves a specifier and reads the module it names.

:class:`WorkspaceModuleLoader` is the V5 command's (absolute shell paths, read through the
Invocation's ``ScopedWorkspaceFs``, bytes charged to the call's input budget);
:class:`SnapshotModuleLoader` is the legacy ``skill.run_script``'s (logical names inside the
skill's ``scripts/`` snapshot). Built-in names never reach :meth:`ModuleLoader.resolve`: the
graph builder looks them up in the loader's :attr:`~ModuleLoader.builtins` first
(:mod:`tavernlab.js._builtins`). The path helpers here are shared with the command's entry
handling (:mod:`tavernlab.js._command`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from tavernlab.errors import AccessDenied, Cancelled, NotFound, PathIsDirectory, WorkspaceError
from tavernlab.js._budget import InputBudget, InputBudgetExceeded
from tavernlab.js._builtins import (
    COMMAND_BUILTINS,
    LEGACY_BUILTINS,
    LEGACY_RUNTIME_MODULE,
    BuiltinModules,
)
from tavernlab.js._errors import ModuleLoadError
from tavernlab.js._limits import MODULE_NOT_AVAILABLE, SOURCE_NOT_UTF8, path_not_found
from tavernlab.paths import InvalidWorkspacePath, WorkspacePath
from tavernlab.workspace.scope import ScopedWorkspaceFs


class ModuleLoader(Protocol):
    """The resolution and loading rules of one mode."""

    builtins: BuiltinModules

    def resolve(self, specifier: str, importer: str, directory: str) -> str:
        """The canonical name of the non-built-in ``specifier`` imported from ``importer``,
        relative specifiers taken against ``directory`` (the importer's directory, or the
        shell's cwd for a named eval module); raises :class:`ModuleLoadError`."""

    def load(self, name: str, importer: str) -> bytes:
        """The source bytes of the module ``name``; raises :class:`ModuleLoadError`."""

    def admit_builtin(self, name: str, source: str) -> None:
        """Account for a sourced built-in module the graph includes (see
        :mod:`tavernlab.js._builtins`); raises :class:`ModuleLoadError` to refuse it."""


def dirname(name: str) -> str:
    """The directory part of a module name (``/scratch/task.js`` -> ``/scratch``)."""
    head, sep, _ = name.rpartition("/")
    return head if sep else ""


def join_relative(base: str, specifier: str) -> str | None:
    """Lexically join ``specifier`` to the directory ``base`` (absolute when ``base`` or the
    specifier starts with ``/``); ``None`` when ``..`` climbs above the top."""
    absolute = specifier.startswith("/") or base.startswith("/")
    segments: list[str] = [] if specifier.startswith("/") else [s for s in base.split("/") if s]
    for segment in specifier.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not segments:
                return None
            segments.pop()
        else:
            segments.append(segment)
    joined = "/".join(segments)
    return "/" + joined if absolute else joined


def has_module_extension(path: str) -> bool:
    """``.js`` or ``.mjs`` (case-sensitive, like upstream's explicit-extension rule)."""
    return path.endswith((".js", ".mjs"))


def not_a_module_path(path: str) -> str:
    """`` `<path>` must be an explicit .js or .mjs module path.``"""
    return f"`{path}` must be an explicit .js or .mjs module path."


def invalid_path(path: str) -> str:
    """``Invalid workspace path `<path>`; use / separators and workspace paths.``"""
    return f"Invalid workspace path `{path}`; use / separators and workspace paths."


def has_invalid_path_chars(path: str) -> bool:
    """A backslash, a NUL, a drive prefix (``X:``) or text that is not valid Unicode (a lone
    surrogate, which no workspace file name can contain)."""
    if "\\" in path or "\0" in path:
        return True
    if len(path) >= 2 and path[0].isascii() and path[0].isalpha() and path[1] == ":":
        return True
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def decode_source(data: bytes) -> str:
    """UTF-8 source text, or ``JavaScript source must be UTF-8.``"""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ModuleLoadError(SOURCE_NOT_UTF8) from None


class WorkspaceModuleLoader:
    """V5 rules: ``./``, ``../`` and ``/`` specifiers against the importer's directory, ``.js``
    or ``.mjs`` only, read through the Invocation's ``ScopedWorkspaceFs``.

    Canonical names are absolute shell paths (``/skills/demo/scripts/lib.js``). A path the
    Invocation may not read is reported exactly like a missing one, so hidden run files stay
    hidden; a missing entry reads ``Cannot read `<path>`: path not found. Check the directory
    with workspace.listFiles.``. Source bytes are charged to the call's input budget.

    tavernlab choices (upstream wording unknown): ``..`` above ``/`` fails with
    ``Cannot import `<spec>` from `<importer>`: the path escapes the workspace root.``; a
    missing or hidden import with ``Cannot find module `<path>` imported from `<importer>`.``;
    a directory with ``Cannot load module `<path>`: it is a directory.``
    """

    def __init__(self, scope: ScopedWorkspaceFs, budget: InputBudget,
                 builtins: BuiltinModules = COMMAND_BUILTINS) -> None:
        self.scope = scope
        self.budget = budget
        self.builtins = builtins

    def resolve(self, specifier: str, importer: str, directory: str) -> str:
        """See :class:`ModuleLoader`."""
        if not specifier.startswith(("./", "../", "/")):
            raise ModuleLoadError(MODULE_NOT_AVAILABLE)
        if has_invalid_path_chars(specifier):
            raise ModuleLoadError(invalid_path(specifier))
        joined = join_relative(directory or "/", specifier)
        if joined is None:
            raise ModuleLoadError(
                f"Cannot import `{specifier}` from `{importer}`: the path escapes the "
                "workspace root.")
        if not has_module_extension(joined):
            raise ModuleLoadError(not_a_module_path(joined))
        return joined

    def load(self, name: str, importer: str) -> bytes:
        """See :class:`ModuleLoader`; ``importer`` is ``""`` for the entry."""
        missing = (f"Cannot find module `{name}` imported from `{importer}`." if importer
                   else path_not_found("read", name))
        try:
            path = WorkspacePath.parse(name.lstrip("/"))
        except InvalidWorkspacePath:
            raise ModuleLoadError(missing) from None
        if not self.scope.is_visible(path):
            raise ModuleLoadError(missing)
        try:
            data = self.scope.read_file(path, self.budget.remaining)
        except Cancelled:
            raise
        except (NotFound, AccessDenied):
            raise ModuleLoadError(missing) from None
        except PathIsDirectory:
            raise ModuleLoadError(f"Cannot load module `{name}`: it is a directory.") from None
        except WorkspaceError as exc:
            if exc.message.startswith("Workspace read exceeds"):
                raise ModuleLoadError(self.budget.exceeded_message(
                    self.budget.used + self.budget.remaining + 1)) from None
            raise ModuleLoadError(f"Cannot load module `{name}`: {exc.message}") from None
        self._charge(len(data))
        return data

    def admit_builtin(self, name: str, source: str) -> None:
        """A built-in module's bytes count toward the call's input budget."""
        self._charge(len(source.encode("utf-8")))

    def _charge(self, size: int) -> None:
        try:
            self.budget.charge(size)
        except InputBudgetExceeded as exc:
            raise ModuleLoadError(exc.message) from None


class SnapshotModuleLoader:
    """Legacy rules: relative specifiers against the importer's logical name, which must hit
    the skill's ``scripts/**/*.js`` snapshot (``scripts/main.js``...).

    tavernlab choices (upstream wording unknown): a target outside the snapshot (including
    ``../`` above the package and any ``/`` path) fails with ``Cannot find module `<spec>`
    imported from `<importer>` in the skill's scripts/ snapshot.``; a bare name other than the
    runtime modules with ``Module `<spec>` is not available: import @tauritavern/runtime/v1 or
    a relative module from the skill's scripts/ directory.``
    """

    def __init__(self, modules: Mapping[str, str],
                 builtins: BuiltinModules = LEGACY_BUILTINS) -> None:
        self.modules = modules
        self.builtins = builtins

    def resolve(self, specifier: str, importer: str, directory: str) -> str:
        """See :class:`ModuleLoader`."""
        if not specifier.startswith(("./", "../", "/")):
            raise ModuleLoadError(
                f"Module `{specifier}` is not available: import {LEGACY_RUNTIME_MODULE} or a "
                "relative module from the skill's scripts/ directory.")
        joined = None if specifier.startswith("/") else join_relative(directory, specifier)
        if joined is None or joined not in self.modules:
            raise ModuleLoadError(
                f"Cannot find module `{specifier}` imported from `{importer}` in the skill's "
                "scripts/ snapshot.")
        return joined

    def load(self, name: str, importer: str) -> bytes:
        """See :class:`ModuleLoader`."""
        return self.modules[name].encode("utf-8")

    def admit_builtin(self, name: str, source: str) -> None:
        """Built-in modules are not skill files: they never count toward the snapshot."""
