"""Outcomes of a shell call and how they are reported (docs/shell.md)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any

from tavernlab.errors import ToolError
from tavernlab.workspace.tools import ToolResult


class ShellOutcome(enum.Enum):
    """How the interpreter ended: the rows of the outcome table (docs/shell.md)."""

    COMPLETED = "completed"
    CANCELLED = "cancelled"
    TIMED_OUT = "timed_out"
    FAILED = "failed"


#: Error code of each outcome (``COMPLETED`` maps to ``workspace.shell_exit`` only when the
#: status is not 0).
ERROR_CODES: dict[ShellOutcome, str] = {
    ShellOutcome.COMPLETED: "workspace.shell_exit",
    ShellOutcome.CANCELLED: "workspace.shell_cancelled",
    ShellOutcome.TIMED_OUT: "workspace.shell_timeout",
    ShellOutcome.FAILED: "workspace.shell_failed",
}

#: The outcome each error code stands for (a stored result's ``errorCode`` tells it).
OUTCOMES: dict[str, ShellOutcome] = {code: outcome for outcome, code in ERROR_CODES.items()}

OUTPUT_TRUNCATED = "Output truncated."


def status_line(outcome: ShellOutcome, exit_code: int | None) -> str:
    """``Exit code: N``, ``Command cancelled.``, ``Command timed out.`` or ``""`` (failure)."""
    if outcome is ShellOutcome.COMPLETED:
        return f"Exit code: {exit_code}"
    if outcome is ShellOutcome.CANCELLED:
        return "Command cancelled."
    if outcome is ShellOutcome.TIMED_OUT:
        return "Command timed out."
    return ""


def format_content(outcome: ShellOutcome, exit_code: int | None, stdout: str, stderr: str,
                   truncated: bool) -> str:
    """The model-facing content: status line, stdout, stderr, truncation note.

    Parts are joined with one newline and empty parts are left out. stderr is preceded by a
    ``stderr:`` line only when stdout is non-empty (an upstream quirk kept on purpose).
    Upstream detail unknown for trailing newlines: tavernlab removes one trailing newline
    from each stream before joining.
    """
    out = stdout[:-1] if stdout.endswith("\n") else stdout
    err = stderr[:-1] if stderr.endswith("\n") else stderr
    status = status_line(outcome, exit_code)
    parts = [status] if status else []
    if out:
        parts.append(out)
    if err:
        if out:
            parts.append("stderr:")
        parts.append(err)
    if truncated:
        parts.append(OUTPUT_TRUNCATED)
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class ShellResult:
    """The full outcome of one ``workspace.shell`` call.

    ``exit_code`` is ``None`` unless the interpreter completed; ``stdout`` and ``stderr`` are
    the captured streams (each at most 128 KiB; ``output_truncated`` says a cap was hit);
    ``resource_refs`` are the workspace paths the call created, changed or removed (sorted).
    :meth:`to_tool_result` builds what the model receives and what is stored;
    :attr:`tool_result` is that result as the run dispatched it (with its call id), when the
    shell result was recovered with :meth:`from_tool_result`.
    """

    outcome: ShellOutcome
    exit_code: int | None
    stdout: str
    stderr: str
    output_truncated: bool
    resource_refs: list[str] = field(default_factory=list)
    tool_result: ToolResult | None = field(default=None, repr=False)

    @property
    def is_error(self) -> bool:
        """Every outcome except a completed call with status 0 is an error result."""
        return not (self.outcome is ShellOutcome.COMPLETED and self.exit_code == 0)

    @property
    def error_code(self) -> str | None:
        """``workspace.shell_exit``/``_cancelled``/``_timeout``/``_failed``, or ``None``."""
        return ERROR_CODES[self.outcome] if self.is_error else None

    @property
    def content(self) -> str:
        """The formatted content (docs/shell.md, "Outcomes")."""
        return format_content(self.outcome, self.exit_code, self.stdout, self.stderr,
                              self.output_truncated)

    @property
    def structured(self) -> dict[str, Any]:
        """``{"exitCode": <int or null>, "outputTruncated": <bool>}``."""
        return {"exitCode": self.exit_code, "outputTruncated": self.output_truncated}

    def to_tool_result(self) -> ShellToolResult:
        """The tool result (error results keep the formatted output as content)."""
        is_error = self.is_error
        return ShellToolResult(
            content=self.content,
            structured={"exitCode": self.exit_code, "outputTruncated": self.output_truncated},
            is_error=is_error,
            error_code=ERROR_CODES[self.outcome] if is_error else None,
            resource_refs=list(self.resource_refs),
            shell=self,
        )

    @classmethod
    def from_tool_result(cls, result: ToolResult) -> ShellResult:
        """The shell result behind a ``workspace.shell`` tool result (``tool_result`` set).

        Results produced in this process carry it (:class:`ShellToolResult`: the shell's
        own result, as the call built it, and the refusal of a bad ``workdir``). Any other
        result - one read back from ``tool-results/`` - is rebuilt from what it stored: the
        error code gives the outcome (no error code: completed) and ``structured`` the exit
        status and truncation; for an outcome with a status line the text after that line
        becomes ``stdout`` (stored results do not keep the two streams apart), and a failure
        (which has none), or an error code that is not the shell's, keeps the whole content
        as ``stderr``.
        """
        if isinstance(result, ShellToolResult) and result.shell is not None:
            return replace(result.shell, tool_result=result)
        structured = result.structured if isinstance(result.structured, dict) else {}
        outcome = (OUTCOMES.get(result.error_code or "", ShellOutcome.FAILED)
                   if result.is_error else ShellOutcome.COMPLETED)
        if outcome is ShellOutcome.FAILED:
            return cls(ShellOutcome.FAILED, None, "", result.content, False,
                       list(result.resource_refs), result)
        exit_code = structured.get("exitCode")
        return cls(outcome, exit_code if outcome is ShellOutcome.COMPLETED
                   and isinstance(exit_code, int) else None,
                   result.content.partition("\n")[2], "",
                   bool(structured.get("outputTruncated")), list(result.resource_refs), result)

    @classmethod
    def refused(cls, error: ToolError) -> ShellToolResult:
        """The tool result of a call the shell refused before running anything (a bad
        ``workdir``): stored like any refusal (content = the message, ``structured`` =
        ``{error: {code, message}}``), carrying the failed shell result whose ``stderr`` is
        the message."""
        plain = ToolResult.from_error(error)
        return ShellToolResult(
            content=plain.content, structured=plain.structured, is_error=True,
            error_code=plain.error_code, resource_refs=plain.resource_refs,
            shell=cls(ShellOutcome.FAILED, None, "", plain.content, False,
                      list(plain.resource_refs)))


@dataclass(slots=True)
class ShellToolResult(ToolResult):
    """A :class:`ToolResult` that also carries its :class:`ShellResult` (not stored)."""

    shell: ShellResult | None = field(default=None, repr=False)
