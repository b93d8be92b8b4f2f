"""The seven worktree tools, declared once each (docs/worktrees.md), and the tool host.

Each tool is a :class:`~tavernlab.workspace.tools.ToolSpec`, the contract every tool family
shares: its id (``worktree.provision``…), model alias (the id with dots as underscores,
``worktree_provision``), description, the JSON Schema of its camelCase input, its contract row
(version, what it mutates, approval, risk) as ``annotations``, and a :class:`WorktreeHandler`
that validates the input and runs the tool's body. :func:`worktree_tool_specs` gives the seven
specs over a runtime; a lab offers them when it is given the host's ``worktree_tools``
provider, and a call through a run then leaves the run's tool events and stored result.

:func:`call_tool` runs a tool outside any run: it validates the input (``input_invalid`` on
failure, nothing changed) and returns the tool's upstream output shape, raising the tool's
error otherwise. Inside a run the host's common argument rule checks the names first
(``tool.invalid_arguments``: ``<key> is not supported``), and a typed error becomes a failed
call whose code is the envelope code below rather than failing the run.
:func:`invoke_tool` is the host envelope: ``{"ok": true, "output": …}`` or
``{"ok": false, "error": {code, message, retryable?, cause?}}`` (upstream host envelope
details unknown; tavernlab chooses this shape). The envelope code comes from
:func:`tavernlab.worktree._errors.envelope_code`; a cancelled provision is ``retryable``, and
every typed error reported as ``internal`` carries ``cause: {name, message}``.

Every call runs against a :class:`~tavernlab.worktree.WorktreeRuntime` (its
scheduler, service registry, clock and ids): the process-wide default unless one is given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tavernlab.errors import TavernlabError, ToolError
from tavernlab.workspace.tools import (
    Arguments,
    ToolContext,
    ToolResult,
    ToolSpec,
    compact_json,
    object_schema,
)
from tavernlab.worktree._cleanup import cleanup_worktree
from tavernlab.worktree._context import (
    ProvisionContext,
    current_provision_context,
    run_with_provision_context,
)
from tavernlab.worktree._errors import ProvisionCancelledError, envelope_code
from tavernlab.worktree._provision import provision_worktree
from tavernlab.worktree._runtime import WorktreeRuntime, default_runtime
from tavernlab.worktree._scripts import run_gate as _run_gate
from tavernlab.worktree._scripts import run_script as _run_script
from tavernlab.worktree._services import list_services as _list_services
from tavernlab.worktree._services import start_service as _start_service
from tavernlab.worktree._services import stop_service as _stop_service
from tavernlab.worktree._tool_inputs import (
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


class WorktreeHandler:
    """A worktree tool's handler: validate the input with ``input_model``, then run ``body``
    against a runtime.

    :meth:`run` is the tool outside a run (typed errors raised unchanged); calling the handler
    is the host's form (``handler(context, arguments)`` → :class:`ToolResult`, the output as
    compact JSON content and as ``structured``), where a typed error becomes a
    :class:`ToolError` with its envelope code so the model is told, not the run failed. In a
    run, a provision without an ambient provisioning context of its caller's gets one whose
    cancel signal is the call's token, so cancelling the call (``run.cancel()``) cancels the
    provision and removes its worktree. An interrupt (Ctrl-C, a kernel interrupt) during a
    provision removes the worktree too and then reaches the host as the interrupt it was, so
    the call is recorded as interrupted and the caller sees the ``KeyboardInterrupt``.
    """

    def __init__(self, input_model: type[ToolInput], body: Body,
                 runtime: Callable[[], WorktreeRuntime]) -> None:
        self.input_model = input_model
        self.body = body
        self.runtime = runtime

    def run(self, tool_input: Any, runtime: WorktreeRuntime | None = None) -> Any:
        """Validate ``tool_input`` (camelCase, or an instance of the input model) and run the
        tool; returns its upstream output shape."""
        data = validate_input(self.input_model, tool_input)
        return self.body(data, runtime or self.runtime())

    def __call__(self, context: ToolContext, arguments: Arguments) -> ToolResult:
        raw = dict(arguments.raw)
        try:
            if current_provision_context() is None:
                output = run_with_provision_context(ProvisionContext(signal=context.token),
                                                    lambda: self.run(raw))
            else:
                output = self.run(raw)
        except ToolError:
            raise
        except ProvisionCancelledError as exc:
            if exc.interrupted:  # the host's rule for an interrupt: record it, re-raise it
                raise KeyboardInterrupt from exc
            raise ToolError(envelope_code(exc), exc.message) from exc
        except TavernlabError as exc:
            raise ToolError(envelope_code(exc), exc.message) from exc
        return ToolResult(content=compact_json(output), structured=output)


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _flag(description: str, default: bool) -> dict[str, Any]:
    return {"type": "boolean", "description": description, "default": default}


def _paths(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


_PORT = {"type": "integer", "minimum": 1, "maximum": 65535,
         "description": "The reverse proxy's port (default: the configured one)."}
_BASE = {"type": "string", "default": "origin/main",
         "description": "The ref whose committed agentproto.json is used."}
_ROOT = _text("Absolute path of the source checkout.")
_WORKTREE = _text("Absolute path of the worktree.")
_BRANCH = _text("The worktree's branch.")
_SCRIPT = _text("The name of a script declared in agentproto.json.")

#: The JSON Schema of each tool's input, with upstream's camelCase names and defaults.
SCHEMAS: dict[str, dict[str, Any]] = {
    "worktree.provision": object_schema({
        "repoRoot": _ROOT,
        "base": {"type": "string", "default": "origin/main",
                 "description": "The ref the branch is cut from (no fallback when it does "
                                "not exist)."},
        "slug": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$",
                 "description": "The worktree's name, lowercase kebab-case."},
        "branch": _text("The branch to create (default wt/<slug>)."),
        "dir": _text("Absolute path of the worktree (default "
                     "<repoRoot>/../_worktrees/<slug>)."),
        "depsCmd": _text("A shell command run in the worktree to install dependencies."),
        "copyGlobs": _paths("File globs relative to repoRoot copied into the worktree "
                            "(** allowed)."),
        "cloneGlobs": _paths("Whole-entry globs cloned into the worktree (* and ? per "
                             "segment, ** rejected)."),
        "linkPaths": _paths("Paths symlinked from repoRoot into the worktree."),
        "writeFiles": {"type": "array", "description": "Files written into the worktree.",
                       "items": object_schema({
                           "path": _text("Path relative to the worktree."),
                           "content": _text("The text to write."),
                           "mode": {"type": "string", "enum": ["create", "append"],
                                    "default": "create"}}, ["path", "content"])},
        "runSetup": _flag("false disables the whole declarative lifecycle: both "
                          "configuration files and the setup hooks.", True),
        "setupLogPath": _text("Absolute path the full hook output is appended to."),
        "retrySetupOnFailure": _flag("Rerun a failing setup command once.", False),
    }, ["repoRoot", "slug"]),
    "worktree.run-gate": object_schema({
        "cwd": _text("The directory to run the command in."),
        "cmd": _text("The shell command; the gate passes when it exits 0."),
    }, ["cwd", "cmd"]),
    "worktree.cleanup": object_schema({
        "repoRoot": _ROOT,
        "cwd": _WORKTREE,
        "branch": _text("The worktree's branch (teardown hooks; deleteBranch)."),
        "deleteBranch": _flag("Delete the branch after removing the worktree (only with "
                              "branch).", False),
        "base": {**_BASE, "description": "The ref that supplies the teardown hooks."},
        "runTeardown": _flag("Run the teardown hooks first.", True),
        "discardUntracked": _flag("Authorize discarding untracked files.", False),
        "discardModified": _flag("Authorize discarding staged or unstaged changes to "
                                 "tracked files.", False),
    }, ["repoRoot", "cwd"]),
    "worktree.run-script": object_schema({
        "repoRoot": _ROOT, "worktreePath": _WORKTREE, "branch": _BRANCH, "script": _SCRIPT,
        "base": _BASE,
    }, ["repoRoot", "worktreePath", "branch", "script"]),
    "worktree.start-service": object_schema({
        "repoRoot": _ROOT, "worktreePath": _WORKTREE, "branch": _BRANCH,
        "script": _text("The name of a service declared (type: \"service\") in "
                        "agentproto.json."),
        "base": _BASE, "proxyPort": _PORT,
    }, ["repoRoot", "worktreePath", "branch", "script"]),
    "worktree.stop-service": object_schema({
        "worktreePath": _WORKTREE,
        "script": _text("The name of the service to stop."),
    }, ["worktreePath", "script"]),
    "worktree.list-services": object_schema({
        "repoRoot": _ROOT, "worktreePath": _WORKTREE, "branch": _BRANCH, "base": _BASE,
        "proxyPort": _PORT,
    }, ["repoRoot", "worktreePath", "branch"]),
}

#: One row per tool: id, contract version, input model, body, what it mutates, approval,
#: risk, title, description.
_DECLARED: tuple[tuple[str, str, type[ToolInput], Body, str | None, str, int, str, str],
                 ...] = (
    ("worktree.provision", "0.3.0", ProvisionInput, provision_worktree, "fs:write", "auto", 1,
     "Provision worktree",
     "Create a git worktree on a new branch cut from base, then run its declarative "
     "lifecycle (links, written files, clone, dependencies, copies, setup hooks). "
     "Returns {cwd, branch}."),
    ("worktree.run-gate", "0.1.0", GateInput,
     lambda d, _: _run_gate(d.cwd, d.cmd), None, "auto", 1, "Run gate",
     "Run a shell command in a directory and report whether it exited 0. Returns "
     "{passed, exitCode, stdout, stderr}; never fails on a non-zero exit."),
    ("worktree.cleanup", "0.2.0", CleanupInput, _cleanup, "fs:write", "auto", 2,
     "Clean up worktree",
     "Stop the worktree's services, run its teardown hooks and remove it (refusing a "
     "dirty tree unless discarding is authorized), optionally deleting its branch. "
     "Returns {removed: true}."),
    ("worktree.run-script", "0.1.0", ScriptInput,
     lambda d, _: _run_script(d.repo_root, d.worktree_path, d.branch, d.script, d.base),
     "fs:write", "auto", 1, "Run script",
     "Run a script declared in the committed agentproto.json once in the worktree with "
     "the hook environment. Returns {passed, exitCode, stdout, stderr}."),
    ("worktree.start-service", "0.1.0", StartServiceInput, _start, "process:spawn", "auto",
     1, "Start service",
     "Start a service declared in agentproto.json for the worktree (or report it if it "
     "already runs). Returns the service's status."),
    ("worktree.stop-service", "0.1.0", StopServiceInput,
     lambda d, rt: _stop_service(d.worktree_path, d.script, registry=rt.services),
     "process:spawn", "auto", 1, "Stop service",
     "Stop a running service of the worktree and drop its proxy route. Returns "
     "{stopped}."),
    ("worktree.list-services", "0.1.0", ListServicesInput, _list, None, "auto", 0,
     "List services",
     "List the worktree's declared services with their status, ports and hostnames. "
     "Returns {services: [...]}."),
)


def worktree_tool_specs(runtime: Callable[[], WorktreeRuntime] = default_runtime
                        ) -> tuple[ToolSpec, ...]:
    """The seven worktree tools as specs of the common tool contract, running against the
    runtime ``runtime()`` returns when a call is made (default: the process-wide one)."""
    specs = []
    for (tool_id, version, model, body, mutates, approval, risk, title,
         description) in _DECLARED:
        schema = SCHEMAS[tool_id]
        annotations: Mapping[str, Any] = {
            "readOnly": mutates is None, "mutating": mutates is not None,
            "contractVersion": version, "mutates": mutates, "approval": approval,
            "risk": risk}
        specs.append(ToolSpec(tool_id, WorktreeHandler(model, body, runtime), mutating=False,
                              description=description, arguments=tuple(schema["properties"]),
                              title=title, input_schema=schema, annotations=annotations))
    return tuple(specs)


#: The seven tools over the process-wide runtime, by id.
TOOLS: dict[str, ToolSpec] = {spec.id: spec for spec in worktree_tool_specs()}


def call_tool(name: str, tool_input: Mapping[str, Any] | ToolInput,
              runtime: WorktreeRuntime | None = None) -> Any:
    """Run a worktree tool by name and return its upstream output shape. ``tool_input`` is
    its camelCase input, or an already validated instance of the tool's input model.

    Raises ``ToolError("not_found")`` for an unknown tool, ``ToolError("input_invalid")``
    for bad input (before anything changes) and the tool's own errors unchanged.
    """
    spec = TOOLS.get(name)
    if spec is None:
        raise ToolError("not_found", f"unknown tool: {name}")
    handler = spec.handler
    assert isinstance(handler, WorktreeHandler)
    return handler.run(tool_input, runtime)


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


def invoke_tool(name: str, tool_input: Mapping[str, Any] | ToolInput,
                runtime: WorktreeRuntime | None = None) -> dict[str, Any]:
    """Run a tool inside the host envelope; never raises for a tool failure."""
    try:
        return {"ok": True, "output": call_tool(name, tool_input, runtime)}
    except Exception as exc:
        return error_envelope(exc)


# -- snake_case Python functions ---------------------------------------------------------


def provision(repo_root: str, slug: str, **options: Any) -> Any:
    """``worktree.provision`` with snake_case options (``base``, ``deps_cmd``, …)."""
    return call_tool("worktree.provision", ProvisionInput.from_python(
        repo_root=repo_root, slug=slug, **options))


def run_gate(cwd: str, cmd: str) -> Any:
    """``worktree.run-gate``: ``{passed, exitCode, stdout, stderr}``."""
    return call_tool("worktree.run-gate", GateInput.from_python(cwd=cwd, cmd=cmd))


def cleanup(repo_root: str, cwd: str, **options: Any) -> Any:
    """``worktree.cleanup`` with snake_case options (``delete_branch``, ``discard_untracked``…)."""
    return call_tool("worktree.cleanup", CleanupInput.from_python(
        repo_root=repo_root, cwd=cwd, **options))


def run_script(repo_root: str, worktree_path: str, branch: str, script: str,
               **options: Any) -> Any:
    """``worktree.run-script``."""
    return call_tool("worktree.run-script", ScriptInput.from_python(
        repo_root=repo_root, worktree_path=worktree_path, branch=branch, script=script,
        **options))


def start_service(repo_root: str, worktree_path: str, branch: str, script: str,
                  **options: Any) -> Any:
    """``worktree.start-service`` (``base``, ``proxy_port``)."""
    return call_tool("worktree.start-service", StartServiceInput.from_python(
        repo_root=repo_root, worktree_path=worktree_path, branch=branch, script=script,
        **options))


def stop_service(worktree_path: str, script: str) -> Any:
    """``worktree.stop-service``: ``{stopped}``."""
    return call_tool("worktree.stop-service", StopServiceInput.from_python(
        worktree_path=worktree_path, script=script))


def list_services(repo_root: str, worktree_path: str, branch: str, **options: Any) -> Any:
    """``worktree.list-services``: ``{services: […]}``."""
    return call_tool("worktree.list-services", ListServicesInput.from_python(
        repo_root=repo_root, worktree_path=worktree_path, branch=branch, **options))
