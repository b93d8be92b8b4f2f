"""Subprocess execution (spec section 1.3): argv and shell runs with group cancellation.

Both runners capture stdout and stderr as UTF-8 text and return a :class:`RunResult`; a
child killed by a signal reports exit code -1. They never raise on a non-zero exit, only
when the spawn fails or the cancel signal is already set before the spawn. With a signal the
child leads a new process group; on cancel the whole group gets SIGTERM, then SIGKILL after
5 s. That timer stays armed when the leader exits first, so stubborn grandchildren die too.
"""

from __future__ import annotations

import contextlib
import os
import signal as signals
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tavernlab.cancel import CancelToken
from tavernlab.worktree.errors import ProvisionCancelledError, SpawnError

#: Grace period between SIGTERM and SIGKILL for a cancelled process group (upstream: 5000 ms).
KILL_GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class RunResult:
    """What a finished child left behind: ``{exitCode, stdout, stderr}``."""

    exit_code: int
    stdout: str
    stderr: str

    def to_json(self) -> dict[str, object]:
        """The upstream ``{exitCode, stdout, stderr}`` shape."""
        return {"exitCode": self.exit_code, "stdout": self.stdout, "stderr": self.stderr}


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent's environment with the caller's variables on top (caller wins)."""
    env = dict(os.environ)
    if extra:
        env.update(extra)
    return env


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def run_argv(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    signal: CancelToken | None = None,
) -> RunResult:
    """Run ``argv`` without a shell in ``cwd``; ``env`` is laid over the inherited environment.

    Raises :class:`ProvisionCancelledError` if ``signal`` is already set (nothing is spawned)
    and :class:`SpawnError` if the program or directory cannot be used.
    """
    if signal is not None and signal.cancelled:
        raise ProvisionCancelledError()
    try:
        child = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=child_environment(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=signal is not None,
        )
    except OSError as exc:
        raise SpawnError(f"could not spawn {argv[0]!r} in {os.fspath(cwd)}: {exc}") from exc
    unsubscribe = None
    if signal is not None:
        pgid = child.pid

        def on_cancel() -> None:
            _kill_group(pgid, signals.SIGTERM)
            timer = threading.Timer(KILL_GRACE_SECONDS, _kill_group, (pgid, signals.SIGKILL))
            timer.daemon = True
            timer.start()

        unsubscribe = signal.on_cancel(on_cancel)
    try:
        out, err = child.communicate()
    finally:
        if unsubscribe is not None:
            unsubscribe()
    code = child.returncode
    return RunResult(
        exit_code=-1 if code < 0 else code,
        stdout=out.decode("utf-8", errors="replace"),
        stderr=err.decode("utf-8", errors="replace"),
    )


def run_shell(
    command: str,
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    signal: CancelToken | None = None,
) -> RunResult:
    """Run ``command`` through ``/bin/sh -c`` with the rules of :func:`run_argv`."""
    return run_argv(["/bin/sh", "-c", command], cwd=cwd, env=env, signal=signal)
