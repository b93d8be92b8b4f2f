"""The legacy ``skill.run_script`` engine (spec/js-and-skills.md section 7, seed 003).

The tool (:mod:`tavernlab.skills.run_script`) builds a :class:`SkillScriptRequest` - the
entry, the ``scripts/**/*.js`` module snapshot, ``args``, the Invocation's roots, a text
snapshot of the workspace and the context JSON - and :func:`run_skill_script` executes it:

* the entry module runs in a worker (fresh Runtime, 32 MiB, 256 KiB), then ``default(args)``
  (else ``main(args)``) is called and awaited; its value is serialized with the
  ``JSON.stringify`` captured before any script code ran, so replacing ``globalThis.JSON``
  changes nothing;
* ``@tauritavern/runtime/v1`` (also registered as ``@tauritavern/runtime``, the V3 name) exports
  ``workspace`` (the in-memory overlay, :class:`ScriptOverlay`, served by the parent),
  ``context`` (plain JSON), ``log`` (``info``/``warn``/``error``/``debug``, one string each) and,
  as the V3 superset, ``macros.render``; no globals are added (no ``console``, no
  ``process``);
* nothing touches storage: the outcome holds the final-state delta sorted by path and the
  path of the last ``writeText`` call; the tool writes it back.

Limits (7.7): 30 s execution (``time_limit``, starting when a worker takes the job; queueing
does not count), result 256 KiB, 64 modules / 2 MiB, 8 MiB input, 1 MiB output. Logs are
forwarded as they happen to the Python logger ``tavernlab.skill_script`` with the prefix
``[skill-script]`` at their level and never reach the model.

tavernlab choices where upstream is unknown (documented here):

* The module-snapshot limit error is ``skill `<skill>` scripts exceed the 64-module /
  2097152-byte snapshot limit`` (:class:`SkillScriptValidationError`, which aborts the call).
* Overlay path cleaning: NUL -> ``path contains NUL``; a leading ``/`` (also after ``\\`` ->
  ``/``) -> ``absolute paths are not allowed``; ``..`` above the top -> ``path escapes the
  workspace``. Messages name the cleaned path. A non-string argument throws ``TypeError``.
* The output-budget message: ``total skill script output is <N> bytes (writes + logs +
  result), exceeding the 1048576-byte limit``.
* A run without a host context gets empty ``worldInfo.entries``, ``variables`` and ``macro``
  groups instead of failing.
* The entry is ``default`` when it is a function, else ``main`` when it is a function.
* Cancellation is ``skill.run_script_execution_failed`` with ``Skill script <entry> was
  cancelled.`` (a recoverable result: the run records the cancelled call and goes on); a
  crashed worker is ``skill.run_script_execution_failed`` too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tavernlab.cancel import CancelToken
from tavernlab.errors import TavernlabError
from tavernlab.js.limits import (
    DEFAULT_TIME_LIMIT,
    LEGACY_ENTRY_COST,
    LEGACY_INPUT_LIMIT,
    LEGACY_MAX_MODULES,
    LEGACY_MODULE_BYTES,
    LEGACY_OUTPUT_LIMIT,
    LEGACY_RESULT_LIMIT,
)
from tavernlab.js.modules import (
    LEGACY_RUNTIME_MODULE,
    RUNTIME_MODULE,
    ModuleLoadError,
    SnapshotModuleLoader,
    build_module_graph,
)
from tavernlab.js.pool import CapabilityError, JobOutcome, WorkerPool, default_pool
from tavernlab.workspace.macros import FrozenMacros

logger = logging.getLogger("tavernlab.skill_script")
LOG_PREFIX = "[skill-script]"
_LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
               "error": logging.ERROR}

EXECUTION_FAILED = "skill.run_script_execution_failed"
RESULT_TOO_LARGE = "skill.run_script_result_too_large"
NOT_FOUND = "skill.run_script_not_found"


class SkillScriptError(TavernlabError):
    """A recoverable script failure with its tool code (execution failed, result too large,
    not found); the tool turns it into an error result."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


class SkillScriptValidationError(TavernlabError):
    """A request that must not run at all (module snapshot or workspace snapshot over its
    limit); not a recoverable tool result - it aborts the call."""

    code = "skill.run_script_invalid_request"


class SkillScriptContextError(TavernlabError):
    """A malformed frozen context: ``agent.invalid_skill_script_context: <detail>``."""

    code = "agent.invalid_skill_script_context"

    def __init__(self, detail: str) -> None:
        super().__init__(f"agent.invalid_skill_script_context: {detail}")


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """One UTF-8 workspace file as the script sees it, with the digest of its bytes."""

    text: str
    sha256: str


@dataclass(frozen=True, slots=True)
class SkillScriptRequest:
    """Everything the engine needs; nothing in it refers to live storage.

    ``entry`` is the logical entry module (``scripts/<script>.js``), ``modules`` maps logical
    names to sources (``scripts/**/*.js`` only), ``visible_roots``/``writable_roots`` come from
    the Invocation manifest, ``files`` is the workspace text snapshot (path -> text + SHA-256),
    ``context`` the JSON object scripts import, ``macros`` serves ``macros.render``.
    """

    skill: str
    entry: str
    modules: Mapping[str, str]
    args: Mapping[str, Any]
    visible_roots: tuple[str, ...]
    writable_roots: tuple[str, ...]
    files: Mapping[str, SnapshotFile] = field(default_factory=dict)
    context: Mapping[str, Any] = field(default_factory=dict)
    macros: FrozenMacros = field(default_factory=FrozenMacros)
    time_limit: float = DEFAULT_TIME_LIMIT


@dataclass(frozen=True, slots=True)
class ScriptWrite:
    """The final content of one written path."""

    path: str
    text: str


@dataclass(frozen=True, slots=True)
class ScriptLog:
    """One ``log.<level>(message)`` call."""

    level: str
    message: str


@dataclass(frozen=True, slots=True)
class SkillScriptOutcome:
    """A successful execution: the returned value (and its JSON), the delta sorted by path, the
    last ``writeText`` path (call order) and the log calls."""

    value: Any
    result_json: str
    writes: tuple[ScriptWrite, ...]
    last_write_path: str | None
    logs: tuple[ScriptLog, ...]


def legacy_context(snapshot: Mapping[str, Any] | None, macros: FrozenMacros) -> dict[str, Any]:
    """``{worldInfo: {entries}, variables: {local, global}, macro}`` from the frozen prompt
    snapshot (7.1 step 7); raises :class:`SkillScriptContextError` when it is malformed."""
    macro = macros.context_macro() or {"names": {}, "character": {}, "system": {}, "chat": {}}
    if snapshot is None:
        return {"worldInfo": {"entries": []}, "variables": {"local": {}, "global": {}},
                "macro": macro}
    activation = snapshot.get("worldInfoActivation")
    if activation is None:
        entries: list[Any] = []
    elif not isinstance(activation, Mapping):
        raise SkillScriptContextError("worldInfoActivation must be an object")
    else:
        raw_entries = activation.get("entries", [])
        if not isinstance(raw_entries, list):
            raise SkillScriptContextError("worldInfoActivation.entries must be an array")
        entries = raw_entries
    variables = snapshot.get("variables")
    if variables is None:
        variables = {}
    if not isinstance(variables, Mapping):
        raise SkillScriptContextError("variables must be an object")
    scopes: dict[str, Any] = {}
    for scope in ("local", "global"):
        value = variables.get(scope)
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise SkillScriptContextError(f"variables.{scope} must be an object")
        scopes[scope] = dict(value)
    return {"worldInfo": {"entries": entries}, "variables": scopes, "macro": macro}


def validate_module_snapshot(skill: str, modules: Mapping[str, str]) -> None:
    """At most 64 modules and 2 MiB of source, else :class:`SkillScriptValidationError`."""
    total = sum(len(source.encode("utf-8")) for source in modules.values())
    if len(modules) > LEGACY_MAX_MODULES or total > LEGACY_MODULE_BYTES:
        raise SkillScriptValidationError(
            f"skill `{skill}` scripts exceed the {LEGACY_MAX_MODULES}-module / "
            f"{LEGACY_MODULE_BYTES}-byte snapshot limit")


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def _output_message(total: int) -> str:
    return (f"total skill script output is {total} bytes (writes + logs + result), exceeding "
            f"the {LEGACY_OUTPUT_LIMIT}-byte limit")


# --- the overlay -------------------------------------------------------------------------------


class ScriptOverlay:
    """The script's file API over the snapshot (7.5), plus log collection and the output
    budget; a :class:`~tavernlab.js.pool.CapabilityServer` served in the parent."""

    def __init__(self, request: SkillScriptRequest) -> None:
        self.visible = frozenset(request.visible_roots)
        self.writable = frozenset(request.writable_roots)
        self.files = request.files
        self.macros = request.macros
        self.writes: dict[str, str] = {}
        self.write_costs: dict[str, int] = {}
        self.last_write: str | None = None
        self.logs: list[ScriptLog] = []
        self.log_cost = 0

    @property
    def output_used(self) -> int:
        """Bytes charged to the output budget so far (writes at their final state + logs)."""
        return sum(self.write_costs.values()) + self.log_cost

    def output(self, stream: int, text: str) -> None:
        """Legacy scripts have no console; nothing is ever emitted."""

    def serve(self, op: str, a: Any, b: Any) -> Any:
        """Dispatch one runtime call."""
        if op == "readText":
            return self.read_text(a)
        if op == "writeText":
            self.write_text(a, b)
            return None
        if op == "exists":
            return self.exists(a)
        if op == "listFiles":
            return self.list_files(a)
        if op == "render":
            try:
                return self.macros.render(a)
            except TavernlabError as exc:
                raise CapabilityError(exc.message) from None
        if op == "log":
            self.log(a, b)
            return None
        raise CapabilityError(f"unknown runtime call {op}")

    # -- paths ----------------------------------------------------------------------------------

    @staticmethod
    def clean(path: str) -> str:
        """Upstream's path cleaning: ``""`` is the workspace root."""
        if "\0" in path:
            raise CapabilityError("path contains NUL")
        text = path.replace("\\", "/")
        if text.startswith("/"):
            raise CapabilityError("absolute paths are not allowed")
        segments: list[str] = []
        for segment in text.split("/"):
            if segment in ("", "."):
                continue
            if segment == "..":
                if not segments:
                    raise CapabilityError("path escapes the workspace")
                segments.pop()
            else:
                segments.append(segment)
        return "/".join(segments)

    def _visible(self, path: str) -> bool:
        return bool(path) and path.split("/", 1)[0] in self.visible

    def _require_visible(self, raw: str) -> str:
        path = self.clean(raw)
        if not self._visible(path):
            raise CapabilityError(f"path is outside the visible workspace roots: {path or raw}")
        return path

    def _known(self) -> set[str]:
        return set(self.files) | set(self.writes)

    # -- operations -----------------------------------------------------------------------------

    def read_text(self, raw: str) -> str:
        """Overlay over snapshot; ``file not found: <path>`` otherwise."""
        path = self._require_visible(raw)
        if path in self.writes:
            return self.writes[path]
        snapshot = self.files.get(path)
        if snapshot is None:
            raise CapabilityError(f"file not found: {path}")
        return snapshot.text

    def write_text(self, raw: str, text: str) -> None:
        """A strict child of a writable root; final state per path, budgeted once."""
        path = self.clean(raw)
        parts = path.split("/")
        if len(parts) < 2 or parts[0] not in self.writable:
            raise CapabilityError(
                f"path is outside the writable workspace roots: {path or raw}")
        cost = _utf8(path) + _utf8(text) + LEGACY_ENTRY_COST
        total = self.output_used - self.write_costs.get(path, 0) + cost
        if total > LEGACY_OUTPUT_LIMIT:
            raise CapabilityError(_output_message(total))
        self.writes[path] = text
        self.write_costs[path] = cost
        self.last_write = path

    def exists(self, raw: str) -> bool:
        """True for a known file or an implied directory; never throws for a path."""
        try:
            path = self.clean(raw)
        except CapabilityError:
            return False
        if not self._visible(path):
            return False
        known = self._known()
        prefix = path + "/"
        return path in known or any(name.startswith(prefix) for name in known)

    def list_files(self, raw: str | None) -> list[str]:
        """Top-level names of known files, or the files under a visible directory."""
        known = self._known()
        if raw is None:
            return sorted({name.split("/", 1)[0] for name in known})
        path = self._require_visible(raw)
        prefix = path + "/"
        return sorted(name[len(prefix):] for name in known if name.startswith(prefix))

    def log(self, level: str, message: str) -> None:
        """Budget, collect and forward one log call."""
        cost = _utf8(message) + LEGACY_ENTRY_COST
        total = self.output_used + cost
        if total > LEGACY_OUTPUT_LIMIT:
            raise CapabilityError(_output_message(total))
        self.log_cost += cost
        self.logs.append(ScriptLog(level, message))
        logger.log(_LOG_LEVELS.get(level, logging.INFO), "%s %s", LOG_PREFIX, message)

    def delta(self) -> tuple[ScriptWrite, ...]:
        """The final-state writes, sorted by path."""
        return tuple(ScriptWrite(path, self.writes[path]) for path in sorted(self.writes))


# --- running -------------------------------------------------------------------------------


def request_input_bytes(request: SkillScriptRequest, args_json: str, context_json: str) -> int:
    """Modules + workspace snapshot texts + args JSON + context JSON, in UTF-8 bytes."""
    return (sum(_utf8(source) for source in request.modules.values())
            + sum(_utf8(f.text) for f in request.files.values())
            + _utf8(args_json) + _utf8(context_json))


def run_skill_script(request: SkillScriptRequest, *, token: CancelToken | None = None,
                     pool: WorkerPool | None = None) -> SkillScriptOutcome:
    """Execute ``request`` (see the module docstring); raises :class:`SkillScriptError` or
    :class:`SkillScriptValidationError`."""
    entry = request.entry
    validate_module_snapshot(request.skill, request.modules)
    if entry not in request.modules:
        raise SkillScriptError(NOT_FOUND, f"Script `{entry}` was not found in skill "
                               f"`{request.skill}`. Call skill_read on this skill's SKILL.md "
                               "to check which scripts it ships.")
    args_json = json.dumps(request.args, ensure_ascii=False)
    context_json = json.dumps(request.context, ensure_ascii=False)
    size = request_input_bytes(request, args_json, context_json)
    if size > LEGACY_INPUT_LIMIT:
        raise SkillScriptError(EXECUTION_FAILED, (
            f"total skill script input is {size} bytes (modules + workspace snapshot + args + "
            f"context), exceeding the {LEGACY_INPUT_LIMIT}-byte limit"))
    try:
        graph = build_module_graph(entry, request.modules[entry].encode("utf-8"),
                                   SnapshotModuleLoader(request.modules))
    except ModuleLoadError as exc:
        raise SkillScriptError(EXECUTION_FAILED, _failed(entry, exc.message, exc.stack)) from None
    overlay = ScriptOverlay(request)
    spec = {
        "mode": "legacy",
        "entry": entry,
        "modules": graph.modules,
        "runtime_names": [LEGACY_RUNTIME_MODULE, RUNTIME_MODULE],
        "context": context_json,
        "args": args_json,
        "result_limit": LEGACY_RESULT_LIMIT,
    }
    outcome = (pool or default_pool()).run(spec, overlay, time_limit=request.time_limit,
                                          token=token)
    return _finish(request, overlay, outcome)


def _failed(entry: str, message: str, stack: str) -> str:
    text = f"Skill script {entry} failed: {message}"
    return f"{text}\n{stack}" if stack else text


def _finish(request: SkillScriptRequest, overlay: ScriptOverlay,
            outcome: JobOutcome) -> SkillScriptOutcome:
    entry = request.entry
    if outcome.status == "interrupted" and outcome.reason == "deadline":
        raise SkillScriptError(EXECUTION_FAILED, f"Skill script {entry} timed out after "
                               f"{request.time_limit:.1f}s and was interrupted.")
    if outcome.status == "interrupted" and outcome.reason == "cancel":
        raise SkillScriptError(EXECUTION_FAILED, f"Skill script {entry} was cancelled.")
    if outcome.status != "ok":
        raise SkillScriptError(EXECUTION_FAILED, _failed(entry, outcome.message, outcome.stack))
    if outcome.result_json is None:
        raise SkillScriptError(RESULT_TOO_LARGE, (
            f"Skill script result is {outcome.result_bytes} bytes, exceeding the "
            f"{LEGACY_RESULT_LIMIT}-byte limit. Return less data from the script and write "
            "large output to the workspace with workspace.writeText instead."))
    total = overlay.output_used + outcome.result_bytes
    if total > LEGACY_OUTPUT_LIMIT:
        raise SkillScriptError(EXECUTION_FAILED, _output_message(total))
    writes = overlay.delta()
    if overlay.last_write is not None and overlay.last_write not in overlay.writes:
        raise TavernlabError(f"skill script engine: last write `{overlay.last_write}` is not "
                             "in the delta")
    return SkillScriptOutcome(value=json.loads(outcome.result_json),
                              result_json=outcome.result_json, writes=writes,
                              last_write_path=overlay.last_write, logs=tuple(overlay.logs))
