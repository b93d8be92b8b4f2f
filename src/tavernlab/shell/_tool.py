"""The ``workspace.shell`` tool (model alias ``workspace_shell``).

Arguments ``command`` (string, raw, at most 128 KiB) and ``workdir`` (string, default ``/``);
unknown keys, a missing ``command`` and wrong types fail with ``tool.invalid_arguments``. The
handler runs :func:`~tavernlab.shell.execute_shell` over the calling agent's scoped
view with the run's frozen context, the call's cancel token and the run's shell deadline, and
returns the shell's tool result (a :class:`~tavernlab.shell.ShellToolResult`, so
``ShellResult.from_tool_result`` recovers stdout and stderr). A bad ``workdir`` is refused
the same way: its stored result is the refusal's, and the shell result it carries is a
failure whose stderr is the message (nothing is ever parsed back from the formatted text).
"""

from __future__ import annotations

from collections.abc import Callable

from tavernlab.clock import is_deterministic, seed_from
from tavernlab.errors import ToolError
from tavernlab.js import DEFAULT_DEADLINE_S
from tavernlab.shell._resources import ShellOptions, ShellResources
from tavernlab.shell._result import ERROR_CODES, ShellOutcome, ShellResult
from tavernlab.workspace.tools import (
    Arguments,
    ToolContext,
    ToolResult,
    ToolSpec,
    object_schema,
    string_property,
)

TOOL_ID = "workspace.shell"

#: The description shown to the model (docs/shell.md; tavernlab's own wording).
DESCRIPTION = f"""\
Run a bash command in a sandboxed, in-process shell over the workspace.
Paths: / is the workspace root (/output/main.md is output/main.md).
Only visible roots exist; read-only roots (tool-results, skills) reject writes.
Each call starts a fresh shell; files persist, shell variables do not.
Useful commands: ls, find, cat, grep, sed, awk, jq, mkdir, cp, mv, rm,
python3 (a subset), js/node/deno (QuickJS, see js --help).
Limits: {DEFAULT_DEADLINE_S:.0f} s per call, 128 KiB command, 128 KiB of stdout and of stderr.
Shell edits create no read records: read a file again before rewriting or
patching it with the text tools."""

ARGUMENT_NAMES = ("command", "workdir")

#: The refusal of a bad ``workdir`` (the shell's own failure code).
SHELL_FAILED = ERROR_CODES[ShellOutcome.FAILED]

#: Upstream's base description of the shell, what a model is shown (before the Profile's
#: context appends its ``Prefer …`` sentence); :data:`DESCRIPTION` is the longer guide.
BASE_DESCRIPTION = (
    "Run workspace commands for scripts, pipelines, data processing, batch changes, and "
    "copying, moving or deleting files. Includes jq, a Python subset (python/python3), and "
    "JavaScript (js). Use js --help for JavaScript syntax and workspace APIs. Completed file "
    "changes persist after failure or cancellation.")


def shell_tools(resources: ShellResources | Callable[[], ShellResources] | None = None
                ) -> tuple[ToolSpec, ...]:
    """The shell tool, running its calls with ``resources`` (the worker pool of its ``js``
    builtins and the main-thread helper; default: the process-wide ones). ``resources`` may
    be a function that gives them, asked at each call: a lab offers the shell without making
    its worker pool until a shell call runs."""

    def shell_tool(ctx: ToolContext, args: Arguments) -> ToolResult:
        """Handle one ``workspace.shell`` call (the interpreter is loaded on the first)."""
        from tavernlab.shell import _execute

        command = args.string("command", required=True) or ""
        workdir = args.string("workdir", default="/") or "/"
        clock = ctx.clock
        output = ctx.output
        if is_deterministic(clock):
            options = ShellOptions(clock=clock, seed=seed_from(ctx.ids), on_output=output)
        elif output is not None:
            options = ShellOptions(on_output=output)
        else:
            options = _execute.DEFAULT_OPTIONS
        chosen = (resources() if callable(resources)
                  else resources or _execute.DEFAULT_RESOURCES)
        try:
            result = _execute.execute_shell(ctx.scope, ctx.frozen, command, workdir,
                                            deadline_s=ctx.shell_deadline_s, token=ctx.token,
                                            resources=chosen, options=options)
        except ToolError as error:
            if error.code != SHELL_FAILED:  # the host's refusals (invalid arguments)
                raise
            return ShellResult.refused(error)  # a bad workdir: a failed shell, as built
        return result.to_tool_result()

    return (ToolSpec(TOOL_ID, shell_tool, True, BASE_DESCRIPTION, ARGUMENT_NAMES,
                     title="Workspace Shell", input_schema=object_schema({
                         "command": string_property("Commands to execute in a new shell "
                                                    "session."),
                         "workdir": string_property("Working directory in the workspace. "
                                                    "Defaults to /."),
                     }, ["command"]), annotations={"mutating": True}),)
