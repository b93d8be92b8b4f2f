"""Views of what a call returns: a tool result, a ``js`` command result, a shell result.

Each has a text form (terminal IPython, ``repr``-like output, saved notebooks) and an HTML
form; both show every field in full (long text folds, see :mod:`tavernlab.views._markup`).
"""

from __future__ import annotations

from tavernlab.js import CommandResult
from tavernlab.shell import ShellResult
from tavernlab.views._markup import badge, card, code, escape, indent, json_text, pre, value_html
from tavernlab.workspace.tools import ToolResult


def _status(is_error: bool, code_text: str | None) -> tuple[str, str]:
    """``(text mark, HTML badge)`` of an outcome."""
    if is_error:
        return f"✗ {code_text or 'error'}", badge(code_text or "error", "error")
    return "✓", badge("ok", "ok")


def tool_result_text(result: ToolResult) -> str:
    """``ToolResult ✓ workspace.read_file (call_3)`` then content, structured, refs."""
    mark, _ = _status(result.is_error, result.error_code)
    head = " ".join(part for part in ("ToolResult", mark, result.tool_id,
                                      f"({result.call_id})" if result.call_id else None) if part)
    lines = [head, "  content:", indent(result.content or "(empty)", "    ")]
    if result.structured is not None:
        lines += ["  structured:", indent(json_text(result.structured), "    ")]
    if result.resource_refs:
        lines.append(f"  resourceRefs: {', '.join(result.resource_refs)}")
    return "\n".join(lines)


def tool_result_html(result: ToolResult) -> str:
    """A card: tool id, call id and status, then content, structured JSON and refs."""
    _, status = _status(result.is_error, result.error_code)
    title = f"{escape(result.tool_id or 'tool result')} {status}"
    fields = [("content", pre(result.content, label="content") if result.content
               else "<i>empty</i>")]
    if result.call_id:
        fields.insert(0, ("call", code(result.call_id)))
    if result.structured is not None:
        fields.append(("structured", value_html(result.structured)))
    if result.resource_refs:
        fields.append(("resourceRefs", ", ".join(code(r) for r in result.resource_refs)))
    return card(title, fields)


def _streams_text(stdout: str, stderr: str) -> list[str]:
    lines = []
    for name, text in (("stdout", stdout), ("stderr", stderr)):
        if text:
            lines += [f"  {name}:", indent(text.rstrip("\n"), "    ")]
    return lines


def _streams_html(stdout: str, stderr: str) -> list[tuple[str, str]]:
    return [(name, pre(text, label=name)) for name, text in (("stdout", stdout),
                                                              ("stderr", stderr)) if text]


def command_result_text(result: CommandResult) -> str:
    """``CommandResult exit 0`` (``timed out`` / ``cancelled`` noted) then both streams."""
    notes = [n for n, on in (("timed out", result.timed_out),
                             ("cancelled", result.cancelled)) if on]
    head = f"CommandResult exit {result.exit_code}" + "".join(f", {n}" for n in notes)
    return "\n".join([head, *_streams_text(result.stdout, result.stderr)])


def command_result_html(result: CommandResult) -> str:
    """A card with the exit status badge and both streams."""
    tone = "ok" if result.exit_code == 0 else "error"
    badges = [badge(f"exit {result.exit_code}", tone)]
    badges += [badge(n, "warn") for n, on in (("timed out", result.timed_out),
                                              ("cancelled", result.cancelled)) if on]
    fields = _streams_html(result.stdout, result.stderr) or [("output", "<i>none</i>")]
    return card(f"js {' '.join(badges)}", fields)


def shell_result_text(result: ShellResult) -> str:
    """``ShellResult completed, exit 0 (call_4)`` then streams, truncation and refs."""
    call = result.tool_result.call_id if result.tool_result is not None else None
    head = f"ShellResult {result.outcome.value}"
    if result.exit_code is not None:
        head += f", exit {result.exit_code}"
    if result.error_code:
        head += f" ✗ {result.error_code}"
    if call:
        head += f" ({call})"
    lines = [head, *_streams_text(result.stdout, result.stderr)]
    if result.output_truncated:
        lines.append("  output truncated (a stream hit its 128 KiB cap)")
    if result.resource_refs:
        lines.append(f"  resourceRefs: {', '.join(result.resource_refs)}")
    return "\n".join(lines)


def shell_result_html(result: ShellResult) -> str:
    """A card with the outcome, exit code, call id, streams and changed paths."""
    _, status = _status(result.is_error, result.error_code)
    title = f"workspace.shell {status}"
    fields: list[tuple[str, str]] = [("outcome", escape(result.outcome.value))]
    if result.exit_code is not None:
        fields.append(("exit code", code(str(result.exit_code))))
    if result.tool_result is not None and result.tool_result.call_id:
        fields.append(("call", code(result.tool_result.call_id)))
    fields += _streams_html(result.stdout, result.stderr)
    if result.output_truncated:
        fields.append(("truncated", badge("a stream hit its 128 KiB cap", "warn")))
    if result.resource_refs:
        fields.append(("resourceRefs", ", ".join(code(r) for r in result.resource_refs)))
    return card(title, fields)
