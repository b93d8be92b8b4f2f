"""The layout of a run directory (docs/layout.md, "A run directory"), described once.

Every name below is a path relative to the run directory, written with ``/``: join it to the
directory (``run_dir / EVENTS``) or look it up in an exported bundle (``run_file(EVENTS)``).
The host writes these files, the policy keeps them from being roots, replay reads and compares
them, and the timeline and the static viewer read them back; all of them take the names from
here.

::

    run.json  manifest.json  events.jsonl  journal.jsonl
    input/    prompt_snapshot.json  resolved_profile.json  origin.json  skill_bindings.json
              system_prompt.md  persist_snapshot.json  host_chat.json  resolved_skills.json
              loop_start.json  invocations/<inv-id>/tool_snapshot.json
    tool-args/<inv-id>/<record>.json          each call's arguments
    tool-results/<key>/<record>.json (.txt)   each call's stored result (and readable view)
    model-responses/[<inv-id>/]round-NNN.json each round's model answer
    js-jobs/<job-id>.json                     the bytes of each js job
    output/ scratch/ plan/ summaries/ persist/  the default writable roots
    .workspace.lock  .tavernlab-staging/  .tavernlab-calls   the storage's own bookkeeping

A call's record name (``<record>``) is ``round-NNN-call_<16 hex>``, the hex of the first 8
bytes of the SHA-256 of its call id: :func:`tool_record_name`.
"""

from __future__ import annotations

import hashlib

__all__ = [
    "CALL_COUNTER_NAME", "DEFAULT_ROOTS", "EVENTS", "HOST_CHAT", "INPUT", "INTERNAL_NAMES",
    "JOURNAL", "JS_JOBS", "LOCK_FILE_NAME", "LOGS", "LOOP_START", "MANIFEST", "MESSAGE_BODY",
    "MODEL_RESPONSES", "ORIGIN", "OUTPUT", "PERSIST", "PERSIST_SNAPSHOT", "PROMPT_SNAPSHOT",
    "RESERVED_NAMES", "RESOLVED_PROFILE", "RESOLVED_SKILLS", "RUN_RECORD", "SKILL_BINDINGS",
    "STAGING_DIR_NAME", "SYSTEM_PROMPT", "TOOL_ARGS", "TOOL_RESULTS", "js_job_path",
    "model_response_path", "tool_args_dir", "tool_args_path", "tool_record_name",
    "tool_result_path", "tool_result_view_path", "tool_snapshot_path",
]


def call_stem(call_id: str) -> str:
    """``call_`` + hex of the first 8 bytes of SHA-256(call id): the tool-result file stem."""
    return "call_" + hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:16]


def tool_record_name(round_number: int, call_id: str) -> str:
    """``round-NNN-call_<16 hex>``."""
    return f"round-{round_number:03d}-{call_stem(call_id)}"


#: The run record.
RUN_RECORD = "run.json"
#: The workspace manifest: roots, artifacts, commit policy.
MANIFEST = "manifest.json"
#: Upstream's event log.
EVENTS = "events.jsonl"
#: tavernlab's journal beside the events.
JOURNAL = "journal.jsonl"
#: Both logs, the events first.
LOGS = (EVENTS, JOURNAL)

#: The frozen inputs (hidden from the model).
INPUT = "input"
PROMPT_SNAPSHOT = f"{INPUT}/prompt_snapshot.json"
RESOLVED_PROFILE = f"{INPUT}/resolved_profile.json"
ORIGIN = f"{INPUT}/origin.json"
SKILL_BINDINGS = f"{INPUT}/skill_bindings.json"
SYSTEM_PROMPT = f"{INPUT}/system_prompt.md"
PERSIST_SNAPSHOT = f"{INPUT}/persist_snapshot.json"
HOST_CHAT = f"{INPUT}/host_chat.json"
#: The skills the agent loop resolved.
RESOLVED_SKILLS = f"{INPUT}/resolved_skills.json"
#: What re-drives a model-driven run.
LOOP_START = f"{INPUT}/loop_start.json"

#: Each call's stored arguments, by invocation.
TOOL_ARGS = "tool-args"
#: Each call's stored result, by invocation (by run for a session run); a read-only root.
TOOL_RESULTS = "tool-results"
#: The model's answer of each round (written by the agent loop).
MODEL_RESPONSES = "model-responses"
#: The bytes of each js job.
JS_JOBS = "js-jobs"

#: The root the model's message body is written in, and the body's default path.
OUTPUT = "output"
MESSAGE_BODY = f"{OUTPUT}/main.md"
#: The persist root (the projection of a persist state).
PERSIST = "persist"
#: The roots of a Chat target's default Profile (writable children).
DEFAULT_ROOTS: tuple[str, ...] = (OUTPUT, "scratch", "plan", "summaries", PERSIST)

#: Name of the lock file kept in every workspace directory (never a visible root).
LOCK_FILE_NAME = ".workspace.lock"
#: The folder at the top of every workspace directory where atomic writes stage their bytes
#: before the rename (never a visible root, so a file staged there - one a killed writer left
#: behind - is never listed, read or published; emptied when a run is opened).
STAGING_DIR_NAME = ".tavernlab-staging"
#: A run directory's call counter, shared by every process writing the run.
CALL_COUNTER_NAME = ".tavernlab-calls"
#: Names at the top of a workspace or run directory that are the storage's own bookkeeping,
#: never a run's content: the tree, an export and a replay's comparison leave them out.
INTERNAL_NAMES = frozenset({LOCK_FILE_NAME, STAGING_DIR_NAME, CALL_COUNTER_NAME})

#: Names a Profile may not use as a root: the run's hidden internals (upstream's names, whose
#: full list is unknown: tavernlab chooses exactly these), and tavernlab's own journal and js
#: jobs.
RESERVED_NAMES: frozenset[str] = frozenset({
    "runs", INPUT, "invocations", "tasks", "agent-results", MODEL_RESPONSES, TOOL_ARGS,
    "checkpoints", EVENTS, MANIFEST, RUN_RECORD, JOURNAL, JS_JOBS,
})


def tool_args_dir(invocation_id: str) -> str:
    """``tool-args/<inv-id>``: the stored arguments of one invocation's calls."""
    return f"{TOOL_ARGS}/{invocation_id}"


def tool_args_path(invocation_id: str, record_name: str) -> str:
    """``tool-args/<inv-id>/<record>.json``: a call's stored arguments."""
    return f"{tool_args_dir(invocation_id)}/{record_name}.json"


def tool_result_path(key: str, record_name: str) -> str:
    """``tool-results/<key>/<record>.json``: a call's stored result (``key`` is the
    invocation id, or the run id for a session run)."""
    return f"{TOOL_RESULTS}/{key}/{record_name}.json"


def tool_result_view_path(key: str, record_name: str) -> str:
    """``tool-results/<key>/<record>.txt``: the readable view of a long external result."""
    return f"{TOOL_RESULTS}/{key}/{record_name}.txt"


def tool_snapshot_path(invocation_id: str) -> str:
    """``input/invocations/<inv-id>/tool_snapshot.json``: the tools an invocation was shown."""
    return f"{INPUT}/invocations/{invocation_id}/tool_snapshot.json"


def model_response_path(invocation_id: str | None, round_number: int) -> str:
    """``model-responses/round-NNN.json`` for the root invocation (``None``),
    ``model-responses/<inv-id>/round-NNN.json`` for another."""
    folder = MODEL_RESPONSES if invocation_id is None else f"{MODEL_RESPONSES}/{invocation_id}"
    return f"{folder}/round-{round_number:03d}.json"


def js_job_path(job_id: str) -> str:
    """``js-jobs/<job-id>.json``: the bytes of one js job."""
    return f"{JS_JOBS}/{job_id}.json"
