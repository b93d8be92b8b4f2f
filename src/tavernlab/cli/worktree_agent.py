"""``worktree-agent run`` — the ``worktree-agent`` workflow from a terminal.

Provision a git worktree, run a coding agent in it as a daemon session (``agent_start`` on the
agentproto daemon's MCP endpoint: ``AGENTPROTO_MCP_URL``, else
``http://127.0.0.1:18790/mcp``), gate the result, ask a human to approve the cleanup, then
clean up (or leave the worktree in place when the gate fails or the cleanup is rejected). The
output ``{cwd, branch, gate, cleanup}`` is printed as JSON indented by two spaces.

Usage errors print one message (with the usage) on stderr and exit 1. Approval: ``--yes``
approves without asking (and says so on stderr); without a terminal (``/dev/tty`` cannot be
opened) nothing is approved and the worktree stays; otherwise the question is asked on
``/dev/tty`` (not on stdin/stdout, which may carry the workflow's own output) and ``y`` or
``yes`` (any case) approves.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

USAGE = """usage: worktree-agent run --repo <abs repo root> --slug <id> --task "<prompt>" --gate "<check cmd>"
  [--base <ref>] [--adapter <slug>] [--deps-cmd "<cmd>"] [--copy-glob <glob>]...
  [--link <path>]... [--write-file <json>]... [--no-cleanup] [--yes]

  --repo        Absolute (or cwd-relative) path to the git repository root.
  --slug        Worktree/branch identifier, e.g. 'fix-flaky-test'.
  --task        The prompt sent to the coding agent.
  --gate        Command run inside the worktree to check the agent's work.
  --base        Ref to cut the worktree branch from. Default 'origin/main'.
  --adapter     Agent adapter slug. Default 'claude-code'.
  --deps-cmd    Command to install deps inside the worktree.
  --copy-glob   Gitignored glob to copy into the worktree (repeatable).
  --link        Path to symlink into the worktree instead of copying (repeatable).
  --write-file  JSON {"path", "content", "mode"?} of a file to write into the worktree
                (repeatable; mode "create" or "append").
  --no-cleanup  Keep the worktree's branch after cleanup (still removes the worktree dir).
  --yes         Auto-approve the cleanup step instead of prompting.
"""  # noqa: E501

_VALUE_FLAGS = {"--repo": "repoRoot", "--slug": "slug", "--task": "task", "--gate": "gateCmd",
                "--base": "base", "--adapter": "adapter", "--deps-cmd": "depsCmd"}
_REQUIRED = (("--repo", "repoRoot"), ("--slug", "slug"), ("--task", "task"),
             ("--gate", "gateCmd"))
_WRITE_FILE_SHAPE = ('--write-file requires {"path": string, "content": string, '
                     '"mode"?: "create"|"append"}: ')


class CliUsageError(Exception):
    """A malformed ``worktree-agent`` command line; the message includes the usage."""


@dataclass(frozen=True)
class ParsedCli:
    """The workflow input and the CLI-only ``--yes``."""

    input: dict[str, Any]
    yes: bool


def parse_args(argv: Sequence[str]) -> ParsedCli:
    """``worktree-agent run <flags>`` → the workflow input (optional keys only when given;
    ``deleteBranch`` always) and ``yes``."""
    if not argv or argv[0] != "run":
        raise CliUsageError(f"unknown command '{argv[0]}'\n\n{USAGE}" if argv and argv[0]
                            else USAGE)
    rest = list(argv[1:])
    values: dict[str, str] = {}
    copy_globs: list[str] = []
    links: list[str] = []
    write_files: list[dict[str, Any]] = []
    delete_branch, yes = True, False

    def value_of(flag: str, index: int) -> str:
        if index >= len(rest):
            raise CliUsageError(f"flag '{flag}' requires a value\n\n{USAGE}")
        return rest[index]

    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg in _VALUE_FLAGS:
            i += 1
            values[_VALUE_FLAGS[arg]] = value_of(arg, i)
        elif arg == "--copy-glob":
            i += 1
            copy_globs.append(value_of(arg, i))
        elif arg == "--link":
            i += 1
            links.append(value_of(arg, i))
        elif arg == "--write-file":
            i += 1
            write_files.append(_write_file(value_of(arg, i)))
        elif arg == "--no-cleanup":
            delete_branch = False
        elif arg == "--yes":
            yes = True
        else:
            raise CliUsageError(f"unrecognized flag '{arg}'\n\n{USAGE}")
        i += 1
    missing = [flag for flag, key in _REQUIRED if not values.get(key)]
    if missing:
        raise CliUsageError(f"missing required flag(s): {', '.join(missing)}\n\n{USAGE}")
    inputs: dict[str, Any] = {
        "repoRoot": os.path.abspath(values["repoRoot"]), "slug": values["slug"],
        "task": values["task"], "gateCmd": values["gateCmd"], "deleteBranch": delete_branch}
    for key in ("base", "adapter", "depsCmd"):
        if key in values:
            inputs[key] = values[key]
    if copy_globs:
        inputs["copyGlobs"] = copy_globs
    if links:
        inputs["linkPaths"] = links
    if write_files:
        inputs["writeFiles"] = write_files
    return ParsedCli(inputs, yes)


def _write_file(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        raise CliUsageError(f"--write-file value is not valid JSON: {raw}") from None
    if not (isinstance(value, dict) and isinstance(value.get("path"), str)
            and isinstance(value.get("content"), str)
            and value.get("mode", "create") in ("create", "append")
            and set(value) <= {"path", "content", "mode"}):
        raise CliUsageError(_WRITE_FILE_SHAPE + raw)
    return value


def has_tty() -> bool:
    """Whether ``/dev/tty`` can be opened for reading and writing (a terminal is attached)."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def ask_tty(prompt: str) -> str:
    """Ask ``prompt`` on ``/dev/tty`` and return the answer line."""
    with open("/dev/tty", "r+", encoding="utf-8") as tty:
        tty.write(prompt)
        tty.flush()
        return tty.readline()


def make_approve(yes: bool, *, tty: Callable[[], bool] = has_tty,
                 ask: Callable[[str], str] = ask_tty) -> Callable[[str], bool]:
    """The workflow's approval step (see the module doc)."""
    def approve(prompt: str) -> bool:
        if yes:
            sys.stderr.write(f"{prompt} — auto-approved (--yes)\n")
            return True
        if not tty():
            sys.stderr.write(
                f"{prompt} — no TTY attached, not approving (worktree left in place)\n")
            return False
        answer = ask(f"{prompt} [y/N] ")
        return answer.strip().lower() in ("y", "yes")

    return approve


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``worktree-agent``; returns the exit status (0, or 1 for any failure)."""
    try:
        parsed = parse_args(sys.argv[1:] if argv is None else argv)
    except CliUsageError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    try:
        from tavernlab.worktree.daemon import DaemonAgentHost
        from tavernlab.worktree.workflow import run_worktree_agent

        with DaemonAgentHost.connect() as host:
            output = run_worktree_agent(parsed.input, host, make_approve(parsed.yes))
        sys.stdout.write(json.dumps(output, indent=2) + "\n")
        return 0
    except Exception:  # upstream prints the stack of any other error and exits 1
        sys.stderr.write(traceback.format_exc())
        return 1


if __name__ == "__main__":  # pragma: no cover - `python -m tavernlab.cli.worktree_agent`
    sys.exit(main())
