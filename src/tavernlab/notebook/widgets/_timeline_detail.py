"""What the timeline shows for the selected bar: its arguments, result, resource refs and
the files it changed.

A tool call's arguments come from the run's tool-args file (``argumentsPath`` of its
``tool_call_requested``, under the run's directory) and its result from the stored result
(``tool_result_stored``'s path, under the workspace). A ``run.js`` job stores neither: its
arguments are the command line it was given and its result is what the journal recorded
(exit code, and the size and SHA-256 of what it printed). A commit shows the file, mode and
the message it became. A model call shows the request as the loop summarised it (model, message
and tool counts, the tool turn) with its attempts, retries and failures, and the response
stored under ``model-responses/`` (its text, then each tool call it asked for; the whole
stored record as the structured part). Nothing is shortened: long text folds in the front
end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tavernlab.notebook.widgets._timeline_state import Bar
from tavernlab.views import stored_arguments
from tavernlab.workspace.records import read_json


def _json_text(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _stored(path: Path) -> tuple[Any, str | None]:
    """A stored JSON file, or ``(None, why it could not be read)``."""
    try:
        return read_json(path), None
    except (OSError, ValueError) as exc:
        return None, f"(not readable: {exc})"


def call_arguments(bar: Bar, run_dir: Path) -> str:
    """A tool call's arguments as pretty JSON (or why they cannot be shown)."""
    if bar.arguments_path is None:
        return "(no arguments file)"
    stored, problem = _stored(run_dir / bar.arguments_path)
    if problem is not None:
        return problem
    return _json_text(stored_arguments(stored))


def call_result(bar: Bar, workspace_dir: Path) -> tuple[str, str | None]:
    """A tool call's result content and its structured part (pretty JSON, if any)."""
    if bar.result_path is None:
        return ("(running: no result yet)" if bar.status == "running"
                else "(no stored result)"), None
    stored, problem = _stored(workspace_dir / bar.result_path)
    if problem is not None:
        return problem, None
    content = str(stored.get("content", "")) if isinstance(stored, dict) else _json_text(stored)
    structured = stored.get("structured") if isinstance(stored, dict) else None
    return content, None if structured is None else _json_text(structured)


def job_result(bar: Bar) -> str:
    """A js job's outcome as the journal recorded it."""
    facts = bar.facts
    if "exit_code" not in facts:
        return "(running)"
    return (f"exit code {facts['exit_code']}{' (timed out)' if bar.error_code else ''}\n"
            f"stdout: {facts['stdout_bytes']} bytes, sha256 {facts['stdout_sha256']}\n"
            f"stderr: {facts['stderr_bytes']} bytes, sha256 {facts['stderr_sha256']}")


def commit_result(bar: Bar) -> str:
    """What a chat commit became."""
    facts = bar.facts
    if "message_index" in facts:
        swipe = "" if facts.get("swipe_id") is None else f" (swipe {facts['swipe_id']})"
        return f"saved as message #{facts['message_index']}{swipe}"
    return "(running)" if bar.status == "running" else "not saved"


def model_request(bar: Bar) -> str:
    """A model call's request summary, attempts, retries, failures and usage."""
    facts = bar.facts
    shown = {"round": facts.get("round"), "invocationId": facts.get("invocation_id"),
             "request": facts.get("request", {}), "toolTurn": facts.get("toolTurn", {}),
             "attempts": facts.get("attempts"), "maxRetries": facts.get("max_retries"),
             "retries": facts.get("retries"), "failures": facts.get("failures", [])}
    if "usage" in facts:
        shown["usage"] = facts["usage"]
    return _json_text(shown)


def model_response(bar: Bar, run_dir: Path) -> tuple[str, str | None]:
    """A model call's response: its text, then one line per tool call it asked for; and the
    stored record as pretty JSON."""
    if bar.result_path is None:
        return ("(running: no response yet)" if bar.status == "running"
                else "(no stored response)"), None
    stored, problem = _stored(run_dir / bar.result_path)
    if problem is not None:
        return problem, None
    response = stored.get("response", {}) if isinstance(stored, dict) else {}
    lines = [str(response.get("text") or "")] if response.get("text") else []
    for call in response.get("toolCalls") or []:
        alias = (call.get("providerMetadata") or {}).get("modelAlias") or call.get("toolId")
        lines.append(f"→ {alias} {json.dumps(call.get('arguments'), ensure_ascii=False)}")
    return ("\n".join(lines) or "(no text and no tool calls)"), _json_text(stored)


def describe(bar: Bar, run_dir: Path, workspace_dir: Path) -> dict[str, Any]:
    """The detail pane's content for ``bar``."""
    structured = None
    if bar.kind == "js":
        arguments = _json_text({k: bar.facts.get(k) for k in ("command", "argv", "cwd")})
        result = job_result(bar)
    elif bar.kind == "model":
        arguments = model_request(bar)
        result, structured = model_response(bar, run_dir)
    elif bar.kind == "commit":
        arguments = _json_text({k: bar.facts.get(k)
                                for k in ("path", "mode", "explicit", "sha256", "call_id")})
        result = commit_result(bar)
    else:
        arguments = call_arguments(bar, run_dir)
        result, structured = call_result(bar, workspace_dir)
    return {"id": bar.id, "kind": bar.kind, "label": bar.label, "status": bar.status,
            "round": bar.round, "start_ms": bar.start_ms, "end_ms": bar.end_ms,
            "elapsed_ms": bar.elapsed_ms, "error_code": bar.error_code,
            "message": bar.message, "arguments": arguments, "result": result,
            "structured": structured, "resource_refs": list(bar.resource_refs),
            "files": list(bar.files)}
