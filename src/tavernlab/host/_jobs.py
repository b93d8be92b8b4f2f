"""One ``run.js`` job (:meth:`tavernlab.host._run.Run.js`) with its journal records.

The journal keeps digests only (``js_job_started`` / ``js_job_finished``); the job's own bytes
(stdin, ``eval_name``, exit code, stdout, stderr) go to the run's hidden
``js-jobs/<job-id>.json`` (stdin as base64), which is what lets :mod:`tavernlab.replay` play
the job again. The sandbox (:mod:`tavernlab.js._command`) is imported by the first job, not by
the host: a process that never runs JavaScript never loads it.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import tavernlab.layout as layout
from tavernlab.cancel import CancelToken
from tavernlab.clock import is_deterministic, seed_from
from tavernlab.errors import InvalidData
from tavernlab.host._core import RunCore
from tavernlab.workspace.records import write_json
from tavernlab.workspace.storage import sha256_hex

if TYPE_CHECKING:
    from tavernlab.js import CommandResult, WorkerPool


def run_js_job(core: RunCore, pool: WorkerPool, args: list[str], cwd: str, data: bytes | None,
               command: Literal["js", "node", "deno"],
               on_output: Callable[[Literal["stdout", "stderr"], str], None] | None,
               eval_name: str | None) -> CommandResult:
    """Run one job on ``pool`` over the main agent's view, with its journal records (written
    together when it ends, or before its first output)."""
    from tavernlab.events import JsJobEnd, JsJobFinished, JsJobStart, JsJobStarted
    from tavernlab.js import run_js_command

    job_id = core.ids.new("job")
    if (core.dir / layout.js_job_path(job_id)).exists():
        raise InvalidData(f"job id `{job_id}` from the lab's id factory is already taken by a "
                          "job of this run; nothing was run")
    core.note(JsJobStarted, JsJobStart(
        job_id=job_id, invocation_id=core.main.id, command=command, argv=args, cwd=cwd,
        stdin_sha256=None if data is None else sha256_hex(data),
        stdin_bytes=None if data is None else len(data)))
    listener = None
    if on_output is not None:
        def listener(stream: Literal["stdout", "stderr"], text: str) -> None:
            core.feed.flush()
            on_output(stream, text)
    started = core.clock.monotonic()
    with (core.activities.activity("js", job_id), core.tracker.acting(job_id),
          core.inflight.track(CancelToken()) as token):
        fixed = is_deterministic(core.clock)
        result = run_js_command(args, scope=core.main.scope, context=core.frozen, cwd=cwd,
                                stdin=data, command=command, token=token,
                                deadline=time.monotonic() + core.shell_deadline_s,
                                pool=pool, clock=core.clock if fixed else None,
                                seed=seed_from(core.ids) if fixed else None,
                                on_output=listener, eval_name=eval_name)
    out, err = result.stdout.encode("utf-8"), result.stderr.encode("utf-8")
    write_json(core.dir / layout.js_job_path(job_id), {
        "jobId": job_id, "evalName": eval_name,
        "stdin": None if data is None else base64.b64encode(data).decode("ascii"),
        "exitCode": result.exit_code, "stdout": result.stdout, "stderr": result.stderr},
        staging=core.staging)
    core.note(JsJobFinished, JsJobEnd(
        job_id=job_id, exit_code=result.exit_code, timed_out=result.timed_out,
        cancelled=result.cancelled,
        elapsed_ms=int((core.clock.monotonic() - started) * 1000),
        stdout_sha256=sha256_hex(out), stdout_bytes=len(out), stderr_sha256=sha256_hex(err),
        stderr_bytes=len(err),
        cancel_reason=token.reason if result.cancelled and token.cancelled else None))
    return result
