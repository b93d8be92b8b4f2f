"""The ``worktree-agent`` flags and approval rules, written once for every surface.

:data:`FLAGS` lists each flag with the workflow input key it fills. The command line
(``worktree-agent run …``) reads its words with :func:`parse_args`, upstream's hand parser
with upstream's messages; the notebook's ``%worktree agent`` declares the same flags on its own
argument parser with :func:`add_arguments` (for ``-h`` and completion). Both turn what they read
into the workflow input with :func:`build_input`, which checks ``--write-file`` values and the
required flags the same way for both. :func:`make_approve` is the approval step of both:
``--yes`` approves and says so on stderr, a surface that cannot ask a human approves nothing
and says the worktree stays, otherwise the question is asked and ``y``/``yes`` (any case)
approves.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

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

_WRITE_FILE_SHAPE = ('--write-file requires {"path": string, "content": string, '
                     '"mode"?: "create"|"append"}: ')


@dataclass(frozen=True)
class AgentFlag:
    """One flag: its spelling, the key it fills, how it is read, and its help.

    ``value`` takes one value (the last one given wins), ``list`` one value each time it is
    given, ``switch`` none."""

    flag: str
    key: str
    kind: Literal["value", "list", "switch"]
    metavar: str
    help: str


FLAGS: tuple[AgentFlag, ...] = (
    AgentFlag("--repo", "repoRoot", "value", "PATH", "the git repository root"),
    AgentFlag("--slug", "slug", "value", "ID", "worktree/branch identifier, e.g. fix-flaky-test"),
    AgentFlag("--task", "task", "value", "PROMPT", "the prompt sent to the coding agent"),
    AgentFlag("--gate", "gateCmd", "value", "CMD",
              "command run inside the worktree to check the agent's work"),
    AgentFlag("--base", "base", "value", "REF", "ref to cut the worktree branch from"),
    AgentFlag("--adapter", "adapter", "value", "SLUG", "agent adapter (default claude-code)"),
    AgentFlag("--deps-cmd", "depsCmd", "value", "CMD", "command to install deps in the worktree"),
    AgentFlag("--copy-glob", "copyGlobs", "list", "GLOB",
              "gitignored glob to copy into the worktree (repeatable)"),
    AgentFlag("--link", "linkPaths", "list", "PATH",
              "path to symlink into the worktree instead of copying (repeatable)"),
    AgentFlag("--write-file", "writeFiles", "list", "JSON",
              'file to write into the worktree: {"path", "content", "mode"?} (repeatable)'),
    AgentFlag("--no-cleanup", "noCleanup", "switch", "",
              "keep the worktree's branch after cleanup (still removes the worktree dir)"),
    AgentFlag("--yes", "yes", "switch", "", "approve the cleanup without asking"),
)
_BY_FLAG = {flag.flag: flag for flag in FLAGS}
_REQUIRED = ("--repo", "--slug", "--task", "--gate")


class CliUsageError(Exception):
    """A malformed ``worktree-agent`` command line; the message includes the usage when the
    mistake is about the flags themselves. ``reason`` is the first part alone."""

    def __init__(self, reason: str, *, with_usage: bool = True) -> None:
        super().__init__(f"{reason}\n\n{USAGE}" if with_usage else reason)
        self.reason = reason


@dataclass(frozen=True)
class ParsedCli:
    """The workflow input and the CLI-only ``--yes``."""

    input: dict[str, Any]
    yes: bool


def parse_args(argv: Sequence[str]) -> ParsedCli:
    """``worktree-agent run <flags>`` → the workflow input (optional keys only when given;
    ``deleteBranch`` always) and ``yes``."""
    if not argv or argv[0] != "run":
        if argv and argv[0]:
            raise CliUsageError(f"unknown command '{argv[0]}'")
        raise CliUsageError(USAGE, with_usage=False)
    rest = list(argv[1:])
    raw: dict[str, Any] = {}
    i = 0
    while i < len(rest):
        spec = _BY_FLAG.get(rest[i])
        if spec is None:
            raise CliUsageError(f"unrecognized flag '{rest[i]}'")
        if spec.kind == "switch":
            raw[spec.key] = True
        else:
            i += 1
            if i >= len(rest):
                raise CliUsageError(f"flag '{spec.flag}' requires a value")
            if spec.key == "writeFiles":
                write_file(rest[i])  # a bad value is reported before any later flag
            if spec.kind == "list":
                raw.setdefault(spec.key, []).append(rest[i])
            else:
                raw[spec.key] = rest[i]
        i += 1
    return build_input(raw)


def build_input(raw: Mapping[str, Any], *, default_repo: str | None = None) -> ParsedCli:
    """The workflow input from flag values keyed by :data:`FLAGS`' keys (absent, ``None``,
    ``False`` or empty means not given; ``writeFiles`` as the JSON texts given).

    ``default_repo`` stands in for a missing ``--repo`` (the notebook's repository); the
    command line has none, so ``--repo`` is required there."""
    write_files = [write_file(text) for text in raw.get("writeFiles") or []]
    values = dict(raw)
    if default_repo is not None and not values.get("repoRoot"):
        values["repoRoot"] = default_repo
    missing = [flag for flag in _REQUIRED if not values.get(_BY_FLAG[flag].key)]
    if missing:
        raise CliUsageError(f"missing required flag(s): {', '.join(missing)}")
    inputs: dict[str, Any] = {
        "repoRoot": os.path.abspath(values["repoRoot"]), "slug": values["slug"],
        "task": values["task"], "gateCmd": values["gateCmd"],
        "deleteBranch": not values.get("noCleanup")}
    for key in ("base", "adapter", "depsCmd"):
        if values.get(key) is not None:
            inputs[key] = values[key]
    for key in ("copyGlobs", "linkPaths"):
        if values.get(key):
            inputs[key] = list(values[key])
    if write_files:
        inputs["writeFiles"] = write_files
    return ParsedCli(inputs, bool(values.get("yes")))


def write_file(raw: str) -> dict[str, Any]:
    """One ``--write-file`` value: ``{"path", "content", "mode"?}`` as JSON, else a
    :class:`CliUsageError` (without the usage) quoting it."""
    try:
        value = json.loads(raw)
    except ValueError:
        raise CliUsageError(f"--write-file value is not valid JSON: {raw}",
                            with_usage=False) from None
    if not (isinstance(value, dict) and isinstance(value.get("path"), str)
            and isinstance(value.get("content"), str)
            and value.get("mode", "create") in ("create", "append")
            and set(value) <= {"path", "content", "mode"}):
        raise CliUsageError(_WRITE_FILE_SHAPE + raw, with_usage=False)
    return value


def add_arguments(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Declare :data:`FLAGS` on ``parser`` (each ``dest`` is the flag's key, nothing is
    required there: :func:`build_input` checks); returns the actions by flag."""
    actions: dict[str, argparse.Action] = {}
    for spec in FLAGS:
        if spec.kind == "switch":
            actions[spec.flag] = parser.add_argument(spec.flag, dest=spec.key,
                                                     action="store_true", help=spec.help)
        else:
            actions[spec.flag] = parser.add_argument(
                spec.flag, dest=spec.key, metavar=spec.metavar, help=spec.help,
                action="append" if spec.kind == "list" else "store")
    return actions


class CannotAsk(Exception):
    """The surface has no way to ask a human (no terminal, a kernel without stdin)."""


def make_approve(yes: bool, *, tty: Callable[[], bool], ask: Callable[[str], str],
                 unattended: str = "no TTY attached") -> Callable[[str], bool]:
    """The workflow's approval step: ``--yes`` approves (saying so on stderr); without a way
    to ask (``tty()`` false, or ``ask`` raising :class:`CannotAsk`) nothing is approved and
    stderr says ``<prompt> — <unattended>, not approving (worktree left in place)``;
    otherwise ``ask("<prompt> [y/N] ")`` and ``y`` or ``yes`` (any case) approves."""
    def refuse(prompt: str) -> bool:
        sys.stderr.write(f"{prompt} — {unattended}, not approving (worktree left in place)\n")
        return False

    def approve(prompt: str) -> bool:
        if yes:
            sys.stderr.write(f"{prompt} — auto-approved (--yes)\n")
            return True
        if not tty():
            return refuse(prompt)
        try:
            answer = ask(f"{prompt} [y/N] ")
        except CannotAsk:
            return refuse(prompt)
        return answer.strip().lower() in ("y", "yes")

    return approve
