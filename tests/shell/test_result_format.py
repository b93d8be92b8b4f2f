"""The content and tool result of a shell result, against the former way of building them
(every part joined, empty ones left out; the tool result from the result's properties)."""

from __future__ import annotations

import itertools

from tavernlab.shell import ShellOutcome, ShellResult
from tavernlab.shell._result import OUTPUT_TRUNCATED, format_content, status_line


def former_content(outcome: ShellOutcome, exit_code: int | None, stdout: str, stderr: str,
                   truncated: bool) -> str:
    """The content as it was built: every part, then the empty ones left out."""
    out = stdout[:-1] if stdout.endswith("\n") else stdout
    err = stderr[:-1] if stderr.endswith("\n") else stderr
    parts = [status_line(outcome, exit_code), out]
    if err:
        if out:
            parts.append("stderr:")
        parts.append(err)
    if truncated:
        parts.append(OUTPUT_TRUNCATED)
    return "\n".join(part for part in parts if part)


STREAMS = ["", "\n", "\n\n", "hi", "hi\n", "hi\n\n", "a\nb", " \n", "stderr:\n"]
STATUSES = [(ShellOutcome.COMPLETED, 0), (ShellOutcome.COMPLETED, 3),
            (ShellOutcome.CANCELLED, None), (ShellOutcome.TIMED_OUT, None),
            (ShellOutcome.FAILED, None)]


def test_the_content_is_the_former_content_for_every_combination() -> None:
    for (outcome, code), out, err, truncated in itertools.product(
            STATUSES, STREAMS, STREAMS, (False, True)):
        assert format_content(outcome, code, out, err, truncated) == former_content(
            outcome, code, out, err, truncated), (outcome, code, out, err, truncated)


def test_the_tool_result_is_built_from_the_results_own_properties() -> None:
    for (outcome, code), out, truncated in itertools.product(STATUSES, STREAMS[:5],
                                                             (False, True)):
        result = ShellResult(outcome, code, out, "oops\n", truncated, ["scratch/a.txt"])
        tool = result.to_tool_result()
        assert (tool.content, tool.structured, tool.is_error, tool.error_code,
                tool.resource_refs, tool.call_id, tool.tool_id) == (
            result.content, result.structured, result.is_error, result.error_code,
            result.resource_refs, None, None)
        assert tool.shell is result and tool.resource_refs is not result.resource_refs
        assert tool.to_json() == {"callId": None, "toolId": None, "content": result.content,
                                  "structured": {"exitCode": code,
                                                 "outputTruncated": truncated},
                                  "isError": result.is_error, "errorCode": result.error_code,
                                  "resourceRefs": ["scratch/a.txt"]}
