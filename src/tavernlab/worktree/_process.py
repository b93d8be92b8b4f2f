"""Subprocess execution (docs/worktrees.md): argv and shell runs that never outlive their owner.

Both runners capture stdout and stderr as UTF-8 text and return a :class:`RunResult`; a
child killed by a signal reports exit code -1. They never raise on a non-zero exit, only
when the spawn fails or the cancel signal is already set before the spawn.

Every child leads its own process group (:class:`ProcessGroup`). Upstream does this only
when a cancel signal is given; tavernlab always does (tavernlab choice), so that a
``KeyboardInterrupt`` in the waiting thread can kill the whole group: it cancels the group
and the signal, waits for the child within the grace period and re-raises. Cancelling sends
SIGTERM to the group, then SIGKILL after 5 s; that timer stays armed when the leader exits
first, so stubborn grandchildren die too. In the main thread a run takes SIGINT over for its
duration, so an interrupt that lands between the spawn and the group's registration, or
during the cleanup, is held back instead of leaving a child nobody kills.

With ``on_line`` a runner also hands each output line to the caller as it is produced
(``on_line(stream, line)``, from a reader thread, without its newline); the result still
carries the whole output. An observer's exception is swallowed: watching never breaks a run.
"""

from __future__ import annotations

import contextlib
import os
import signal as signals
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import FrameType
from typing import IO, Literal

from tavernlab.cancel import CancelToken
from tavernlab.clock import SYSTEM_CLOCK, Clock
from tavernlab.worktree._errors import ProvisionCancelledError, SpawnError

#: Grace period between SIGTERM and SIGKILL for a process group (upstream: 5000 ms).
KILL_GRACE_SECONDS = 5.0
#: How often a blocking stop looks at the group again.
POLL_SECONDS = 0.02
_PROC = Path("/proc")

Stream = Literal["stdout", "stderr"]
#: ``on_line(stream, line)``: one line of a child's output, as it is produced.
LineObserver = Callable[[Stream, str], object]


@dataclass(frozen=True)
class RunResult:
    """What a finished child left behind: ``{exitCode, stdout, stderr}``.

    ``raw_stdout`` keeps the exact bytes (a patch must survive non-UTF-8 content).
    """

    exit_code: int
    stdout: str
    stderr: str
    raw_stdout: bytes = field(default=b"", repr=False, compare=False)

    def to_json(self) -> dict[str, object]:
        """The upstream ``{exitCode, stdout, stderr}`` shape."""
        return {"exitCode": self.exit_code, "stdout": self.stdout, "stderr": self.stderr}


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent's environment with the caller's variables on top (caller wins)."""
    env = dict(os.environ)
    if extra:
        env.update(extra)
    return env


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = (_PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process.

    Reads ``/proc`` where there is one, so an exited child nobody has reaped yet counts as
    gone; elsewhere ``kill(pid, 0)`` decides.
    """
    if _PROC.is_dir():
        fields = _stat_fields(pid)
        return fields is not None and fields[0] not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``."""
    if not _PROC.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            return [pgid]
        return [pgid]
    members = []
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and fields[0] not in ("Z", "X") and fields[2] == str(pgid):
                members.append(int(entry.name))
    return members


class ProcessGroup:
    """The process group a child leads (its pgid is the child's pid)."""

    def __init__(self, pgid: int) -> None:
        self.pgid = pgid

    def send(self, sig: int) -> None:
        """Signal every member; a group that is already gone is fine."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)

    def alive(self) -> bool:
        """Whether any member still runs."""
        return bool(group_members(self.pgid))

    def cancel(self, grace: float = KILL_GRACE_SECONDS) -> threading.Timer:
        """SIGTERM now and SIGKILL after ``grace`` seconds, without waiting (the timer is a
        daemon thread and fires even when the leader has already exited)."""
        self.send(signals.SIGTERM)
        timer = threading.Timer(grace, self.send, (signals.SIGKILL,))
        timer.daemon = True
        timer.start()
        return timer

    def terminate(self, leader: subprocess.Popen[bytes] | None = None,
                  grace: float = KILL_GRACE_SECONDS) -> None:
        """SIGTERM, wait until no member is left (at most ``grace``), then SIGKILL (see
        :func:`terminate_groups`)."""
        terminate_groups([(self, leader)], grace)


def terminate_groups(groups: Sequence[tuple[ProcessGroup, subprocess.Popen[bytes] | None]],
                     grace: float = KILL_GRACE_SECONDS, clock: Clock = SYSTEM_CLOCK) -> None:
    """Stop several process groups together: SIGTERM to all, wait until none has a member
    left (at most ``grace``), SIGKILL to the rest.

    Blocks at most ``grace`` plus one poll (and the leaders' reaping); uses no threads, so
    it works at interpreter exit. Each leader (when given) is reaped on the way, so it does
    not linger as a zombie.
    """
    for group, _ in groups:
        group.send(signals.SIGTERM)
    deadline = clock.monotonic() + grace
    remaining = list(groups)
    while remaining:
        for _, leader in remaining:
            if leader is not None:
                leader.poll()
        remaining = [(group, leader) for group, leader in remaining if group.alive()]
        if not remaining or clock.monotonic() >= deadline:
            break
        time.sleep(POLL_SECONDS)
    for group, _ in remaining:
        group.send(signals.SIGKILL)
    for _, leader in groups:
        if leader is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                leader.wait(timeout=grace)
    killed_by = clock.monotonic() + grace  # SIGKILLed members finish dying (bounded)
    while any(group.alive() for group, _ in remaining) and clock.monotonic() < killed_by:
        time.sleep(POLL_SECONDS)


def _decode(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


class _LineReader(threading.Thread):
    """Reads one pipe to its end, keeping every byte and telling ``on_line`` each line."""

    def __init__(self, pipe: IO[bytes], stream: Stream, on_line: LineObserver) -> None:
        super().__init__(daemon=True, name=f"worktree-{stream}")
        self.pipe, self.stream, self.on_line = pipe, stream, on_line
        self.chunks: list[bytes] = []

    def run(self) -> None:
        with self.pipe:
            for raw in iter(self.pipe.readline, b""):
                self.chunks.append(raw)
                with contextlib.suppress(Exception):
                    self.on_line(self.stream, _decode(raw).removesuffix("\n"))

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)


class _Output:
    """A started child's output: read by ``communicate`` or, with an observer, by two line
    readers (:meth:`start`); :meth:`collect` waits for the child and returns
    ``(stdout, stderr)``."""

    def __init__(self, child: subprocess.Popen[bytes], stdin: bytes | None,
                 on_line: LineObserver | None) -> None:
        self.child = child
        self.stdin = stdin
        self.readers: list[_LineReader] = []
        if on_line is not None and child.stdout is not None and child.stderr is not None:
            self.readers = [_LineReader(child.stdout, "stdout", on_line),
                            _LineReader(child.stderr, "stderr", on_line)]

    def start(self) -> None:
        """Start the line readers and feed stdin (nothing to do without an observer)."""
        for reader in self.readers:
            reader.start()
        if self.readers and self.child.stdin is not None:
            with contextlib.suppress(BrokenPipeError), self.child.stdin:
                self.child.stdin.write(self.stdin or b"")

    def collect(self, timeout: float | None = None) -> tuple[bytes, bytes]:
        """Wait for the child (at most ``timeout``: ``TimeoutExpired``) and its output."""
        if not self.readers:
            return self.child.communicate(self.stdin, timeout=timeout)
        self.child.wait(timeout)
        for reader in self.readers:
            if reader.ident is not None:
                reader.join()
        return self.readers[0].data, self.readers[1].data


def _reap_after_interrupt(output: _Output | None, group: ProcessGroup) -> None:
    """Wait for an interrupted child's group to end (killing it after the grace period)."""
    if output is None:  # interrupted before its output was read: wait on the group
        deadline = time.monotonic() + KILL_GRACE_SECONDS + 1
        while group.alive() and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
        group.send(signals.SIGKILL)
        return
    try:
        output.collect(timeout=KILL_GRACE_SECONDS + 1)
    except subprocess.TimeoutExpired:
        group.send(signals.SIGKILL)
        output.collect()


def _cancel_group(group: ProcessGroup) -> None:
    group.cancel()


class _SigintRoute:
    """What a SIGINT does while :func:`run_argv` owns a child in the main thread.

    Python runs signal handlers in the main thread whichever thread the system handed the
    signal to, so blocking SIGINT there would not hold it back in a process with other
    threads (a Jupyter kernel always has some). Instead the run replaces the handler: a SIGINT
    is recorded and sends SIGTERM to the child's group as soon as there is one, and raises
    ``KeyboardInterrupt`` only where the run waits for the child (:meth:`interruptible`), at
    most once. Everywhere else (the spawn, the group's registration, the cleanup) it is held
    back, and the run raises it itself once its child is gone.
    """

    def __init__(self) -> None:
        self.arrived = False
        self.group: ProcessGroup | None = None
        self._raise = False

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The SIGINT handler (main thread)."""
        self.arrived = True
        if self.group is not None:
            self.group.send(signals.SIGTERM)
        if self._raise:
            self._raise = False
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """Let a SIGINT end the wait inside the block (one that came earlier does so at
        once); leaving the block, by any path, holds SIGINT back again."""
        try:
            self._raise = True
            if self.arrived and self._raise:
                self._raise = False
                raise KeyboardInterrupt
            yield
        finally:
            self._raise = False


@contextlib.contextmanager
def _routed_sigint() -> Iterator[_SigintRoute]:
    """Route SIGINT to a :class:`_SigintRoute` for the block (main thread only, and only over
    a Python-level handler: an ignored SIGINT stays ignored). Elsewhere the route never sees
    a signal and a ``KeyboardInterrupt`` reaches the caller's cleanup directly. A SIGINT
    that was held back and not raised yet is raised on leaving the block, so none is lost."""
    route = _SigintRoute()
    previous: object = None
    if threading.current_thread() is threading.main_thread():
        with contextlib.suppress(ValueError):  # ValueError: not the main interpreter
            previous = signals.getsignal(signals.SIGINT)
            if callable(previous):
                signals.signal(signals.SIGINT, route.handle)
    routed = callable(previous)
    try:
        yield route
    finally:
        if routed:
            signals.signal(signals.SIGINT, previous)  # type: ignore[arg-type]
    if route.arrived:  # (the block ended without an exception: nothing raised it)
        raise KeyboardInterrupt


def _spawn(argv: Sequence[str], cwd: str | os.PathLike[str], env: Mapping[str, str] | None,
           stdin: bytes | None) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            list(argv), cwd=cwd, env=child_environment(env),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise SpawnError(f"could not spawn {argv[0]!r} in {os.fspath(cwd)}: {exc}") from exc


def run_argv(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    signal: CancelToken | None = None,
    stdin: bytes | None = None,
    on_line: LineObserver | None = None,
) -> RunResult:
    """Run ``argv`` without a shell in ``cwd``; ``env`` is laid over the inherited environment.

    Raises :class:`ProvisionCancelledError` if ``signal`` is already set (nothing is spawned)
    and :class:`SpawnError` if the program or directory cannot be used. ``stdin`` is fed to
    the child (otherwise it reads ``/dev/null``); ``on_line`` streams its output lines.

    A ``KeyboardInterrupt`` (a SIGINT to the main thread, wherever it lands in the run) kills
    the child's whole group, cancels ``signal``, waits for the group within the grace period
    and is raised once that is done; a SIGINT before the spawn spawns nothing. Any other
    exception that leaves the run while the child may still be running kills its group too.
    """
    with _routed_sigint() as route:
        if signal is not None and signal.cancelled:
            raise ProvisionCancelledError()
        if route.arrived:
            raise KeyboardInterrupt
        child = _spawn(argv, cwd, env, stdin)
        group = route.group = ProcessGroup(child.pid)
        unsubscribe: Callable[[], None] | None = None
        output: _Output | None = None
        try:
            if signal is not None:  # (an already cancelled signal cancels the group now)
                unsubscribe = signal.on_cancel(partial(_cancel_group, group))
            with route.interruptible():
                output = _Output(child, stdin, on_line)
                output.start()
                out, err = output.collect()
            if route.arrived:  # it came as the wait ended: the run was still interrupted
                raise KeyboardInterrupt
        except BaseException as exc:
            # SIGINT is held back from here on (see _SigintRoute): the cleanup always runs.
            if unsubscribe is not None:
                unsubscribe()
            group.cancel()
            interrupted = isinstance(exc, KeyboardInterrupt)
            if interrupted and signal is not None:
                signal.cancel("interrupted")
            _reap_after_interrupt(output, group)
            if route.arrived and not interrupted:
                raise KeyboardInterrupt from exc
            raise
        if unsubscribe is not None:
            unsubscribe()
    code = child.returncode
    return RunResult(exit_code=-1 if code < 0 else code, stdout=_decode(out),
                     stderr=_decode(err), raw_stdout=out or b"")


def run_shell(
    command: str,
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    signal: CancelToken | None = None,
    on_line: LineObserver | None = None,
) -> RunResult:
    """Run ``command`` through ``/bin/sh -c`` with the rules of :func:`run_argv`."""
    return run_argv(["/bin/sh", "-c", command], cwd=cwd, env=env, signal=signal,
                    on_line=on_line)
