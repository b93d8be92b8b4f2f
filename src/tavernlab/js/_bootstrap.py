"""The sandbox's own JavaScript: the core script and modules, the runtime module, the bootstraps.

Registered in every job's fresh Runtime by the worker (:mod:`tavernlab.js._worker`):

* the core script (:data:`CORE_SCRIPT`). Evaluating it captures the two host functions and
  the intrinsics the sandbox relies on, and removes the host functions and jsbox's extra
  globals; it needs nothing from the job, so the worker evaluates it while idle. It holds only
  what every job needs (~0.15 ms to compile) and leaves one hidden global, ``start``, whose
  call reads the job's configuration (the global ``__tavernlab_config``, deleted at once, with
  ``start`` itself), installs the deterministic clock and random generator when the job
  carries them (:mod:`tavernlab.js._determinism`) and ``console``/``process`` for the
  command. It is a script, not a module, because jsbox 0.1.3 breaks dynamic ``import()`` in
  any ``eval_module`` that follows an earlier one (``TypeError: ArrayBuffer object
  expected``), while an earlier ``eval`` is harmless;
* ``<tavernlab:start>`` (:data:`START_SOURCE`), a small module the core script's last
  statement imports (so it is evaluated while the worker is idle; a dynamic ``import()`` from a
  script leaves later modules loadable): its first ``take``, the bootstrap's, calls ``start``,
  and it hands each part of the result out once (the bootstrap's internals, the core module's
  helpers);
* ``<tavernlab:core>`` (:data:`CORE_SOURCE`), the runtime API (``workspace``, ``context``,
  ``macros``, ``log``) whose calls go to the parent. Registered with every job but compiled
  and evaluated only when the job imports a runtime name, so a job that never uses the API
  never pays for it;
* the runtime module (:data:`RUNTIME_SOURCE`) re-exports that API under each runtime name of
  the job (``@tauritavern/runtime``; legacy also ``@tauritavern/runtime/v1``);
* ``<tavernlab:main>`` (:data:`BOOTSTRAPS`, one per mode) takes its internals from the start
  module, then imports the entry with ``await import(...)``, catching what it throws. Its
  ``outcome`` export carries the exit code, the legacy result JSON or the error
  (``String(error)``, ``error.stack``) back.

Names starting with ``<tavernlab:`` can never be reached by a static import (the parent only
resolves workspace paths and built-in names); a computed ``import()`` can reach them, which is
why every internal part is handed out only once and the worker checks the shape of each
capability call (:mod:`tavernlab.js._worker`).
"""

from __future__ import annotations

import json

from tavernlab.js._limits import EXIT_CODE_INVALID, LINE_EXCEEDED, OUTPUT_EXCEEDED

#: Internal module names (the ``<tavernlab:`` prefix can never be imported statically).
CORE_MODULE = "<tavernlab:core>"
START_MODULE = "<tavernlab:start>"
MAIN_MODULE = "<tavernlab:main>"

# Compiling costs about 3-5 us per function literal here (more than its statements), and the
# core is compiled for every job: it holds only what every job needs (the captured intrinsics,
# console and process, starting the job); repeated functions come from small factories; the
# runtime API is the core module, compiled only by a job that imports it; parts most jobs never
# need (describing a failure, the deterministic clock) arrive as strings (``LAZY_SOURCES``)
# and are compiled on first use with the Function constructor captured before any script ran.
_CORE_TEMPLATE = r"""(() => {
"use strict";
const host = globalThis.__tavernlab_host;
const emit = globalThis.__tavernlab_emit;
const lazy = globalThis.__tavernlab_lazy;
for (const name of ["__tavernlab_host", "__tavernlab_emit", "__tavernlab_lazy", "console",
                    "TextEncoder", "TextDecoder", "atob", "btoa"]) {
  delete globalThis[name];
}
const S = String;
const wellFormed = Function.prototype.call.bind(String.prototype.toWellFormed);
const isInteger = Number.isInteger;
const defineProperty = Object.defineProperty;
const compile = Function;
const OUTPUT_ERRORS = [null, @@OUTPUT_EXCEEDED@@, @@LINE_EXCEEDED@@];
const hidden = (value) => ({ value, writable: true, configurable: true });
// The intrinsics only start() needs are read there: it runs before any script of the job.
// Every function a script can find on its stack (format, write, the console methods, the
// exitCode setter, describe) keeps its line and column: a stack a script prints itself
// shows them.




function format(args) {
  let line = "";
  for (let i = 0; i < args.length; i++) {
    if (i > 0) line += " ";
    line += S(args[i]);
  }
  return wellFormed(line) + "\n";
}
function write(stream, args) {
  const code = emit(stream, format(args));
  if (code !== 0) throw new Error(OUTPUT_ERRORS[code]);
}

let exitCode = 0;

function installCommandGlobals(argv) {
  const writer = (stream) => (...args) => { write(stream, args); };
  const console = { log: writer(1), info: writer(1), debug: writer(1), warn: writer(2),
                    error: writer(2) };
  defineProperty(globalThis, "console", hidden(console));
  const process = { argv };


  defineProperty(process, "exitCode", {
    get() { return exitCode; },
    set(value) {
      if (typeof value !== "number" || !isInteger(value) || value < 0 || value > 255) {
        throw new TypeError(@@EXIT_CODE_INVALID@@);
      }
      exitCode = value;
    },

    enumerable: true,
  });
  defineProperty(globalThis, "process", hidden(process));
}

// Rarely needed parts are compiled on first use, with the intrinsics captured above.
let describe = (error) => {
  describe = compile("return " + lazy.describe)()(S, wellFormed);
  return describe(error);
};

function start() {
  const config = globalThis.__tavernlab_config;
  delete globalThis.__tavernlab_config;
  delete globalThis.__tavernlab_core;
  if (config.timeOrigin !== null || config.randomState !== null) {
    const install = compile("return " + lazy.determinism)()({ NativeDate: Date, hidden,
      construct: Reflect.construct, defineProperty, freeze: Object.freeze, imul: Math.imul });
    if (config.timeOrigin !== null) install.clock(config.timeOrigin);
    if (config.randomState !== null) install.random(config.randomState);
  }
  const legacy = config.mode !== "command";
  if (!legacy) installCommandGlobals(config.argv);
  return {
    job: {
      entry: config.entry,
      exitCode: () => exitCode,
      describe: (error) => describe(error),
      stringify: JSON.stringify,
      args: legacy ? JSON.parse(config.args) : undefined,
    },
    runtime: { host, ERRORS: { Error, TypeError, RangeError }, format, wellFormed, legacy,
               freeze: Object.freeze, parse: JSON.parse, defineProperty, context: config.context },
  };
}
defineProperty(globalThis, "__tavernlab_core", hidden(start));
})();
import(@@START_MODULE@@).then(() => 0);
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

#: The core script (see the module docstring), with the fixed messages filled in.
CORE_SCRIPT = (_CORE_TEMPLATE.replace("@@OUTPUT_EXCEEDED@@", json.dumps(OUTPUT_EXCEEDED))
               .replace("@@LINE_EXCEEDED@@", json.dumps(LINE_EXCEEDED))
               .replace("@@EXIT_CODE_INVALID@@", json.dumps(EXIT_CODE_INVALID))
               .replace("@@START_MODULE@@", json.dumps(START_MODULE)))

#: The sources the core compiles on first use, handed to each Runtime as the global
#: ``__tavernlab_lazy`` (copying a string in costs far less than compiling it as a literal).
LAZY_SOURCES = {"describe": DESCRIBE_SOURCE, "determinism": DETERMINISM_SOURCE}

#: The start module: its first ``take`` starts the job (the core script's ``start``, which
#: removes its own global), and it hands each part of what that returns out once:
#: ``take("job")`` to the bootstrap (its first statement, before any module of the job runs),
#: ``take("runtime")`` to the core module. The worker evaluates it with the core script, while
#: idle (the core script's last statement imports it), so a job only links it.
START_SOURCE = """let k;
export function take(part) {
  if (k === undefined) k = globalThis.__tavernlab_core();
  const value = k[part];
  k[part] = undefined;
  return value;
}
"""


#: The core module: the runtime API (``workspace``, ``context``, ``macros``, ``log``), built
#: from the core script's helpers when a job first imports a runtime name (never compiled
#: otherwise); ``takeInternals()`` is the bootstrap's part, already taken by then. It may be
#: evaluated after the job's own modules ran, so it touches no global a script could have
#: replaced: the helpers are the core script's captured intrinsics, descriptors have no
#: prototype and loops do not iterate.
CORE_SOURCE = """import { take } from "<tavernlab:start>";
const { host, ERRORS, format, wellFormed, freeze, parse, defineProperty, legacy,
        context: json } = take("runtime");
function call(op, a, b) {
  const reply = host(op, a === undefined ? null : a, b === undefined ? null : b);
  if (reply[0]) return reply[1];
  throw new ERRORS[reply[1]](reply[2]);
}
function str(value, what) {
  if (typeof value !== "string") throw new TypeError(what + " must be a string");
  return wellFormed(value);
}
export function takeInternals() {
  return take("job");
}
export const workspace = freeze({
  readText(path) { return call("readText", str(path, "path")); },
  writeText(path, text) { call("writeText", str(path, "path"), str(text, "text")); },
  exists(path) { return call("exists", str(path, "path")); },
  listFiles(dir) { return call("listFiles", dir === undefined ? null : str(dir, "path")); },
});
export const macros = freeze({ render(text) { return call("render", str(text, "text")); } });
export const context = legacy ? parse(json) : commandContext(json);
export const log = runtimeLog(legacy);

function commandContext(json) {
  let data;
  const context = {};
  const names = ["worldInfo", "variables", "macro"];
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    defineProperty(context, name, { __proto__: null, enumerable: true, get: () => {
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
  const names = legacy ? ["info", "warn", "error", "debug"]
                       : ["log", "info", "warn", "error", "debug"];
  for (let i = 0; i < names.length; i++) {
    defineProperty(log, names[i], { __proto__: null, value: level(names[i]), writable: true,
                                    enumerable: true, configurable: true });
  }
  return freeze(log);
}
"""

#: The runtime API module, registered under each runtime name of a job.
RUNTIME_SOURCE = f"export {{ workspace, context, macros, log }} from {json.dumps(CORE_MODULE)};\n"

#: Legacy entry messages (docs/js-and-skills.md).
NO_ENTRY_FUNCTION = "skill script must export a `default` or `main` function"
NOT_SERIALIZABLE = ("skill script must return a JSON-serializable value; `undefined` and "
                    "functions cannot be returned (return `null` explicitly instead)")

_COMMAND_BOOTSTRAP = f"""import {{ take }} from {json.dumps(START_MODULE)};
const k = take("job");
let outcome;
try {{
  await import(k.entry);
  outcome = {{ ok: true, exitCode: k.exitCode() }};
}} catch (error) {{
  outcome = k.describe(error);
}}
export {{ outcome }};
"""

_LEGACY_BOOTSTRAP = f"""import {{ take }} from {json.dumps(START_MODULE)};
const k = take("job");
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
