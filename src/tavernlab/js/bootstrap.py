"""The sandbox's own JavaScript: the core module, the runtime module and the bootstraps.

Registered in every job's fresh Runtime by the worker (:mod:`tavernlab.js.worker`):

* ``<tavernlab:core>`` (:data:`CORE_SOURCE`) captures the two host functions and removes
  them and jsbox's extra globals, installs ``console``/``process`` for the command, and builds
  the runtime API (``workspace``, ``context``, ``macros``, ``log``) whose calls go to the
  parent;
* the runtime module (:data:`RUNTIME_SOURCE`) re-exports that API under each runtime name of
  the job (``@tauritavern/runtime``; legacy also ``@tauritavern/runtime/v1``);
* ``<tavernlab:main>`` (:func:`bootstrap_source`) imports the core first, then the entry with
  ``await import(...)``, catching what it throws. Its ``outcome`` export carries the exit code,
  the legacy result JSON or the error (``String(error)``, ``error.stack``) back.

Names starting with ``<tavernlab:`` can never be reached by a static import (the parent only
resolves workspace paths and built-in names).
"""

from __future__ import annotations

import json

#: Internal module names (the ``<tavernlab:`` prefix can never be imported statically).
CORE_MODULE = "<tavernlab:core>"
MAIN_MODULE = "<tavernlab:main>"

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
