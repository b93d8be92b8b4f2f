"""The seven worktree tools and the tool host (spec sections 1.1, 1.2 and 2).

Each tool has a pydantic input model with upstream's camelCase field names and defaults.
:func:`call_tool` validates the input (``input_invalid`` on failure, nothing changed) and
returns the tool's upstream output shape, raising the tool's error otherwise.
:func:`invoke_tool` is the host envelope: ``{"ok": true, "output": …}`` or
``{"ok": false, "error": {code, message, retryable?, cause?}}``.

Upstream host envelope details unknown; tavernlab chooses: unknown input fields are rejected
(``extra="forbid"``) so a typo never silently falls back to a default; ``ToolError`` keeps
its code, ``ProvisionCancelledError`` maps to ``cancelled``, every other typed error is
reported as ``internal`` with ``cause: {name, message}``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tavernlab.errors import TavernlabError
from tavernlab.worktree.cleanup import cleanup_worktree
from tavernlab.worktree.config import WriteFileSpec
from tavernlab.worktree.errors import ProvisionCancelledError, ToolError
from tavernlab.worktree.provision import provision_worktree
from tavernlab.worktree.scripts import run_gate as _run_gate
from tavernlab.worktree.scripts import run_script as _run_script
from tavernlab.worktree.services import list_services as _list_services
from tavernlab.worktree.services import start_service as _start_service
from tavernlab.worktree.services import stop_service as _stop_service

SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]*$"


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True, frozen=True)


def _absolute(field: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, str) and not os.path.isabs(value):
            raise ValueError(f"{field} must be an absolute path")
        return value
    return check


class ProvisionInput(_Input):
    """``worktree.provision`` 0.3.0 input."""

    repo_root: str = Field(alias="repoRoot")
    base: str = "origin/main"
    slug: str
    branch: str | None = None
    dir: str | None = None
    deps_cmd: str | None = Field(default=None, alias="depsCmd")
    copy_globs: list[str] | None = Field(default=None, alias="copyGlobs")
    clone_globs: list[str] | None = Field(default=None, alias="cloneGlobs")
    link_paths: list[str] | None = Field(default=None, alias="linkPaths")
    write_files: list[WriteFileSpec] | None = Field(default=None, alias="writeFiles")
    run_setup: bool = Field(default=True, alias="runSetup")
    setup_log_path: str | None = Field(default=None, alias="setupLogPath")
    retry_setup_on_failure: bool = Field(default=False, alias="retrySetupOnFailure")

    _abs_root = field_validator("repo_root")(_absolute("repoRoot"))
    _abs_log = field_validator("setup_log_path")(_absolute("setupLogPath"))

    @field_validator("slug")
    @classmethod
    def _slug(cls, value: str) -> str:
        import re

        if not re.match(SLUG_PATTERN, value):
            raise ValueError("slug must be lowercase kebab-case")
        return value


class GateInput(_Input):
    """``worktree.run-gate`` input."""

    cwd: str
    cmd: str


class CleanupInput(_Input):
    """``worktree.cleanup`` 0.2.0 input."""

    repo_root: str = Field(alias="repoRoot")
    cwd: str
    branch: str | None = None
    delete_branch: bool = Field(default=False, alias="deleteBranch")
    base: str = "origin/main"
    run_teardown: bool = Field(default=True, alias="runTeardown")
    discard_untracked: bool = Field(default=False, alias="discardUntracked")
    discard_modified: bool = Field(default=False, alias="discardModified")


class ScriptInput(_Input):
    """``worktree.run-script`` input."""

    repo_root: str = Field(alias="repoRoot")
    worktree_path: str = Field(alias="worktreePath")
    branch: str
    script: str
    base: str = "origin/main"


class StartServiceInput(ScriptInput):
    """``worktree.start-service`` input."""

    proxy_port: int | None = Field(default=None, alias="proxyPort", ge=1, le=65535)


class StopServiceInput(_Input):
    """``worktree.stop-service`` input."""

    worktree_path: str = Field(alias="worktreePath")
    script: str


class ListServicesInput(_Input):
    """``worktree.list-services`` input."""

    repo_root: str = Field(alias="repoRoot")
    worktree_path: str = Field(alias="worktreePath")
    branch: str
    base: str = "origin/main"
    proxy_port: int | None = Field(default=None, alias="proxyPort", ge=1, le=65535)


def _validation_text(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"]) or "<root>"
        message = str(item["msg"]).removeprefix("Value error, ")
        parts.append(f"{path}: {message}")
    return "; ".join(parts)


def validate_input(model: type[_Input], data: Any) -> Any:
    """Validate tool input; a violation raises ``ToolError("input_invalid", …)``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ToolError("input_invalid", _validation_text(exc)) from exc


def _provision(data: ProvisionInput) -> Any:
    return provision_worktree(
        data.repo_root, data.slug, base=data.base, branch=data.branch, dir=data.dir,
        deps_cmd=data.deps_cmd, copy_globs=data.copy_globs, clone_globs=data.clone_globs,
        link_paths=data.link_paths, write_files=data.write_files, run_setup=data.run_setup,
        setup_log_path=data.setup_log_path, retry_setup_on_failure=data.retry_setup_on_failure)


def _cleanup(data: CleanupInput) -> Any:
    return cleanup_worktree(
        data.repo_root, data.cwd, branch=data.branch, delete_branch=data.delete_branch,
        base=data.base, run_teardown_hooks=data.run_teardown,
        discard_untracked=data.discard_untracked, discard_modified=data.discard_modified)


@dataclass(frozen=True)
class ToolSpec:
    """A tool's contract row: name, version, input model, mutation, approval, risk."""

    name: str
    version: str
    input_model: type[_Input]
    run: Callable[[Any], Any]
    mutates: str | None
    approval: str
    risk: int


TOOLS: dict[str, ToolSpec] = {spec.name: spec for spec in (
    ToolSpec("worktree.provision", "0.3.0", ProvisionInput, _provision, "fs:write", "auto", 1),
    ToolSpec("worktree.run-gate", "0.1.0", GateInput,
             lambda d: _run_gate(d.cwd, d.cmd), None, "auto", 1),
    ToolSpec("worktree.cleanup", "0.2.0", CleanupInput, _cleanup, "fs:write", "auto", 2),
    ToolSpec("worktree.run-script", "0.1.0", ScriptInput,
             lambda d: _run_script(d.repo_root, d.worktree_path, d.branch, d.script, d.base),
             "fs:write", "auto", 1),
    ToolSpec("worktree.start-service", "0.1.0", StartServiceInput,
             lambda d: _start_service(d.repo_root, d.worktree_path, d.branch, d.script,
                                      base=d.base, proxy_port=d.proxy_port),
             "process:spawn", "auto", 1),
    ToolSpec("worktree.stop-service", "0.1.0", StopServiceInput,
             lambda d: _stop_service(d.worktree_path, d.script), "process:spawn", "auto", 1),
    ToolSpec("worktree.list-services", "0.1.0", ListServicesInput,
             lambda d: _list_services(d.repo_root, d.worktree_path, d.branch, base=d.base,
                                      proxy_port=d.proxy_port), None, "auto", 0),
)}


def call_tool(name: str, tool_input: dict[str, Any]) -> Any:
    """Run a worktree tool by name and return its upstream output shape.

    Raises ``ToolError("not_found")`` for an unknown tool, ``ToolError("input_invalid")``
    for bad input (before anything changes) and the tool's own errors unchanged.
    """
    spec = TOOLS.get(name)
    if spec is None:
        raise ToolError("not_found", f"unknown tool: {name}")
    return spec.run(validate_input(spec.input_model, tool_input))


def error_envelope(exc: BaseException) -> dict[str, Any]:
    """The ``{"ok": false, "error": …}`` envelope for a raised error."""
    if isinstance(exc, ToolError):
        error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    elif isinstance(exc, ProvisionCancelledError):
        error = {"code": "cancelled", "message": exc.message, "retryable": True}
    else:
        message = exc.message if isinstance(exc, TavernlabError) else str(exc)
        error = {"code": "internal", "message": message,
                 "cause": {"name": type(exc).__name__, "message": message}}
    return {"ok": False, "error": error}


def invoke_tool(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """Run a tool inside the host envelope; never raises for a tool failure."""
    try:
        return {"ok": True, "output": call_tool(name, tool_input)}
    except Exception as exc:
        return error_envelope(exc)


# -- snake_case Python functions ---------------------------------------------------------


def provision(repo_root: str, slug: str, **options: Any) -> Any:
    """``worktree.provision`` with snake_case options (``base``, ``deps_cmd``, …)."""
    return call_tool("worktree.provision", _camel({"repo_root": repo_root, "slug": slug,
                                                   **options}))


def run_gate(cwd: str, cmd: str) -> Any:
    """``worktree.run-gate``: ``{passed, exitCode, stdout, stderr}``."""
    return call_tool("worktree.run-gate", {"cwd": cwd, "cmd": cmd})


def cleanup(repo_root: str, cwd: str, **options: Any) -> Any:
    """``worktree.cleanup`` with snake_case options (``delete_branch``, ``discard_untracked``…)."""
    return call_tool("worktree.cleanup", _camel({"repo_root": repo_root, "cwd": cwd, **options}))


def run_script(repo_root: str, worktree_path: str, branch: str, script: str,
               **options: Any) -> Any:
    """``worktree.run-script``."""
    return call_tool("worktree.run-script", _camel({
        "repo_root": repo_root, "worktree_path": worktree_path, "branch": branch,
        "script": script, **options}))


def start_service(repo_root: str, worktree_path: str, branch: str, script: str,
                  **options: Any) -> Any:
    """``worktree.start-service`` (``base``, ``proxy_port``)."""
    return call_tool("worktree.start-service", _camel({
        "repo_root": repo_root, "worktree_path": worktree_path, "branch": branch,
        "script": script, **options}))


def stop_service(worktree_path: str, script: str) -> Any:
    """``worktree.stop-service``: ``{stopped}``."""
    return call_tool("worktree.stop-service", {"worktreePath": worktree_path, "script": script})


def list_services(repo_root: str, worktree_path: str, branch: str, **options: Any) -> Any:
    """``worktree.list-services``: ``{services: […]}``."""
    return call_tool("worktree.list-services", _camel({
        "repo_root": repo_root, "worktree_path": worktree_path, "branch": branch, **options}))


def _camel(options: dict[str, Any]) -> dict[str, Any]:
    def convert(key: str) -> str:
        head, *rest = key.split("_")
        return head + "".join(part.title() for part in rest)

    return {convert(key): value for key, value in options.items() if value is not None}
