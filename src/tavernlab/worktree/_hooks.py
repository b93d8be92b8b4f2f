"""Lifecycle hooks from the committed ``agentproto.json`` (docs/worktrees.md).

Setup hooks run in order through the shell in the worktree; a failure raises
:class:`HookError` with a filtered tail of the output. Teardown hooks never raise. Every run
can be appended to a log file, so a long install's full output survives the error message.
The log is best effort and never blocks: only a regular file (or a missing one, created) is
written, opened non-blocking, so a FIFO or a device given as the log path is skipped.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tavernlab.cancel import CancelToken
from tavernlab.worktree._environment import (
    HookContext,
    hook_environment,
    non_interactive_defaults,
    turbo_cache_dir,
)
from tavernlab.worktree._errors import HookError, ProvisionCancelledError
from tavernlab.worktree._process import LineObserver, RunResult, run_shell

#: Lines of hook output kept in a HookError message.
TAIL_LINES = 60

_NOISE = (
    re.compile(r"Failed to replace env in config: \$\{NODE_AUTH_TOKEN\}"),
    re.compile(r'^\s*WARN\s+Issue while reading ".*\.npmrc"\.?\s*$'),
)


@dataclass(frozen=True)
class HookRun:
    """One executed hook command and its result."""

    command: str
    result: RunResult

    def to_json(self) -> dict[str, Any]:
        """``{command, result: {exitCode, stdout, stderr}}``."""
        return {"command": self.command, "result": self.result.to_json()}


def hook_error_message(phase: str, run: HookRun, log_path: str | None) -> str:
    """Line 1 names the command; then the last 60 meaningful output lines; then the log.

    Each stream's final newline is dropped before joining, so a trailing newline does not
    count as one of the 60 lines (upstream detail unknown; tavernlab's choice).
    """
    streams = [text.rstrip("\n") for text in (run.result.stdout, run.result.stderr) if text]
    lines = "\n".join(streams).split("\n")
    kept = [line for line in lines if not any(noise.search(line) for noise in _NOISE)]
    tail = "\n".join(kept[-TAIL_LINES:]).strip() or "(no output captured)"
    message = f"worktree {phase} hook failed (exit {run.result.exit_code}): {run.command}\n{tail}"
    if log_path is not None:
        message += f"\n\n(full hook output: {log_path})"
    return message


def append_hook_log(log_path: str | os.PathLike[str] | None, run: HookRun) -> None:
    """Append ``$ <cmd>``, stdout, stderr and ``(exit <N>)`` to the log; errors swallowed."""
    if log_path is None:
        return
    parts = [f"$ {run.command}", run.result.stdout.rstrip("\n"),
             run.result.stderr.rstrip("\n"), f"(exit {run.result.exit_code})"]
    record = "\n".join(part for part in parts if part) + "\n\n"
    with contextlib.suppress(OSError):
        path = Path(log_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        append_to_regular_file(path, record.encode("utf-8"))


def append_to_regular_file(path: Path, data: bytes) -> bool:
    """Append ``data`` to ``path`` if it is (or can be created as) a regular file.

    Never blocks: a FIFO, socket or device is refused before and after a non-blocking
    open (returns ``False``). ``OSError`` propagates for the caller to swallow.
    """
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return True


def setup_environment(ctx: HookContext) -> dict[str, str]:
    """Hook variables + ``TURBO_CACHE_DIR`` + the non-interactive defaults."""
    env = non_interactive_defaults()
    env.update(hook_environment(ctx))
    env["TURBO_CACHE_DIR"] = turbo_cache_dir()
    return env


def teardown_environment(ctx: HookContext) -> dict[str, str]:
    """Hook variables + the non-interactive defaults (no ``TURBO_CACHE_DIR``)."""
    env = non_interactive_defaults()
    env.update(hook_environment(ctx))
    return env


def run_setup(
    commands: Sequence[str],
    ctx: HookContext,
    *,
    log_path: str | None = None,
    retry_on_failure: bool = False,
    signal: CancelToken | None = None,
    on_line: LineObserver | None = None,
) -> list[HookRun]:
    """Run the setup hooks in the worktree; raise :class:`HookError` on a final failure.

    ``on_line(stream, line)`` receives each output line of every hook as it is printed.

    With ``retry_on_failure`` a failing command runs once more, logged and returned as
    ``<cmd> (retry 1/1)``: the returned runs hold both attempts, as upstream's do. The error
    names the command and carries the last attempt. Upstream detail unknown for
    cancellation: tavernlab kills the running hook's process group and raises
    :class:`ProvisionCancelledError`.
    """
    env = setup_environment(ctx)
    runs: list[HookRun] = []
    for command in commands:
        attempts = [command, f"{command} (retry 1/1)"] if retry_on_failure else [command]
        for label in attempts:
            result = run_shell(command, cwd=ctx.worktree, env=env, signal=signal,
                               on_line=on_line)
            run = HookRun(command=label, result=result)
            append_hook_log(log_path, run)
            runs.append(run)
            if signal is not None and signal.cancelled:
                raise ProvisionCancelledError()
            if result.exit_code == 0:
                break
        if result.exit_code != 0:
            final = HookRun(command=command, result=result)
            raise HookError(hook_error_message("setup", final, log_path), phase="setup",
                            command=command, result=result, log_path=log_path)
    return runs


def run_teardown(commands: Sequence[str], ctx: HookContext, *,
                 log_path: str | None = None) -> list[HookRun]:
    """Run the teardown hooks in order without retry; never raises on a non-zero exit."""
    env = teardown_environment(ctx)
    runs = []
    for command in commands:
        run = HookRun(command=command, result=run_shell(command, cwd=ctx.worktree, env=env))
        append_hook_log(log_path, run)
        runs.append(run)
    return runs
