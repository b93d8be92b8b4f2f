"""The sandbox's own JavaScript: the core module, the runtime module and the bootstraps.

Registered in every job's fresh Runtime by the worker (:mod:`tavernlab.js._worker`):

* the core script (:data:`CORE_SCRIPT`). Evaluating it captures the two host functions and
  the intrinsics it relies on, and removes the host functions and jsbox's extra globals; it
  needs nothing from the job, so the worker evaluates it while idle (it is the bulk of the
  sandbox's JavaScript, ~0.3 ms to compile). It leaves one hidden global, ``start``, whose
  call reads the job's configuration (the global ``__tavernlab_config``, deleted at once),
  installs the deterministic clock and random generator when the job carries them
  (:mod:`tavernlab.js._determinism`), installs ``console``/``process`` for the command, and
  builds the runtime API (``workspace``, ``context``, ``macros``, ``log``) whose calls go to
  the parent. It is a script, not a module, because jsbox 0.1.3 breaks dynamic ``import()``
  in any ``eval_module`` that follows an earlier one (``TypeError: ArrayBuffer object
  expected``), while an earlier ``eval`` is harmless;
* ``<tavernlab:core>`` (:data:`CORE_SOURCE`), a small module evaluated with the job: it takes
  ``start`` (deleting the global), starts the job and exports the API;
* the runtime module (:data:`RUNTIME_SOURCE`) re-exports that API under each runtime name of
  the job (``@tauritavern/runtime``; legacy also ``@tauritavern/runtime/v1``);
* ``<tavernlab:main>`` (:data:`BOOTSTRAPS`, one per mode) takes the internals from the core
  module, then imports the entry with ``await import(...)``, catching what it throws. Its
  ``outcome`` export carries the exit code, the legacy result JSON or the error
  (``String(error)``, ``error.stack``) back.

Names starting with ``<tavernlab:`` can never be reached by a static import (the parent only
resolves workspace paths and built-in names).
"""

from __future__ import annotations

import json

from tavernlab.js._limits import EXIT_CODE_INVALID, LINE_EXCEEDED, OUTPUT_EXCEEDED

#: Internal module names (the ``<tavernlab:`` prefix can never be imported statically).
CORE_MODULE = "<tavernlab:core>"
MAIN_MODULE = "<tavernlab:main>"

# Compiling costs about 3-5 us per function literal here (more than its statements), and the
# core is compiled for every job: repeated functions come from small factories, and parts
# most jobs never need (describing a failure, the deterministic clock) are kept as source
# and compiled on first use with the Function constructor captured before any script ran.
_CORE_TEMPLATE = r"""(() => {
"use strict";
const host = globalThis.__tavernlab_host;
const emit = globalThis.__tavernlab_emit;
for (const name of ["__tavernlab_host", "__tavernlab_emit", "console", "TextEncoder",
                    "TextDecoder", "atob", "btoa"]) {
  delete globalThis[name];
}
const S = String;
const wellFormed = Function.prototype.call.bind(String.prototype.toWellFormed);
const isInteger = Number.isInteger;
const stringify = JSON.stringify;
const parse = JSON.parse;
const freeze = Object.freeze;
const defineProperty = Object.defineProperty;
const construct = Reflect.construct;
const imul = Math.imul;
const compile = Function;
const NativeDate = Date;
const ERRORS = { Error, TypeError, RangeError };
const OUTPUT_ERRORS = [null, @@OUTPUT_EXCEEDED@@, @@LINE_EXCEEDED@@];
const hidden = (value) => ({ value, writable: true, configurable: true, enumerable: false });

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
let workspace, context, macros, log;

function installCommandGlobals(argv) {
  const writer = (stream) => (...args) => { write(stream, args); };
  const console = { log: writer(1), info: writer(1), debug: writer(1), warn: writer(2),
                    error: writer(2) };
  defineProperty(globalThis, "console", hidden(console));
  const process = {};
  defineProperty(process, "argv",
                 { value: argv, writable: true, configurable: true, enumerable: true });
  defineProperty(process, "exitCode", {
    get() { return exitCode; },
    set(value) {
      if (typeof value !== "number" || !isInteger(value) || value < 0 || value > 255) {
        throw new TypeError(@@EXIT_CODE_INVALID@@);
      }
      exitCode = value;
    },
    configurable: false,
    enumerable: true,
  });
  defineProperty(globalThis, "process", hidden(process));
}

function commandContext(json) {
  let data;
  const context = {};
  for (const name of ["worldInfo", "variables", "macro"]) {
    defineProperty(context, name, { enumerable: true, get: () => {
      if (json === null) throw new Error(`context.${name} is unavailable for this task.`);
      if (data === undefined) data = parse(json);
      return data[name];
    } });
  }
  return freeze(context);
}

function runtimeLog(legacy) {
  const level = (name) => legacy
    ? (message) => {
      if (typeof message !== "string") throw new TypeError(`log.${name} expects a string message`);
      call("log", name, wellFormed(message));
    }
    : (...args) => { call("log", name, format(args)); };
  const log = {};
  for (const name of legacy ? ["info", "warn", "error", "debug"]
                            : ["log", "info", "warn", "error", "debug"]) {
    log[name] = level(name);
  }
  return freeze(log);
}

// Rarely needed parts are compiled on first use, with the intrinsics captured above.
let describe = (error) => {
  describe = compile("return " + @@DESCRIBE@@)()(S, wellFormed);
  return describe(error);
};
function installDeterminism(config) {
  const install = compile("return " + @@DETERMINISM@@)()(
    { NativeDate, construct, defineProperty, freeze, hidden, imul });
  if (config.timeOrigin !== null) install.clock(config.timeOrigin);
  if (config.randomState !== null) install.random(config.randomState);
}

function start() {
  const config = globalThis.__tavernlab_config;
  delete globalThis.__tavernlab_config;
  if (config.timeOrigin !== null || config.randomState !== null) installDeterminism(config);
  workspace = freeze({
    readText(path) { return call("readText", str(path, "path")); },
    writeText(path, text) { call("writeText", str(path, "path"), str(text, "text")); },
    exists(path) { return call("exists", str(path, "path")); },
    listFiles(dir) { return call("listFiles", dir === undefined ? null : str(dir, "path")); },
  });
  macros = freeze({ render(text) { return call("render", str(text, "text")); } });
  if (config.mode === "command") {
    installCommandGlobals(config.argv);
    context = commandContext(config.context);
    log = runtimeLog(false);
  } else {
    context = parse(config.context);
    log = runtimeLog(true);
  }
  return {
    api: { workspace, context, macros, log },
    entry: config.entry,
    exitCode: () => exitCode,
    describe: (error) => describe(error),
    stringify,
    args: config.mode === "legacy" ? parse(config.args) : undefined,
  };
}
defineProperty(globalThis, "__tavernlab_core", hidden(start));
})();
"""

#: The failure description of the bootstraps (``String(error)``, ``stack``, ``name``,
#: ``message``, all well-formed), compiled by the core on the first failure.
DESCRIBE_SOURCE = r"""(S, wellFormed) => function describe(error) {
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
"""

#: The deterministic clock and random generator of :mod:`tavernlab.js._determinism`,
#: compiled by the core only for a job that carries a time origin or a random state.
DETERMINISM_SOURCE = r"""({ NativeDate, construct, defineProperty, freeze, hidden, imul }) => ({
// Deterministic time: reading k (from 0) of Date.now(), new Date(), Date() and
// performance.now() is origin + k ms (performance.now() returns k: ms since timeOrigin).
clock(origin) {
  let ticks = 0;
  const read = () => origin + ticks++;
  const DeterministicDate = function Date(...args) {
    if (new.target === undefined) return new NativeDate(read()).toString();
    return construct(NativeDate, args.length === 0 ? [read()] : args, new.target);
  };
  defineProperty(DeterministicDate, "length", { value: 7 });
  DeterministicDate.prototype = NativeDate.prototype;
  defineProperty(NativeDate.prototype, "constructor", hidden(DeterministicDate));
  defineProperty(DeterministicDate, "now", hidden(read));
  defineProperty(DeterministicDate, "parse", hidden(NativeDate.parse));
  defineProperty(DeterministicDate, "UTC", hidden(NativeDate.UTC));
  defineProperty(globalThis, "Date", hidden(DeterministicDate));
  const performance = freeze({ timeOrigin: origin, now: () => read() - origin });
  defineProperty(globalThis, "performance",
                 { value: performance, writable: true, configurable: true, enumerable: true });
},

// Seeded Math.random: xoshiro128** over the four 32-bit words of the job's state; each
// value takes two outputs, 27 + 26 bits: (a >>> 5) * 2^26 + (b >>> 6), divided by 2^53.
random(state) {
  let s0 = state[0] | 0, s1 = state[1] | 0, s2 = state[2] | 0, s3 = state[3] | 0;
  const next = () => {
    const m = imul(s1, 5);
    const result = imul((m << 7) | (m >>> 25), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3; s2 ^= t; s3 = (s3 << 11) | (s3 >>> 21);
    return result;
  };
  defineProperty(Math, "random", hidden(function random() {
    return ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992;
  }));
}
})
"""

#: The core script (see the module docstring), with the fixed messages and the lazily
#: compiled parts filled in.
CORE_SCRIPT = (_CORE_TEMPLATE.replace("@@OUTPUT_EXCEEDED@@", json.dumps(OUTPUT_EXCEEDED))
               .replace("@@DESCRIBE@@", json.dumps(DESCRIBE_SOURCE))
               .replace("@@DETERMINISM@@", json.dumps(DETERMINISM_SOURCE))
               .replace("@@LINE_EXCEEDED@@", json.dumps(LINE_EXCEEDED))
               .replace("@@EXIT_CODE_INVALID@@", json.dumps(EXIT_CODE_INVALID)))

#: The core module: takes ``start`` from the core script (and removes it), starts the job's
#: runtime and exports the API; ``takeInternals()`` gives the bootstrap, once, what it needs.
CORE_SOURCE = """const start = globalThis.__tavernlab_core;
delete globalThis.__tavernlab_core;
const k = start();
let taken = false;
export function takeInternals() {
  if (taken) return undefined;
  taken = true;
  return k;
}
export const { workspace, context, macros, log } = k.api;
"""

#: The runtime API module, registered under each runtime name of a job.
RUNTIME_SOURCE = f"export {{ workspace, context, macros, log }} from {json.dumps(CORE_MODULE)};\n"

#: Legacy entry messages (docs/js-and-skills.md).
NO_ENTRY_FUNCTION = "skill script must export a `default` or `main` function"
NOT_SERIALIZABLE = ("skill script must return a JSON-serializable value; `undefined` and "
                    "functions cannot be returned (return `null` explicitly instead)")

_COMMAND_BOOTSTRAP = f"""import {{ takeInternals }} from {json.dumps(CORE_MODULE)};
const k = takeInternals();
let outcome;
try {{
  await import(k.entry);
  outcome = {{ ok: true, exitCode: k.exitCode() }};
}} catch (error) {{
  outcome = k.describe(error);
}}
export {{ outcome }};
"""

_LEGACY_BOOTSTRAP = f"""import {{ takeInternals }} from {json.dumps(CORE_MODULE)};
const k = takeInternals();
let outcome;
try {{
  const entry = await import(k.entry);
  const run = typeof entry.default === "function" ? entry.default
    : typeof entry.main === "function" ? entry.main : undefined;
  if (run === undefined) throw new Error({json.dumps(NO_ENTRY_FUNCTION)});
  const value = await run(k.args);
  const json = value === undefined || typeof value === "function" ? undefined : k.stringify(value);
  if (json === undefined) throw new Error({json.dumps(NOT_SERIALIZABLE)});
  outcome = {{ ok: true, json }};
}} catch (error) {{
  outcome = k.describe(error);
}}
export {{ outcome }};
"""

#: The ``<tavernlab:main>`` module of each mode: start the core, run the entry, export the
#: ``outcome``.
BOOTSTRAPS = {"command": _COMMAND_BOOTSTRAP, "legacy": _LEGACY_BOOTSTRAP}
