"""``tavernlab shell RUN_ID 'command' [--workdir DIR] [--lab DIR] [--json]``.

Runs one ``workspace.shell`` call on a run of a lab as the main agent, exactly as the host
would (events and stored result included). The command's stdout goes to stdout and its stderr
to stderr; the exit status is the command's own status, or 124 when it timed out, 130 when it
was cancelled and 1 when the interpreter failed (the status line is printed on stderr then).
``--json`` prints the stored tool result instead.
"""

from __future__ import annotations

import argparse
import sys

from tavernlab.cli._common import add_lab_argument, open_lab, print_json
from tavernlab.shell import OUTPUT_TRUNCATED, ShellOutcome, status_line

#: Exit statuses for outcomes without one of their own (the usual shell conventions).
OUTCOME_STATUS = {ShellOutcome.TIMED_OUT: 124, ShellOutcome.CANCELLED: 130,
                  ShellOutcome.FAILED: 1}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tavernlab shell``."""
    parser = subparsers.add_parser(
        "shell", help="run a workspace.shell call on a run",
        description="Run COMMAND with workspace.shell on RUN_ID as the main agent (a fresh "
        "in-process bash over the run's workspace; events and the stored result are written "
        "as for a model call). Exit status: the command's status; 124 timed out, 130 "
        "cancelled, 1 interpreter failure or refused call.")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("shell_command", metavar="COMMAND", help="bash command text")
    parser.add_argument("--workdir", default="/", metavar="DIR",
                        help="start directory in shell form (default: /)")
    parser.add_argument("--json", action="store_true", help="print the stored result JSON")
    add_lab_argument(parser)
    parser.set_defaults(func=_shell)


def _shell(args: argparse.Namespace) -> int:
    run = open_lab(args).open_run(args.run_id)
    result = run.shell(args.shell_command, workdir=args.workdir)
    if args.json:
        stored = result.tool_result.to_json() if result.tool_result else {}
        print_json(stored)
    else:
        sys.stdout.write(result.stdout)
        sys.stdout.flush()
        if result.stderr:
            sys.stderr.write(result.stderr if result.stderr.endswith("\n")
                             else result.stderr + "\n")
        line = status_line(result.outcome, result.exit_code)
        if result.outcome is not ShellOutcome.COMPLETED and line:
            print(line, file=sys.stderr)
        if result.output_truncated:
            print(OUTPUT_TRUNCATED, file=sys.stderr)
    if result.outcome is ShellOutcome.COMPLETED and result.exit_code is not None:
        return result.exit_code
    return OUTCOME_STATUS[result.outcome]
