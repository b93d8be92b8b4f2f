"""The seven worktree tools and the tool host (docs/worktrees.md).

:func:`call_tool` validates the input (``input_invalid`` on failure, nothing changed) and
returns the tool's upstream output shape, raising the tool's error otherwise.
:func:`invoke_tool` is the host envelope: ``{"ok": true, "output": …}`` or
``{"ok": false, "error": {code, message, retryable?, cause?}}`` (upstream host envelope
details unknown; tavernlab chooses this shape). The envelope code comes from
:func:`tavernlab.worktree.errors.envelope_code`; a cancelled provision is ``retryable``, and
every typed error reported as ``internal`` carries ``cause: {name, message}``.

Every call runs against a :class:`~tavernlab.worktree.runtime.WorktreeRuntime` (its
scheduler, service registry, clock and ids): the process-wide default unless one is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic.alias_generators import to_camel

from tavernlab.errors import TavernlabError, ToolError
from tavernlab.worktree.cleanup import cleanup_worktree
from tavernlab.worktree.errors import envelope_code
from tavernlab.worktree.provision import ProvisionRequest, provision_worktree
from tavernlab.worktree.runtime import WorktreeRuntime, default_runtime
from tavernlab.worktree.scripts import run_gate as _run_gate
from tavernlab.worktree.scripts import run_script as _run_script
from tavernlab.worktree.services import list_services as _list_services
from tavernlab.worktree.services import start_service as _start_service
from tavernlab.worktree.services import stop_service as _stop_service
from tavernlab.worktree.tool_inputs import (
    CleanupInput,
    GateInput,
    ListServicesInput,
    ProvisionInput,
    ScriptInput,
    StartServiceInput,
    StopServiceInput,
    ToolInput,
    validate_input,
)

Body = Callable[[Any, WorktreeRuntime], Any]


def _provision(data: ProvisionInput, runtime: WorktreeRuntime) -> Any:
    request = ProvisionRequest(
        repo_root=data.repo_root, slug=data.slug, base=data.base, branch=data.branch,
        dir=data.dir, deps_cmd=data.deps_cmd, copy_globs=data.copy_globs,
        clone_globs=data.clone_globs, link_paths=data.link_paths, write_files=data.write_files,
        run_setup=data.run_setup, setup_log_path=data.setup_log_path,
        retry_setup_on_failure=data.retry_setup_on_failure)
    return provision_worktree(request, runtime)


def _cleanup(data: CleanupInput, runtime: WorktreeRuntime) -> Any:
    return cleanup_worktree(
        data.repo_root, data.cwd, branch=data.branch, delete_branch=data.delete_branch,
        base=data.base, run_teardown_hooks=data.run_teardown,
        discard_untracked=data.discard_untracked, discard_modified=data.discard_modified,
        services=runtime.services)


def _start(data: StartServiceInput, runtime: WorktreeRuntime) -> Any:
    return _start_service(data.repo_root, data.worktree_path, data.branch, data.script,
                          base=data.base, proxy_port=data.proxy_port,
                          registry=runtime.services)


def _list(data: ListServicesInput, runtime: WorktreeRuntime) -> Any:
    return _list_services(data.repo_root, data.worktree_path, data.branch, base=data.base,
                          proxy_port=data.proxy_port, registry=runtime.services)


@dataclass(frozen=True)
class ToolSpec:
    """A tool's contract row: name, version, input model, mutation, approval, risk."""

    name: str
    version: str
    input_model: type[ToolInput]
    run: Body
    mutates: str | None
    approval: str
    risk: int


TOOLS: dict[str, ToolSpec] = {spec.name: spec for spec in (
    ToolSpec("worktree.provision", "0.3.0", ProvisionInput, _provision, "fs:write", "auto", 1),
    ToolSpec("worktree.run-gate", "0.1.0", GateInput,
             lambda d, _: _run_gate(d.cwd, d.cmd), None, "auto", 1),
    ToolSpec("worktree.cleanup", "0.2.0", CleanupInput, _cleanup, "fs:write", "auto", 2),
    ToolSpec("worktree.run-script", "0.1.0", ScriptInput,
             lambda d, _: _run_script(d.repo_root, d.worktree_path, d.branch, d.script, d.base),
             "fs:write", "auto", 1),
    ToolSpec("worktree.start-service", "0.1.0", StartServiceInput, _start,
             "process:spawn", "auto", 1),
    ToolSpec("worktree.stop-service", "0.1.0", StopServiceInput,
             lambda d, rt: _stop_service(d.worktree_path, d.script, registry=rt.services),
             "process:spawn", "auto", 1),
    ToolSpec("worktree.list-services", "0.1.0", ListServicesInput, _list, None, "auto", 0),
)}


def call_tool(name: str, tool_input: dict[str, Any],
              runtime: WorktreeRuntime | None = None) -> Any:
    """Run a worktree tool by name and return its upstream output shape.

    Raises ``ToolError("not_found")`` for an unknown tool, ``ToolError("input_invalid")``
    for bad input (before anything changes) and the tool's own errors unchanged.
    """
    spec = TOOLS.get(name)
    if spec is None:
        raise ToolError("not_found", f"unknown tool: {name}")
    return spec.run(validate_input(spec.input_model, tool_input), runtime or default_runtime())


def error_envelope(exc: BaseException) -> dict[str, Any]:
    """The ``{"ok": false, "error": …}`` envelope for a raised error."""
    code = envelope_code(exc)
    message = exc.message if isinstance(exc, TavernlabError) else str(exc)
    error: dict[str, Any] = {"code": code, "message": message}
    if code == "cancelled":
        error["retryable"] = True
    elif code == "internal":
        error["cause"] = {"name": type(exc).__name__, "message": message}
    return {"ok": False, "error": error}


def invoke_tool(name: str, tool_input: dict[str, Any],
                runtime: WorktreeRuntime | None = None) -> dict[str, Any]:
    """Run a tool inside the host envelope; never raises for a tool failure."""
    try:
        return {"ok": True, "output": call_tool(name, tool_input, runtime)}
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
    """snake_case options as the tools' camelCase input (the rule every model uses)."""
    return {to_camel(key): value for key, value in options.items() if value is not None}
