"""One job across the process boundary: what the parent sends, what comes back, who answers.

A :class:`Job` is everything a worker needs to run one execution (it refers to no live
storage: module sources are already loaded and rewritten); a :class:`JobOutcome` is how it
ended; a :class:`CapabilityServer` is the parent-side object that receives the job's output
and answers its capability calls (:class:`~tavernlab.js._runtime_api.RuntimeCapabilities` for
the ``js`` command, :class:`~tavernlab.js._overlay.ScriptOverlay` for legacy scripts).

This module is imported by the worker process too, so it stays small: the standard library
and :mod:`tavernlab.js._limits` only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, Literal, Protocol

from tavernlab.js._limits import INTERRUPT_REASONS

#: A stack frame of the sandbox's own code: its modules (``<tavernlab:...>``) and the core
#: script, which jsbox's ``eval`` names ``eval_script`` (user ``eval`` code is ``<input>``).
_INTERNAL_FRAME = re.compile(r"^\s*at .*(<tavernlab:[^>]*>|\beval_script:\d)")


@dataclass(frozen=True, slots=True)
class Job:
    """One execution, as the worker receives it.

    ``mode`` selects the contract: ``command`` (the V5 ``js`` command: ``console``,
    ``process``, exit codes) or ``legacy`` (``skill.run_script``: ``default(args)``/``main``
    and a JSON result). ``entry`` is the registered name of the entry module and ``modules``
    every module of its graph by registered name; ``runtime_names`` are the names under which
    the runtime API module is registered. ``context`` is the JSON the runtime's ``context``
    reads (``None``: the run has no host context, command mode only); ``argv`` is
    ``process.argv`` (command); ``args`` the JSON of the legacy ``args`` object;
    ``output_cap`` the per-stream cap of console output (``None``: no console);
    ``result_limit`` the legacy result limit in UTF-8 bytes. ``time_origin`` (epoch ms) and
    ``random_state`` (four 32-bit words) make ``Date``/``performance`` and ``Math.random``
    deterministic (:mod:`tavernlab.js._determinism`); ``None`` keeps the engine's own.
    """

    mode: Literal["command", "legacy"]
    entry: str
    modules: dict[str, str]
    runtime_names: tuple[str, ...]
    context: str | None
    argv: tuple[str, ...] = ()
    args: str = "{}"
    output_cap: int | None = None
    result_limit: int = 0
    time_origin: int | None = None
    random_state: tuple[int, int, int, int] | None = None

    def __reduce__(self) -> tuple[type[Job], tuple[Any, ...]]:
        """Pickle as the constructor's arguments (every job crosses to the worker: the
        dataclass default, a field-by-field state, costs several times more both ways)."""
        return (Job, tuple([getattr(self, name) for name in _JOB_FIELDS]))


#: The fields of :class:`Job` in constructor order (what its pickle carries).
_JOB_FIELDS = tuple(field.name for field in fields(Job))


class CapabilityServer(Protocol):
    """What a job needs from the parent: a place for its output and answers to its calls."""

    def output(self, stream: int, text: str) -> None:
        """Console output of the job (1 = stdout, 2 = stderr), already counted by the worker,
        delivered as soon as the worker produced it."""

    def serve(self, op: str, a: Any, b: Any) -> Any:
        """Answer one capability call; raise :class:`~tavernlab.js._errors.CapabilityError`
        for a guest error."""


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """How a job ended.

    ``status`` is ``ok`` (``exit_code`` for the command; ``result_json``/``result_bytes`` for
    the legacy mode, ``result_json`` is ``None`` when the result was over its limit),
    ``error`` (``text`` and ``stack`` of the uncaught exception), ``interrupted`` (``reason``:
    ``deadline``, ``cancel``, ``memory`` or ``stack``) or ``crashed`` (``text`` says why).
    ``started``/``finished`` are the worker's ``time.monotonic()`` readings (comparable across
    processes); ``pid`` is the worker that ran it.
    """

    status: Literal["ok", "error", "interrupted", "crashed"]
    exit_code: int = 0
    result_json: str | None = None
    result_bytes: int = 0
    text: str = ""
    stack: str = ""
    reason: str | None = None
    started: float | None = None
    finished: float | None = None
    pid: int | None = None

    @classmethod
    def from_worker(cls, data: dict[str, Any], pid: int | None) -> JobOutcome:
        """Build from the worker's ``done`` message."""
        return cls(status=data["status"], exit_code=data.get("exit_code", 0),
                   result_json=data.get("result_json"), result_bytes=data.get("result_bytes", 0),
                   text=data.get("text", ""), stack=public_stack(data.get("stack", "")),
                   reason=data.get("reason"), started=data.get("started"),
                   finished=data.get("finished"), pid=pid)

    @property
    def message(self) -> str:
        """The failure text: the exception, or the interruption reason that replaces it."""
        if self.status == "interrupted" and self.reason is not None:
            return INTERRUPT_REASONS.get(self.reason, self.reason)
        return self.text

    @property
    def timed_out(self) -> bool:
        """Stopped by the deadline."""
        return self.status == "interrupted" and self.reason == "deadline"

    @property
    def cancelled(self) -> bool:
        """Stopped by cancellation."""
        return self.status == "interrupted" and self.reason == "cancel"


def public_stack(stack: str) -> str:
    """The stack without the sandbox's own frames and without the trailing newline."""
    lines = [line for line in stack.splitlines() if not _INTERNAL_FRAME.match(line)]
    return "\n".join(lines)
