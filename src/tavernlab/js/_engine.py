"""jsbox (QuickJS) as the worker loads and classifies it: the notes of what the engine does.

Imported only by the worker process (:mod:`tavernlab.js._worker`). :func:`load_engine` loads
the extension module without importing the ``jsbox`` package; :class:`Interrupted` is how a
refused capability call stops a guest; :func:`classify_failure` turns an escaped guest error
into the outcome the parent reports.

What jsbox 0.1.3 does, as measured (notes for whoever touches the sandbox)
---------------------------------------------------------------------------


* API: ``Runtime(memory_limit, max_stack_size, max_value_bytes, on_console, lossy,
  max_pending_calls, buffer)`` with ``add_static_module(name, source)``,
  ``eval_module(name, timeout)`` (returns the exports as a dict; functions are skipped),
  ``eval(code, timeout)``, ``bind_function``, ``bind_object``, ``check_syntax`` and an
  asyncio-based ``eval_async``. Errors: ``JavaScriptError`` (``name``, ``message``,
  ``stack``) and ``JsTimeoutError``. About 0.4 ms to create a Runtime with limits; a host
  call costs about 2 us.
* Modules are found by literal registered name only: ``import './lib.js'`` from a module
  named ``/scratch/task.js`` fails with ``module not found: ./lib.js``. Hence the tree-sitter
  scan and rewriting (:mod:`tavernlab.js._scan`, :mod:`tavernlab.js._modules`). Names may be
  any string (``/scratch/<eval>``). Dynamic ``import()`` and top-level ``await`` work in
  ``eval_module``.
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
import os
from typing import Any


class Interrupted(BaseException):
    """Stops the guest: the parent refused a call (cancel, deadline).

    Raised from a host function; jsbox lets the guest's ``catch`` see it as
    ``host function failed: <class name>``, then interrupts the interpreter at its next check
    and re-raises it from ``eval_module``. A ``BaseException`` on purpose: it is a control
    signal inside the worker process, never an error a caller sees.
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


def classify_failure(outcome: dict[str, Any]) -> dict[str, Any]:
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
