"""The journal's records of a run's steps: each ``run.js`` job (its start and how it
finished), the end of each model round and each sub-agent started with its Profile (the
journal: :mod:`tavernlab.events._journal`). A family defined on first use (see
:data:`~tavernlab.events._base.LATER_FAMILIES`): a run that only calls tools writes none."""

from __future__ import annotations

from typing import Any, Literal

from tavernlab.events._journal import JournalRecord
from tavernlab.ondisk import Model


class JsJobStart(Model):
    """``js_job_started``: a ``run.js`` job (not a tool call) began."""

    job_id: str
    invocation_id: str
    command: Literal["js", "node", "deno"]
    argv: list[str]
    cwd: str
    stdin_sha256: str | None = None
    stdin_bytes: int | None = None


class JsJobEnd(Model):
    """``js_job_finished``: how the job ended, with digests of what it printed; a cancelled
    job keeps the reason ``run.cancel(reason)`` was given (``cancelReason``, ``null`` for a
    job that was not cancelled)."""

    job_id: str
    exit_code: int
    timed_out: bool = False
    cancelled: bool = False
    elapsed_ms: int
    stdout_sha256: str
    stdout_bytes: int
    stderr_sha256: str
    stderr_bytes: int
    cancel_reason: str | None = None


class RoundEnd(Model):
    """``round_ended``: the model round ``round`` ended (``next_round()``); ``autoCommitted``
    names the file an auto-commit saved, if any."""

    round: int
    auto_committed: str | None = None


class SubagentStart(Model):
    """``subagent_started``: a return-mode sub-agent with its resolved Profile (so a reopened
    run restores it)."""

    invocation_id: str
    agent_id: str
    profile: dict[str, Any]


class JsJobStarted(JournalRecord):
    """A ``run.js`` job began."""

    type: Literal["js_job_started"] = "js_job_started"
    payload: JsJobStart


class JsJobFinished(JournalRecord):
    """A ``run.js`` job ended."""

    type: Literal["js_job_finished"] = "js_job_finished"
    payload: JsJobEnd


class RoundEnded(JournalRecord):
    """A model round ended."""

    type: Literal["round_ended"] = "round_ended"
    payload: RoundEnd


class SubagentStarted(JournalRecord):
    """A sub-agent was started."""

    type: Literal["subagent_started"] = "subagent_started"
    payload: SubagentStart
