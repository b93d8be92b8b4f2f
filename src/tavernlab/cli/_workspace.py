"""Workspace sub-commands: ``runs``, ``events``, ``tool``, ``retention``, ``sessions``.

They act on a lab directory (``--lab``, ``$TAVERNLAB_LAB`` or ``./.tavernlab``; ``--demo``:
``./tavernlab-demo/lab``):
list runs, show a run's events, execute one model tool call on a run the way the host
would, plan or apply retention, and manage sessions.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any

from tavernlab.cli._common import add_lab_argument, open_lab, print_json
from tavernlab.errors import InvalidData
from tavernlab.events import Event
from tavernlab.views import render_events, render_tool_call
from tavernlab.workspace.tools import ToolResult


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the workspace sub-commands."""
    runs = subparsers.add_parser("runs", help="list the runs of a lab, newest first",
                                 description="List every indexed run (chat and session).")
    add_lab_argument(runs)
    runs.add_argument("--json", action="store_true", help="print run.json records as JSON")
    runs.set_defaults(func=_runs)

    events = subparsers.add_parser(
        "events", help="print a run's events and journal",
        description="Print events.jsonl of RUN_ID merged with its journal (js jobs, round ends, "
        "sub-agents, file changes), one record per line; --follow keeps printing what this "
        "or another process appends until the run ends.")
    events.add_argument("run_id", metavar="RUN_ID")
    events.add_argument("--type", action="append", metavar="TYPE",
                        help="only records of this type (repeatable)")
    events.add_argument("--json", action="store_true", help="print the records as JSON lines")
    events.add_argument("--no-journal", action="store_true",
                        help="events.jsonl only (upstream's log)")
    events.add_argument("--follow", action="store_true",
                        help="keep printing new records until the run ends")
    events.add_argument("--timeout", type=float, metavar="S",
                        help="with --follow: stop after S seconds with nothing new")
    add_lab_argument(events)
    events.set_defaults(func=_events)

    tool = subparsers.add_parser(
        "tool", help="execute one model tool call on a run",
        description="Execute TOOL_ID with ARGS (a JSON object) on RUN_ID as the main agent, "
        "exactly as the host would (events and stored result included). Exit status 0 for a "
        "successful result; an error result prints `error: <code>: <message>` on stderr "
        "and exits 1 (it is still recorded in the run).")
    tool.add_argument("run_id", metavar="RUN_ID")
    tool.add_argument("tool_id", metavar="TOOL_ID", help="for example workspace.read_file")
    tool.add_argument("args", metavar="ARGS", nargs="?", default="{}",
                      help='JSON object, for example \'{"path": "output/main.md"}\'')
    tool.add_argument("--json", action="store_true", help="print the stored result JSON")
    add_lab_argument(tool)
    tool.set_defaults(func=_tool)

    retention = subparsers.add_parser("retention", help="plan or apply run retention",
                                      description="Dry-run (plan) or apply run pruning.")
    retention.add_argument("action", choices=("plan", "apply"))
    retention.add_argument("--keep-full", type=int, help="keepFullRecentRuns for this call")
    retention.add_argument("--keep-recent", type=int,
                           help="keepRecentTerminalRuns for this call")
    add_lab_argument(retention)
    retention.set_defaults(func=_retention)

    sessions = subparsers.add_parser("sessions", help="list or create agent sessions",
                                     description="List sessions, or create one with --new.")
    sessions.add_argument("--new", metavar="TITLE", help="create a session with this title")
    add_lab_argument(sessions)
    sessions.set_defaults(func=_sessions)


def _runs(args: argparse.Namespace) -> int:
    lab = open_lab(args)
    records = lab.runs()
    if args.json:
        print_json([r.model_dump(mode="json", by_alias=True) for r in records])
        return 0
    if not records:
        print("no runs")
    shown = lab.shown_statuses(records)  # a run a dead process left shows as interrupted
    for record in records:
        target = record.target
        where = (f"chat {target.stable_chat_id}" if target.kind == "chat"
                 else f"session {target.session_id}")
        print(f"{record.id}  {shown[record.id]:<14} {record.presentation:<10} {where}  "
              f"{record.created_at:%Y-%m-%d %H:%M:%S}")
    return 0


def _events(args: argparse.Namespace) -> int:
    lab = open_lab(args)
    wanted = set(args.type) if args.type else None
    records: Iterable[Event]
    if args.follow:
        records = lab.follow(args.run_id, timeout=args.timeout)
    else:
        records = lab.open_run(args.run_id).events(journal=not args.no_journal)
    for record in records:
        if (wanted is not None and record.type not in wanted) or (
                args.no_journal and record.source == "journal"):
            continue
        if args.json:
            print(json.dumps(record.model_dump(mode="json", by_alias=True), ensure_ascii=False),
                  flush=True)
        else:
            print(render_events([record]), flush=True)
    return 0


def _tool(args: argparse.Namespace) -> int:
    try:
        arguments: Any = json.loads(args.args)
    except ValueError as exc:
        raise InvalidData(f"ARGS is not JSON: {exc}") from None
    except RecursionError:
        raise InvalidData("ARGS is not JSON this tool can take: it is nested too deeply"
                          ) from None
    run = open_lab(args).open_run(args.run_id)
    result = run.call_tool(args.tool_id, arguments)
    if args.json:
        print_json(result.to_json())
    if result.is_error:
        print(f"error: {result.error_code}: {error_message(result)}", file=sys.stderr)
        return 1
    if not args.json:
        print(render_tool_call(args.tool_id, arguments if isinstance(arguments, dict) else {},
                               result))
    return 0


def error_message(result: ToolResult) -> str:
    """The one-line message of an error result (its structured error message, else the first
    line of its content)."""
    structured = result.structured
    if isinstance(structured, dict) and isinstance(structured.get("error"), dict):
        message = structured["error"].get("message")
        if isinstance(message, str):
            return message
    return result.content.split("\n", 1)[0]


def _retention(args: argparse.Namespace) -> int:
    lab = open_lab(args)
    settings = lab.retention.read_settings().model_dump(by_alias=True)
    if args.keep_full is not None:
        settings["keepFullRecentRuns"] = args.keep_full
    if args.keep_recent is not None:
        settings["keepRecentTerminalRuns"] = args.keep_recent
    if args.action == "plan":
        plan = lab.retention.plan(settings)
        print_json(plan.model_dump(mode="json", by_alias=True))
    else:
        result = lab.retention.apply(settings)
        print_json(result.model_dump(mode="json", by_alias=True))
    return 0


def _sessions(args: argparse.Namespace) -> int:
    lab = open_lab(args)
    if args.new is not None:
        session = lab.sessions.create(args.new)
        print(session.id)
        return 0
    for session in lab.sessions.list():
        record = session.record
        print(f"{session.id}  {record.title!r}  runs={len(session.run_ids())}")
    return 0


