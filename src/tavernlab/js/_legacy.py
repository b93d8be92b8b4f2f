"""The legacy ``skill.run_script`` engine (docs/js-and-skills.md, "The legacy engine").

The tool (:mod:`tavernlab.skills._run_script`) builds a :class:`SkillScriptRequest` - the
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

Limits: 30 s execution (``time_limit``, starting when a worker takes the job; queueing
does not count), result 256 KiB, 64 modules / 2 MiB, 8 MiB input, 1 MiB output. Logs are
forwarded as they happen to the Python logger ``tavernlab.skill_script`` with the prefix
``[skill-script]`` at their level and never reach the model.

tavernlab choices where upstream is unknown (documented here):

* The module-snapshot limit error is ``skill `<skill>` scripts exceed the 64-module /
  2097152-byte snapshot limit`` (:class:`SkillScriptValidationError`, which aborts the call);
  :func:`check_module_snapshot` is the one place that rule lives (the tool applies it while it
  reads the package).
* The overlay's path cleaning and output-budget wording: see :mod:`tavernlab.js._overlay`. A
  non-string argument throws ``TypeError``.
* A run without a host context gets empty ``worldInfo.entries``, ``variables`` and ``macro``
  groups instead of failing.
* The entry is ``default`` when it is a function, else ``main`` when it is a function.
* Cancellation is ``skill.run_script_execution_failed`` with ``Skill script <entry> was
  cancelled.`` (a recoverable result: the run records the cancelled call and goes on); a
  crashed worker is ``skill.run_script_execution_failed`` too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tavernlab.cancel import CancelToken
from tavernlab.clock import Clock
from tavernlab.errors import TavernlabError
from tavernlab.js._builtins import LEGACY_BUILTINS
from tavernlab.js._determinism import random_state, time_origin
from tavernlab.js._errors import (
    ModuleLoadError,
    SkillScriptContextError,
    SkillScriptError,
    SkillScriptValidationError,
)
from tavernlab.js._job import Job, JobOutcome
from tavernlab.js._limits import (
    DEFAULT_DEADLINE_S,
    LEGACY_INPUT_LIMIT,
    LEGACY_MAX_MODULES,
    LEGACY_MODULE_BYTES,
    LEGACY_OUTPUT_LIMIT,
    LEGACY_RESULT_LIMIT,
)
from tavernlab.js._loaders import SnapshotModuleLoader
from tavernlab.js._modules import build_module_graph
from tavernlab.js._overlay import (
    ScriptLog,
    ScriptOverlay,
    ScriptWrite,
    SnapshotFile,
    output_exceeded,
    utf8_size,
)
from tavernlab.js._pool import WorkerPool, default_pool
from tavernlab.workspace.macros import FrozenMacros

__all__ = [
    "ScriptLog",
    "ScriptWrite",
    "SkillScriptOutcome",
    "SkillScriptRequest",
    "SnapshotFile",
    "check_module_snapshot",
    "legacy_context",
    "run_skill_script",
]

EXECUTION_FAILED = "skill.run_script_execution_failed"
RESULT_TOO_LARGE = "skill.run_script_result_too_large"
NOT_FOUND = "skill.run_script_not_found"


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
    time_limit: float = DEFAULT_DEADLINE_S


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
    snapshot; raises :class:`SkillScriptContextError` when it is malformed."""
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


def check_module_snapshot(skill: str, count: int, size: int) -> None:
    """A module snapshot of ``count`` modules and ``size`` source bytes may hold at most 64
    modules and 2 MiB, else :class:`SkillScriptValidationError`."""
    if count > LEGACY_MAX_MODULES or size > LEGACY_MODULE_BYTES:
        raise SkillScriptValidationError(
            f"skill `{skill}` scripts exceed the {LEGACY_MAX_MODULES}-module / "
            f"{LEGACY_MODULE_BYTES}-byte snapshot limit")


def request_input_bytes(request: SkillScriptRequest, args_json: str, context_json: str) -> int:
    """Modules + workspace snapshot texts + args JSON + context JSON, in UTF-8 bytes."""
    return (sum(utf8_size(source) for source in request.modules.values())
            + sum(utf8_size(f.text) for f in request.files.values())
            + utf8_size(args_json) + utf8_size(context_json))


def run_skill_script(request: SkillScriptRequest, *, token: CancelToken | None = None,
                     pool: WorkerPool | None = None, clock: Clock | None = None,
                     seed: int | None = None) -> SkillScriptOutcome:
    """Execute ``request`` (see the module docstring); raises :class:`SkillScriptError` or
    :class:`SkillScriptValidationError`. ``clock`` and ``seed`` make ``Date`` and
    ``Math.random`` deterministic exactly as for the command (:mod:`tavernlab.js._determinism`).
    """
    entry = request.entry
    check_module_snapshot(request.skill, len(request.modules),
                          sum(utf8_size(source) for source in request.modules.values()))
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
                                   SnapshotModuleLoader(request.modules, LEGACY_BUILTINS))
    except ModuleLoadError as exc:
        raise SkillScriptError(EXECUTION_FAILED, _failed(entry, exc.message, exc.stack)) from None
    overlay = ScriptOverlay(request.visible_roots, request.writable_roots, request.files,
                            request.macros)
    job = Job(mode="legacy", entry=entry, modules=graph.modules,
              runtime_names=LEGACY_BUILTINS.runtime_names, context=context_json,
              args=args_json, result_limit=LEGACY_RESULT_LIMIT, time_origin=time_origin(clock),
              random_state=random_state(seed))
    outcome = (pool or default_pool()).run(job, overlay, time_limit=request.time_limit,
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
        raise SkillScriptError(EXECUTION_FAILED, output_exceeded(total))
    writes = overlay.delta()
    if overlay.last_write is not None and overlay.last_write not in overlay.writes:
        raise TavernlabError(f"skill script engine: last write `{overlay.last_write}` is not "
                             "in the delta")
    return SkillScriptOutcome(value=json.loads(outcome.result_json),
                              result_json=outcome.result_json, writes=writes,
                              last_write_path=overlay.last_write, logs=tuple(overlay.logs))
