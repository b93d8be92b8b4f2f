"""The sandbox worker process: the only place where jsbox (QuickJS) runs.

Started by :mod:`tavernlab.js.pool` as ``python -m tavernlab.js.worker FD`` in a
new session, with SIGINT ignored (a terminal Ctrl-C or a Jupyter interrupt reaches the parent,
which decides). It imports nothing of tavernlab but :mod:`tavernlab.js.limits`, and loads the
jsbox extension module directly (see "startup" below), so a replacement worker starts
without jsbox's asyncio import.

Protocol (pickled tuples over a :class:`multiprocessing.connection.Connection` on one end of a
Unix socket pair):

* worker -> parent: ``("ready", pid)`` once; then per job any number of
  ``("out", stream, text)`` (console output, one-way; 1 = stdout, 2 = stderr) and
  ``("call", op, a, b)`` (a capability call: the worker blocks until the reply), and finally
  ``("done", outcome)``.
* parent -> worker: ``("job", spec)``; ``("reply", ("ok", value) | ("error", kind, message) |
  ("interrupt", reason))`` for each call; ``("cancel", reason)`` at any time (the worker
  notices it at its next call or output); ``("exit",)``.

Each job gets a fresh ``Runtime`` (32 MiB heap, 256 KiB stack, wall-clock timeout up to the
job's absolute ``time.monotonic()`` deadline - CLOCK_MONOTONIC is shared by all processes of
the machine). The worker prepares the next job's Runtime right after reporting a job
(:class:`SpareRuntime`), so creating it is off the critical path; no Runtime ever serves two
jobs. The job's modules are registered under their canonical names together with
three internal ones: ``<tavernlab:core>`` (captures the host functions, removes them and
jsbox's extra globals, installs ``console``/``process`` for the command, builds the runtime
API), the runtime module(s) that re-export the API, and ``<tavernlab:main>``, the bootstrap
that imports the core first and then the entry with ``await import(...)``, catching what it
throws. The bootstrap's ``outcome`` export carries the exit code, the legacy result JSON or
the error (``String(error)``, ``error.stack``) back.

What jsbox 0.1.3 does, as measured (notes for whoever touches this file)
----------------------------------------------------------------------------

* API: ``Runtime(memory_limit, max_stack_size, max_value_bytes, on_console, lossy,
  max_pending_calls, buffer)`` with ``add_static_module(name, source)``,
  ``eval_module(name, timeout)`` (returns the exports as a dict; functions are skipped),
  ``eval(code, timeout)``, ``bind_function``, ``bind_object``, ``check_syntax`` and an
  asyncio-based ``eval_async``. Errors: ``JavaScriptError`` (``name``, ``message``,
  ``stack``) and ``JsTimeoutError``. About 0.4 ms to create a Runtime with limits; a host
  call costs about 2 us.
* Modules are found by literal registered name only: ``import './lib.js'`` from a module
  named ``/scratch/task.js`` fails with ``module not found: ./lib.js``. Hence the tree-sitter
  rewriting in :mod:`tavernlab.js.modules`. Names may be any string (``/scratch/<eval>``).
  Dynamic ``import()`` and top-level ``await`` work in ``eval_module``.
* Stacks name the registered module and line: ``at f (/scratch/lib.js:3:13)``; a syntax error
  reports ``at /lib.js:2:3``. Thrown non-errors come back with ``name=None`` and an empty
  stack, objects as ``[object]`` - so the bootstrap formats errors in JavaScript instead.
* Memory: exceeding 32 MiB usually raises a catchable ``InternalError: out of memory`` (fast,
  the process survives); ``'x'.repeat(2**29)`` gives ``InternalError: string too long``. But
  when the heap is so full that QuickJS cannot allocate the error object it throws ``null``,
  and when the failure hits while a promise is being settled (a top-level ``await``, an async
  function) the rejection itself cannot be queued and jsbox reports a dead lock. jsbox
  exposes no memory statistics, so the worker classifies heuristically: a thrown ``null``
  is the memory limit (a script that literally throws ``null`` is reported the same way), and
  a dead lock after which a 1 MiB allocation still fails is the memory limit rather than a
  pending ``await``. Residual case: an async function whose memory is freed as it unwinds
  can still surface as the pending-promise error.
  Stack: 256 KiB raises a catchable ``RangeError: Maximum call stack size exceeded``.
* Timeout: ``timeout=`` interrupts the interpreter loop, uncatchably, as ``JsTimeoutError``.
  There is **no way to interrupt a running ``eval`` from outside**: the interrupt handler does
  not look at Python signals (a SIGINT or SIGUSR1 handler only runs after the timeout
  fires). Workaround: the parent refuses capability calls after a cancel (the worker turns
  the refusal into a stop, see below), the worker polls for a cancel notice when the script
  prints, and a script that does neither is killed after a short grace period and its
  worker replaced.
* A Python ``BaseException`` raised by a host function reaches the guest as a catchable
  ``Error: host function failed: <Class>`` (its ``catch``/``finally`` blocks run), but jsbox
  then interrupts the interpreter at its next check (a few thousand operations later: a loop
  after the ``catch`` never finishes) and re-raises the original exception from
  ``eval_module``. That is how a refused call stops a job without killing the worker
  (:class:`Interrupted`; the guest sees ``host function failed: ExecutionCancelled`` or
  ``TimeLimitExceeded``). An ordinary exception also reaches the guest as ``host function
  failed: <Class>``, so host functions here never raise for guest errors: they return
  ``[true, value]`` or ``[false, kind, message]`` and the JavaScript side throws the error
  with the exact message.
* A top-level ``await`` that can never settle raises ``JavaScriptError`` with
  ``Error blocking on a promise resulted in a dead lock`` (no name, no stack); it is mapped to
  upstream's ``The awaited Promise is still pending, but no work remains to resolve it.``
* Strings with lone surrogates cannot cross into Python (``ValueError`` out of ``eval``, not
  catchable by the guest), so every string handed to a host function goes through
  ``String.prototype.toWellFormed`` first (lone halves become U+FFFD). Non-string arguments
  are rejected in JavaScript with a ``TypeError`` before any conversion.
* Globals: jsbox adds ``console`` (a no-op without ``on_console``), ``TextEncoder``,
  ``TextDecoder``, ``atob`` and ``btoa`` on top of the engine's own; all five are removed
  (upstream has no browser APIs). The engine's own intrinsics stay, including quickjs-ng's
  ``queueMicrotask``, ``performance`` and ``DOMException``. The command adds exactly
  ``console`` and ``process``; the legacy mode adds nothing (V2: "the sandbox injects no
  global objects").
* Import attributes (``with {type: 'json'}``) are accepted by the engine; they are rejected
  by the parent before the job starts.
* Startup: ``import jsbox`` costs ~75 ms because its ``__init__`` imports asyncio (for
  ``eval_async``, unused here). The worker loads the ``_jsbox`` extension file directly with
  an ``ExtensionFileLoader`` (falling back to ``import jsbox``): Python plus the extension
  load in ~40 ms instead of ~110 ms; a whole worker (with tavernlab's imports and its first
  Runtime) is ready in about 0.1 s (``bench/js_sandbox.py``).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import signal
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

from tavernlab.js.limits import (
    EXIT_CODE_INVALID,
    LINE_EXCEEDED,
    MAX_VALUE_BYTES,
    MEMORY_LIMIT,
    OUTPUT_EXCEEDED,
    PENDING_PROMISE,
    STACK_LIMIT,
)

#: Internal module names (the ``<tavernlab:`` prefix can never be imported statically).
CORE_MODULE = "<tavernlab:core>"
MAIN_MODULE = "<tavernlab:main>"
#: How often (seconds) the worker looks for a cancel notice while a script only prints.
CANCEL_POLL_INTERVAL = 0.005
_DEAD_LOCK = "Error blocking on a promise resulted in a dead lock"
_MEMORY_PROBE = "new ArrayBuffer(1048576).byteLength"

CORE_SOURCE = r"""
const config = globalThis.__tavernlab_config;
const host = globalThis.__tavernlab_host;
const emit = globalThis.__tavernlab_emit;
for (const name of ["__tavernlab_config", "__tavernlab_host", "__tavernlab_emit", "console",
                    "TextEncoder", "TextDecoder", "atob", "btoa"]) {
  delete globalThis[name];
}
const S = String;
const wellFormed = Function.prototype.call.bind(String.prototype.toWellFormed);
const isInteger = Number.isInteger;
const stringify = JSON.stringify;
const parse = JSON.parse;
const freeze = Object.freeze;
const defineProperty = Object.defineProperty;
const ERRORS = { Error, TypeError, RangeError };
const OUTPUT_ERRORS = [null, config.outputExceeded, config.lineExceeded];

function format(args) {
  let line = "";
  for (let i = 0; i < args.length; i++) {
    if (i > 0) line += " ";
    line += S(args[i]);
  }
  return wellFormed(line) + "\n";
}
function call(op, a, b) {
  const reply = host(op, a === undefined ? null : a, b === undefined ? null : b);
  if (reply[0]) return reply[1];
  throw new ERRORS[reply[1]](reply[2]);
}
function write(stream, args) {
  const code = emit(stream, format(args));
  if (code !== 0) throw new Error(OUTPUT_ERRORS[code]);
}
function str(value, what) {
  if (typeof value !== "string") throw new TypeError(what + " must be a string");
  return wellFormed(value);
}

let exitCode = 0;
if (config.mode === "command") {
  const console = {
    log(...args) { write(1, args); },
    info(...args) { write(1, args); },
    debug(...args) { write(1, args); },
    warn(...args) { write(2, args); },
    error(...args) { write(2, args); },
  };
  defineProperty(globalThis, "console",
                 { value: console, writable: true, configurable: true, enumerable: false });
  const process = {};
  defineProperty(process, "argv",
                 { value: config.argv, writable: true, configurable: true, enumerable: true });
  defineProperty(process, "exitCode", {
    get() { return exitCode; },
    set(value) {
      if (typeof value !== "number" || !isInteger(value) || value < 0 || value > 255) {
        throw new TypeError(config.exitCodeInvalid);
      }
      exitCode = value;
    },
    configurable: false,
    enumerable: true,
  });
  defineProperty(globalThis, "process",
                 { value: process, writable: true, configurable: true, enumerable: false });
}

const workspace = freeze({
  readText(path) { return call("readText", str(path, "path")); },
  writeText(path, text) { call("writeText", str(path, "path"), str(text, "text")); },
  exists(path) { return call("exists", str(path, "path")); },
  listFiles(dir) { return call("listFiles", dir === undefined ? null : str(dir, "path")); },
});
const macros = freeze({ render(text) { return call("render", str(text, "text")); } });

let context;
let log;
if (config.mode === "command") {
  let data;
  const field = (name) => {
    if (config.context === null) throw new Error(`context.${name} is unavailable for this task.`);
    if (data === undefined) data = parse(config.context);
    return data[name];
  };
  context = freeze({
    get worldInfo() { return field("worldInfo"); },
    get variables() { return field("variables"); },
    get macro() { return field("macro"); },
  });
  const level = (name) => function (...args) { call("log", name, format(args)); };
  log = freeze({ log: level("log"), info: level("info"), warn: level("warn"),
                 error: level("error"), debug: level("debug") });
} else {
  context = parse(config.context);
  const level = (name) => function (message) {
    if (typeof message !== "string") throw new TypeError(`log.${name} expects a string message`);
    call("log", name, wellFormed(message));
  };
  log = freeze({ info: level("info"), warn: level("warn"), error: level("error"),
                 debug: level("debug") });
}

function describe(error) {
  let text = "";
  let stack = "";
  let name = null;
  let message = null;
  try { text = S(error); } catch (_) { text = "[exception could not be converted to a string]"; }
  try {
    if ((typeof error === "object" && error !== null) || typeof error === "function") {
      const s = error.stack;
      if (typeof s === "string") stack = s;
      const n = error.name;
      if (typeof n === "string") name = wellFormed(n);
      const m = error.message;
      if (typeof m === "string") message = wellFormed(m);
    }
  } catch (_) {}
  return { ok: false, text: wellFormed(text), stack: wellFormed(stack), name, message };
}

let taken = false;
export function takeInternals() {
  if (taken) return undefined;
  taken = true;
  return {
    exitCode: () => exitCode,
    describe,
    stringify,
    args: config.mode === "legacy" ? parse(config.args) : undefined,
  };
}
export { workspace, context, macros, log };
"""

RUNTIME_SOURCE = f"export {{ workspace, context, macros, log }} from {json.dumps(CORE_MODULE)};\n"

_COMMAND_BOOTSTRAP = """import {{ takeInternals }} from {core};
const k = takeInternals();
let outcome;
try {{
  await import({entry});
  outcome = {{ ok: true, exitCode: k.exitCode() }};
}} catch (error) {{
  outcome = k.describe(error);
}}
export {{ outcome }};
"""

_LEGACY_BOOTSTRAP = """import {{ takeInternals }} from {core};
const k = takeInternals();
let outcome;
try {{
  const entry = await import({entry});
  const run = typeof entry.default === "function" ? entry.default
    : typeof entry.main === "function" ? entry.main : undefined;
  if (run === undefined) throw new Error({no_entry});
  const value = await run(k.args);
  const json = value === undefined || typeof value === "function" ? undefined : k.stringify(value);
  if (json === undefined) throw new Error({not_json});
  outcome = {{ ok: true, json }};
}} catch (error) {{
  outcome = k.describe(error);
}}
export {{ outcome }};
"""

#: Legacy entry messages (spec 7.2).
NO_ENTRY_FUNCTION = "skill script must export a `default` or `main` function"
NOT_SERIALIZABLE = ("skill script must return a JSON-serializable value; `undefined` and "
                    "functions cannot be returned (return `null` explicitly instead)")


def bootstrap_source(mode: str, entry: str) -> str:
    """The ``<tavernlab:main>`` module of a job: run the entry, export its ``outcome``."""
    core = json.dumps(CORE_MODULE)
    target = json.dumps(entry)
    if mode == "legacy":
        return _LEGACY_BOOTSTRAP.format(core=core, entry=target,
                                        no_entry=json.dumps(NO_ENTRY_FUNCTION),
                                        not_json=json.dumps(NOT_SERIALIZABLE))
    return _COMMAND_BOOTSTRAP.format(core=core, entry=target)


class Interrupted(BaseException):
    """Stops the guest: the parent refused a call (cancel, deadline).

    Raised from a host function; jsbox lets the guest's ``catch`` see it as
    ``host function failed: <class name>``, then interrupts the interpreter at its next check
    and re-raises it from ``eval_module``.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ExecutionCancelled(Interrupted):
    """The job was cancelled."""


class TimeLimitExceeded(Interrupted):
    """The job's deadline passed."""


def interrupt(reason: str) -> Interrupted:
    """The interrupt for a reason key (its class name is what a guest ``catch`` sees)."""
    kind = {"cancel": ExecutionCancelled, "deadline": TimeLimitExceeded}.get(reason, Interrupted)
    return kind(reason)


def load_engine() -> Any:
    """The ``jsbox._jsbox`` extension module, without importing ``jsbox`` (and asyncio)."""
    spec = importlib.util.find_spec("jsbox")
    locations = spec.submodule_search_locations if spec is not None else None
    if locations:
        for directory in locations:
            for name in sorted(os.listdir(directory)):
                if name.startswith("_jsbox.") and name.endswith((".so", ".pyd")):
                    path = os.path.join(directory, name)
                    loader = importlib.machinery.ExtensionFileLoader("jsbox._jsbox", path)
                    module_spec = importlib.util.spec_from_file_location("jsbox._jsbox", path,
                                                                         loader=loader)
                    if module_spec is None:
                        continue
                    module = importlib.util.module_from_spec(module_spec)
                    loader.exec_module(module)
                    return module
    from jsbox import _jsbox  # type: ignore[import-untyped]  # layout changed: slow path

    return _jsbox


class SpareRuntime:
    """The Runtime the next job will use, prepared while the worker is idle.

    Creating a Runtime with limits, binding the two host functions and registering the core
    module take about 0.8 ms; doing it right after a job ends takes that off the next job's
    latency. Each Runtime still serves exactly one job. The host functions are trampolines
    to whichever :class:`JobRunner` is current.
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
        runtime.add_static_module(CORE_MODULE, CORE_SOURCE)
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

    def __init__(self, engine: Any, conn: Connection, spec: dict[str, Any],
                 spare: SpareRuntime | None = None) -> None:
        self.engine = engine
        self.conn = conn
        self.spec = spec
        self.spare = spare
        self.cap: int | None = spec.get("output_cap")
        self.used = {1: 0, 2: 0}
        self.last_poll = time.monotonic()

    # -- host functions ------------------------------------------------------------------

    def _charge(self, stream: int, text: str) -> int:
        """0 when ``text`` fits the stream's cap (and is counted), 2 for an oversized line,
        1 when the stream is full."""
        if self.cap is None:
            return 0
        size = len(text.encode("utf-8"))
        if size > self.cap:
            return 2
        if self.used[stream] + size > self.cap:
            return 1
        self.used[stream] += size
        return 0

    def emit(self, stream: int, text: str) -> int:
        """``console.*``: count, forward one-way, and look for a cancel notice now and then."""
        code = self._charge(stream, text)
        if code:
            return code
        self.conn.send(("out", stream, text))
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
        if op == "log" and self.spec["mode"] == "command":
            code = self._charge(2, b)
            if code:
                return [False, "Error", OUTPUT_EXCEEDED if code == 1 else LINE_EXCEEDED]
        self.conn.send(("call", op, a, b))
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

    def run(self) -> dict[str, Any]:
        """Evaluate the job and describe how it ended (see :mod:`tavernlab.js.pool`)."""
        spec = self.spec
        started = time.monotonic()
        outcome = self._evaluate(spec)
        outcome["started"] = started
        outcome["finished"] = time.monotonic()
        return outcome

    def _evaluate(self, spec: dict[str, Any]) -> dict[str, Any]:
        engine = self.engine
        remaining = spec["deadline"] - time.monotonic()
        if remaining <= 0:
            return {"status": "interrupted", "reason": "deadline", "stack": ""}
        if self.spare is not None:
            runtime = self.spare.take(self)
        else:
            runtime = engine.Runtime(memory_limit=MEMORY_LIMIT, max_stack_size=STACK_LIMIT,
                                     max_value_bytes=MAX_VALUE_BYTES)
            runtime.bind_function("__tavernlab_host", self.host)
            runtime.bind_function("__tavernlab_emit", self.emit)
            runtime.add_static_module(CORE_MODULE, CORE_SOURCE)
        runtime.bind_object("__tavernlab_config", {
            "mode": spec["mode"],
            "argv": spec.get("argv", []),
            "context": spec.get("context"),
            "args": spec.get("args", "{}"),
            "outputExceeded": OUTPUT_EXCEEDED,
            "lineExceeded": LINE_EXCEEDED,
            "exitCodeInvalid": EXIT_CODE_INVALID,
        })
        for name in spec["runtime_names"]:
            runtime.add_static_module(name, RUNTIME_SOURCE)
        for name, source in spec["modules"].items():
            runtime.add_static_module(name, source)
        runtime.add_static_module(MAIN_MODULE, bootstrap_source(spec["mode"], spec["entry"]))
        try:
            exports = runtime.eval_module(MAIN_MODULE, timeout=remaining)
        except Interrupted as exc:
            return {"status": "interrupted", "reason": exc.reason, "stack": ""}
        except engine.JsTimeoutError:
            return {"status": "interrupted", "reason": "deadline", "stack": ""}
        except engine.JavaScriptError as exc:
            return self._engine_error(runtime, exc)
        except (ValueError, TypeError) as exc:
            return {"status": "error", "text": f"InternalError: {exc}", "stack": ""}
        return self._finish(spec, exports["outcome"])

    def _engine_error(self, runtime: Any, exc: Any) -> dict[str, Any]:
        """An error that escaped the bootstrap (out of memory again, dead lock...)."""
        message = exc.message if isinstance(exc.message, str) else str(exc)
        if message == _DEAD_LOCK:
            if self._memory_exhausted(runtime):
                return {"status": "interrupted", "reason": "memory", "stack": ""}
            return {"status": "error", "text": PENDING_PROMISE, "stack": ""}
        return _classify({"ok": False, "text": f"{exc.name}: {message}" if exc.name else message,
                          "stack": exc.stack or "", "name": exc.name, "message": message})

    def _memory_exhausted(self, runtime: Any) -> bool:
        """Whether the heap is still (nearly) full: a 1 MiB allocation fails."""
        try:
            runtime.eval(_MEMORY_PROBE, timeout=1.0)
        except (self.engine.JavaScriptError, self.engine.JsTimeoutError):
            return True
        return False

    @staticmethod
    def _finish(spec: dict[str, Any], outcome: dict[str, Any]) -> dict[str, Any]:
        if not outcome["ok"]:
            return _classify(outcome)
        if spec["mode"] == "command":
            return {"status": "ok", "exit_code": outcome["exitCode"]}
        text: str = outcome["json"]
        size = len(text.encode("utf-8"))
        if size > spec["result_limit"]:
            return {"status": "ok", "result_bytes": size}
        return {"status": "ok", "result_json": text, "result_bytes": size}


def _classify(outcome: dict[str, Any]) -> dict[str, Any]:
    """Memory and stack exhaustion are interruptions; anything else is an error.

    QuickJS throws ``null`` when it cannot even allocate its out-of-memory error, so a thrown
    ``null`` (no name, text ``null``) is reported as the memory interruption too.
    """
    name, message = outcome.get("name"), outcome.get("message")
    if (name == "InternalError" and message == "out of memory") or (
            name is None and outcome.get("text") == "null"):
        return {"status": "interrupted", "reason": "memory", "stack": outcome["stack"]}
    if name == "RangeError" and message == "Maximum call stack size exceeded":
        return {"status": "interrupted", "reason": "stack", "stack": outcome["stack"]}
    return {"status": "error", "text": outcome["text"], "stack": outcome["stack"]}


def serve(conn: Connection) -> None:
    """The worker's main loop: announce readiness, then run jobs until told to exit."""
    engine = load_engine()
    spare = SpareRuntime(engine)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message[0] == "job":
            outcome = JobRunner(engine, conn, message[1], spare).run()
            try:
                conn.send(("done", outcome))
            except OSError:
                return
            spare.replenish()
        elif message[0] == "exit":
            return
        # A late ("cancel", ...) for a job that already finished is ignored.


def main(argv: list[str]) -> None:
    """Entry point: ``python -m tavernlab.js.worker FD`` (FD: this end of a socket pair)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(Connection(int(argv[1])))


if __name__ == "__main__":
    main(sys.argv)
