"""The sandbox worker process: the only place where jsbox (QuickJS) runs.

Started by :mod:`tavernlab.js._pool` (through :mod:`tavernlab.js._process`) as
``python -m tavernlab.js._worker FD RSS_LIMIT`` in a new session, with SIGINT ignored (a terminal
Ctrl-C or a Jupyter interrupt reaches the parent, which decides). It imports nothing of
tavernlab but the small worker-side modules of this package (:mod:`~tavernlab.js._limits`,
:mod:`~tavernlab.js._job`, :mod:`~tavernlab.js._engine`, :mod:`~tavernlab.js._bootstrap`), and
loads the jsbox extension module directly (:func:`~tavernlab.js._engine.load_engine`), so a
replacement worker starts without jsbox's asyncio import.

Protocol (pickled tuples over a :class:`multiprocessing.connection.Connection` on one end of a
Unix socket pair; both sides pickle with :func:`pickle.dumps` and send the bytes, which is what
``Connection.send`` does minus building a pickler with multiprocessing's reducers per message):

* worker -> parent: ``("ready", pid)`` once; then per job any number of
  ``("out", stream, text)`` (console output, one-way, sent as it is produced on the output
  pipe, not the socket: everything the worker sends on the socket after it follows it; 1 =
  stdout, 2 = stderr) and ``("call", op, a, b)`` (a capability call: the worker blocks until the
  reply), and finally ``("done", outcome)``; the outcome's ``idle_rss`` is the resident set
  the worker had when it took the job. After a job that leaves the worker above its memory
  limit, ``("retire", rss)``, and the worker exits.
* parent -> worker: ``("job", job, deadline)`` (a :class:`~tavernlab.js._job.Job` and its
  absolute ``time.monotonic()`` deadline); ``("reply", ("ok", value) | ("error", kind,
  message) | ("interrupt", reason))`` for each call; ``("cancel", reason)`` at any time (the
  worker notices it at its next call or output); ``("exit",)``.

Each job gets a fresh ``Runtime`` (32 MiB heap, 256 KiB stack, wall-clock timeout up to the
job's deadline - CLOCK_MONOTONIC is shared by all processes of the machine). After reporting
a job the worker frees its Runtime, hands freed heap back to the system when the job grew it
(:class:`MemoryWatch`), and prepares the next job's Runtime with the core module already
evaluated (:class:`SpareRuntime`), so all of that is off an idle worker's critical path; no
Runtime ever serves two jobs. The job's modules are
registered under their canonical names together with the sandbox's own modules
(:mod:`tavernlab.js._bootstrap`).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from multiprocessing.connection import Connection
from pickle import dumps
from typing import Any

from tavernlab.js._bootstrap import (
    BOOTSTRAPS,
    CORE_MODULE,
    CORE_SCRIPT,
    CORE_SOURCE,
    LAZY_SOURCES,
    MAIN_MODULE,
    RUNTIME_SOURCE,
    START_MODULE,
    START_SOURCE,
)
from tavernlab.js._engine import Interrupted, classify_failure, interrupt, load_engine
from tavernlab.js._job import Job
from tavernlab.js._limits import (
    LINE_EXCEEDED,
    MAX_VALUE_BYTES,
    MEMORY_LIMIT,
    OUTPUT_EXCEEDED,
    PENDING_PROMISE,
    STACK_LIMIT,
)

#: How often (seconds) the worker looks for a cancel notice while a script only prints.
CANCEL_POLL_INTERVAL = 0.005
#: After reporting a job the worker pauses up to this long (a message ends the pause) before
#: freeing the Runtime and preparing the next one: the parent, which competes for the same
#: cores, gets to take the outcome first. Measured on a loaded 2-core machine: the outcome
#: reached the caller 1.1 ms after the job ended without the pause, 0.12 ms with it.
HANDOFF_PAUSE = 0.001
#: How long evaluating the core script ahead of a job may take.
PREPARE_TIMEOUT = 10.0
#: Growth of the resident set over the fresh worker's after which freed heap is handed back
#: to the system (``malloc_trim``) before measuring again.
TRIM_THRESHOLD = 8 * 1024 * 1024
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_DEAD_LOCK = "Error blocking on a promise resulted in a dead lock"
_MEMORY_PROBE = "new ArrayBuffer(1048576).byteLength"
_NONE = type(None)
#: The argument types of each capability call, as the runtime API makes them. A script that
#: reaches the raw host function (a computed ``import()`` of an internal module) gets any
#: other shape refused here, so the parent only ever serves what the API can send.
CALL_SHAPES: dict[str, tuple[Any, Any]] = {
    "readText": (str, _NONE), "writeText": (str, str), "exists": (str, _NONE),
    "listFiles": (str | _NONE, _NONE), "render": (str, _NONE), "log": (str, str),
}
INVALID_CALL = "invalid runtime call"


class SpareRuntime:
    """The Runtime the next job will use, prepared while the worker is idle.

    Creating a Runtime with limits (about 0.3 ms), binding the two host functions and the
    lazily compiled sources, compiling and evaluating the core script (about 0.15 ms: QuickJS
    compiles at roughly 20 MB/s here), registering the start and core modules and evaluating
    the start module (the core script imports it) happen right after a job ends, so an idle
    worker holds a Runtime that only needs the job's own modules. The same steps run for every
    Runtime, so what a job finds in its heap never depends on timing. Each Runtime still serves
    exactly one job: the core reads
    nothing of a job until its ``start()`` runs. The host functions are trampolines to
    whichever :class:`JobRunner` is current.
    """

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.job: JobRunner | None = None
        self.runtime = self._fresh()

    def _fresh(self) -> Any:
        runtime = self.engine.Runtime(memory_limit=MEMORY_LIMIT, max_stack_size=STACK_LIMIT,
                                      max_value_bytes=MAX_VALUE_BYTES)
        runtime.bind_function("__tavernlab_host", self._host)
        runtime.bind_function("__tavernlab_emit", self._emit)
        runtime.bind_object("__tavernlab_lazy", LAZY_SOURCES)
        runtime.add_static_module(START_MODULE, START_SOURCE)
        runtime.add_static_module(CORE_MODULE, CORE_SOURCE)
        runtime.eval(CORE_SCRIPT, timeout=PREPARE_TIMEOUT)
        return runtime

    def _host(self, op: str, a: Any, b: Any) -> list[Any]:
        assert self.job is not None
        return self.job.host(op, a, b)

    def _emit(self, stream: int, text: str) -> int:
        assert self.job is not None
        return self.job.emit(stream, text)

    def take(self, job: JobRunner) -> Any:
        """Hand the prepared Runtime to ``job`` (it is never given out again)."""
        runtime, self.runtime, self.job = self.runtime, None, job
        return runtime

    def replenish(self) -> None:
        """Prepare the Runtime of the next job."""
        self.job = None
        self.runtime = self._fresh()


class JobRunner:
    """Runs one job in a fresh Runtime and answers its host calls over ``conn``."""

    def __init__(self, engine: Any, conn: Connection, job: Job, deadline: float,
                 output: Connection | None = None) -> None:
        self.engine = engine
        self.conn = conn
        #: Where ``("out", ...)`` messages go: the output pipe (``None``: the socket).
        self.output = conn if output is None else output
        self.job = job
        self.deadline = deadline
        #: The job's Runtime, kept until the outcome was sent (freeing it takes ~70 us).
        self.runtime: Any = None
        self.used = {1: 0, 2: 0}
        self.last_poll = time.monotonic()

    # -- host functions ------------------------------------------------------------------

    def _charge(self, stream: int, text: str) -> int:
        """0 when ``text`` fits the stream's cap (and is counted), 2 for an oversized line,
        1 when the stream is full."""
        cap = self.job.output_cap
        if cap is None:
            return 0
        size = len(text.encode("utf-8"))
        if size > cap:
            return 2
        if self.used[stream] + size > cap:
            return 1
        self.used[stream] += size
        return 0

    def emit(self, stream: int, text: str) -> int:
        """``console.*``: count, forward one-way, and look for a cancel notice now and then."""
        code = self._charge(stream, text)
        if code:
            return code
        self.output.send_bytes(dumps(("out", stream, text)))
        now = time.monotonic()
        if now - self.last_poll >= CANCEL_POLL_INTERVAL:
            self.last_poll = now
            while self.conn.poll(0):
                message = self.conn.recv()
                if message[0] == "cancel":
                    raise interrupt(message[1])
        return 0

    def host(self, op: str, a: Any, b: Any) -> list[Any]:
        """A capability call served by the parent; ``log`` output is counted on stderr."""
        shape = CALL_SHAPES.get(op) if type(op) is str else None
        if shape is None or not isinstance(a, shape[0]) or not isinstance(b, shape[1]):
            return [False, "TypeError", INVALID_CALL]
        if op == "log" and self.job.mode == "command":
            code = self._charge(2, b)
            if code:
                return [False, "Error", OUTPUT_EXCEEDED if code == 1 else LINE_EXCEEDED]
        self.conn.send_bytes(dumps(("call", op, a, b)))
        while True:
            message = self.conn.recv()
            if message[0] == "reply":
                break
        reply = message[1]
        if reply[0] == "ok":
            return [True, reply[1]]
        if reply[0] == "error":
            return [False, reply[1], reply[2]]
        raise interrupt(reply[1])

    # -- the job ---------------------------------------------------------------------------

    def run(self, spare: SpareRuntime) -> dict[str, Any]:
        """Evaluate the job in the spare Runtime and describe how it ended (see
        :class:`~tavernlab.js._job.JobOutcome`)."""
        started = time.monotonic()
        outcome = self._evaluate(spare)
        outcome["started"] = started
        outcome["finished"] = time.monotonic()
        return outcome

    def _evaluate(self, spare: SpareRuntime) -> dict[str, Any]:
        job = self.job
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return {"status": "interrupted", "reason": "deadline", "stack": ""}
        runtime = self.runtime = spare.take(self)
        runtime.bind_object("__tavernlab_config", {
            "mode": job.mode,
            "entry": job.entry,
            "argv": list(job.argv),
            "context": job.context,
            "args": job.args,
            "timeOrigin": job.time_origin,
            "randomState": None if job.random_state is None else list(job.random_state),
        })
        for name in job.runtime_names:
            runtime.add_static_module(name, RUNTIME_SOURCE)
        for name, source in job.modules.items():
            runtime.add_static_module(name, source)
        runtime.add_static_module(MAIN_MODULE, BOOTSTRAPS[job.mode])
        try:
            exports = runtime.eval_module(MAIN_MODULE, timeout=remaining)
        except Interrupted as exc:
            return {"status": "interrupted", "reason": exc.reason, "stack": ""}
        except self.engine.JsTimeoutError:
            return {"status": "interrupted", "reason": "deadline", "stack": ""}
        except self.engine.JavaScriptError as exc:
            return self._engine_error(runtime, exc)
        except (ValueError, TypeError) as exc:
            return {"status": "error", "text": f"InternalError: {exc}", "stack": ""}
        return self._finish(exports["outcome"])

    def _engine_error(self, runtime: Any, exc: Any) -> dict[str, Any]:
        """An error that escaped the bootstrap (out of memory again, dead lock...)."""
        message = exc.message if isinstance(exc.message, str) else str(exc)
        if message == _DEAD_LOCK:
            if self._memory_exhausted(runtime):
                return {"status": "interrupted", "reason": "memory", "stack": ""}
            return {"status": "error", "text": PENDING_PROMISE, "stack": ""}
        return classify_failure({"ok": False,
                                 "text": f"{exc.name}: {message}" if exc.name else message,
                                 "stack": exc.stack or "", "name": exc.name,
                                 "message": message})

    def _memory_exhausted(self, runtime: Any) -> bool:
        """Whether the heap is still (nearly) full: a 1 MiB allocation fails."""
        try:
            runtime.eval(_MEMORY_PROBE, timeout=1.0)
        except (self.engine.JavaScriptError, self.engine.JsTimeoutError):
            return True
        return False

    def _finish(self, outcome: dict[str, Any]) -> dict[str, Any]:
        if not outcome["ok"]:
            return classify_failure(outcome)
        if self.job.mode == "command":
            return {"status": "ok", "exit_code": outcome["exitCode"]}
        text: str = outcome["json"]
        size = len(text.encode("utf-8"))
        if size > self.job.result_limit:
            return {"status": "ok", "result_bytes": size}
        return {"status": "ok", "result_json": text, "result_bytes": size}


def resident_bytes(fd: int | None = None) -> int | None:
    """This process's resident set in bytes (``None`` without ``/proc``); ``fd`` is an open
    ``/proc/self/statm`` to read again (one ``pread`` instead of open, read and close)."""
    try:
        if fd is not None:
            return int(os.pread(fd, 128, 0).split()[1]) * PAGE_SIZE
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return None


def return_freed_memory() -> None:
    """Hand the heap a finished job freed back to the system (glibc ``malloc_trim``); a
    no-op where that does not exist."""
    import ctypes  # only after a job that grew the heap: keeps worker startup lean

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        return


class MemoryWatch:
    """The worker's resident memory after each job: trimmed when it grew, measured, and
    compared with the limit the pool gave."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        try:
            self.fd: int | None = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self.fd = None
        self.baseline = resident_bytes(self.fd)
        self.last = self.baseline

    def settle(self) -> bool:
        """After a job's Runtime was freed: ``True`` while the worker may keep serving."""
        rss = resident_bytes(self.fd)
        if rss is not None and self.baseline is not None and rss > self.baseline + TRIM_THRESHOLD:
            return_freed_memory()
            rss = resident_bytes(self.fd)
        self.last = rss
        return rss is None or rss <= self.limit


def serve(conn: Connection, rss_limit: int, output: Connection | None = None) -> None:
    """The worker's main loop: announce readiness, then run jobs until told to exit or until
    its memory stays over ``rss_limit`` after a job (then it announces ``("retire", rss)``)."""
    engine = load_engine()
    spare = SpareRuntime(engine)
    memory = MemoryWatch(rss_limit)
    conn.send_bytes(dumps(("ready", os.getpid())))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message[0] == "job":
            runner = JobRunner(engine, conn, message[1], message[2], output)
            outcome = runner.run(spare)
            outcome["idle_rss"] = memory.last
            try:
                conn.send_bytes(dumps(("done", outcome)))
            except OSError:
                return
            select.select([conn.fileno()], [], [], HANDOFF_PAUSE)
            runner.runtime = None
            if not memory.settle():
                conn.send_bytes(dumps(("retire", memory.last)))
                return
            spare.replenish()
        elif message[0] == "exit":
            return
        # A late ("cancel", ...) for a job that already finished is ignored.


def main(argv: list[str]) -> None:
    """Entry point: ``python -m tavernlab.js._worker FD RSS_LIMIT [OUTPUT_FD]`` (FD: this end of
    a socket pair; RSS_LIMIT in bytes; OUTPUT_FD: the write end of the output pipe)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    output = Connection(int(argv[3]), readable=False) if len(argv) > 3 else None
    serve(Connection(int(argv[1])), int(argv[2]), output)


if __name__ == "__main__":
    main(sys.argv)
