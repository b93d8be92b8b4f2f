"""The numbers and fixed messages of the JavaScript sandbox (docs/js-and-skills.md).

Kept in one small module without other tavernlab imports because both sides of the process
boundary need them: the parent (command, pool, runtime API, legacy engine) and the worker
process, which must start fast and import as little as possible.

Where upstream's wording is unknown the text below is tavernlab's choice; each such constant
says so.
"""

from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB

#: QuickJS heap limit per execution.
MEMORY_LIMIT = 32 * MIB
#: QuickJS stack limit per execution.
STACK_LIMIT = 256 * KIB
#: Largest value that crosses the jsbox boundary in one conversion. The heap limit bounds
#: every guest string well below this, so a large result or write can always be measured
#: exactly instead of failing in the conversion layer (jsbox's own default is 16 MB).
MAX_VALUE_BYTES = 64 * MIB
#: Upstream's process-wide cap on concurrent QuickJS executions: the size of the default
#: pool, which every ``js`` run and legacy script of the process shares.
MAX_CONCURRENT_JOBS = 2
#: A worker whose resident memory exceeds this after cleaning up a job retires while idle.
WORKER_RSS_LIMIT = 64 * MIB
#: Upstream's 30 s, in seconds, defined once: the whole-call deadline of ``workspace.shell``
#: (and so of every ``js`` run inside it), the deadline of a ``js`` run started without one,
#: and the legacy ``skill.run_script`` execution limit.
DEFAULT_DEADLINE_S = 30.0

# --- the V5 command -------------------------------------------------------------------------

#: Cap of each output stream (stdout, stderr) of one ``js`` run.
OUTPUT_CAP = 128 * KIB
#: Largest stdin module.
STDIN_LIMIT = 128 * KIB
#: Aggregate input budget of one shell call (upstream value unknown; tavernlab chooses 8 MiB).
INPUT_BUDGET = 8 * MIB
#: Most entries ``workspace.listFiles(dir)`` walks.
LIST_FILES_LIMIT = 4096

OUTPUT_EXCEEDED = (f"JavaScript output exceeds {OUTPUT_CAP} bytes. Save the content to a "
                   "workspace file and print its path.")
LINE_EXCEEDED = ("JavaScript log line exceeds the output limit; write large content to a "
                 "workspace file.")
EXIT_CODE_INVALID = "process.exitCode must be a numeric integer from 0 to 255."
PENDING_PROMISE = "The awaited Promise is still pending, but no work remains to resolve it."
MODULE_NOT_AVAILABLE = ("This module is not available. Import a workspace .js/.mjs file or a "
                        "built-in module listed in js --help.")
IMPORT_ATTRIBUTES = "Import attributes are not supported; import a .js/.mjs module."
SOURCE_NOT_UTF8 = "JavaScript source must be UTF-8."
STDIN_TOO_LARGE = "JavaScript stdin exceeds the command size limit; use a workspace script file."
NO_STDIN = "js - requires module source on stdin."
#: Prefix of a path parse failure in the runtime API (upstream's ``InvalidData`` display).
INVALID_DATA_PREFIX = "Invalid data: "


def path_not_found(verb: str, path: str) -> str:
    """``Cannot <verb> `<path>`: path not found. Check the directory with
    workspace.listFiles.`` with ``path`` in shell form (``/scratch/a.txt``): the missing
    script, ``readText`` and ``listFiles(dir)``."""
    return (f"Cannot {verb} `{path}`: path not found. Check the directory with "
            "workspace.listFiles.")


# --- interruption reasons (upstream wording unknown; tavernlab's choice) ---------------------
#: Reason keys sent across the process boundary, and the text that replaces the exception.
INTERRUPT_REASONS: dict[str, str] = {
    "deadline": "JavaScript execution exceeded its time limit and was interrupted.",
    "cancel": "JavaScript execution was cancelled.",
    "memory": f"JavaScript exceeded the {MEMORY_LIMIT // MIB} MiB memory limit.",
    "stack": f"JavaScript exceeded the {STACK_LIMIT // KIB} KiB stack limit.",
}

# --- the legacy skill.run_script engine (docs/js-and-skills.md) -----------------------------

LEGACY_RESULT_LIMIT = 256 * KIB
LEGACY_MAX_MODULES = 64
LEGACY_MODULE_BYTES = 2 * MIB
LEGACY_INPUT_LIMIT = 8 * MIB
LEGACY_OUTPUT_LIMIT = 1 * MIB
#: Fixed accounting cost added to each write and each log line of the output budget.
LEGACY_ENTRY_COST = 64
LEGACY_SNAPSHOT_DEPTH = 10
LEGACY_SNAPSHOT_ENTRIES = 1000
