"""Kept interpreters: ``bashkit.Bash`` objects that outlive one shell call.

A call takes an idle interpreter of its kind (with or without the fixed-clock ``date``) and
resets it (``Bash.reset()`` reports exactly the state of a new one), or builds one; its
builtins forward to the call's own commands through a slot the call fills; a call that ended
normally hands the interpreter back. No interpreter ever serves two threads at once and no
call sees another's state. The reset happens when a call takes the interpreter, not when the
previous one hands it back, so that what counts from the interpreter's start (``$SECONDS``)
counts from this call's start, as on an interpreter built for it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import bashkit

from tavernlab.shell._bridge import WorkspaceBridge
from tavernlab.shell._commands import ASYNC_BUILTINS, ShellCommands, builtin_names
from tavernlab.shell._vfs_abi import ExportedFilesystem

_forks = 0


def _forked() -> None:
    global _forks
    _forks += 1


os.register_at_fork(after_in_child=_forked)


def forks() -> int:
    """How many forks lie between the first process and this one (0 in the process that
    loaded the shell, one more in each forked child): what tells a forked child from its
    parent without a system call."""
    return _forks


#: The variable that lets bashkit run Python in process (set for the interpreter, unset by
#: every call's prelude, so a script cannot use it).
_PYTHON_PERMISSION = "BASHKIT_ALLOW_INPROCESS_PYTHON"


class _Slot:
    """What a kept interpreter's builtins forward to: the current call's commands."""

    __slots__ = ("commands",)

    def __init__(self) -> None:
        self.commands: ShellCommands | None = None

    def get(self, name: str) -> ShellCommands:
        """The current call's commands (an interpreter between calls runs nothing)."""
        commands = self.commands
        if commands is None:
            raise RuntimeError(f"{name}: no shell call is running")
        return commands


def _forwarding_builtins(slot: _Slot, fixed_time: bool) -> dict[str, Callable[[Any], Any]]:
    """The custom builtins of a kept interpreter: each runs the current call's own."""

    def forward(name: str) -> Callable[[Any], Any]:
        if name in ASYNC_BUILTINS:
            async def run_async(ctx: Any) -> bashkit.BuiltinResult:
                result: bashkit.BuiltinResult = await slot.get(name).builtin(name)(ctx)
                return result
            return run_async

        def run(ctx: Any) -> bashkit.BuiltinResult:
            result: bashkit.BuiltinResult = slot.get(name).builtin(name)(ctx)
            return result
        return run

    return {name: forward(name) for name in builtin_names(fixed_time)}


class KeptInterpreter:
    """One ``bashkit.Bash`` kept across calls: built once with the workspace's settings
    (``HOME=/``, the embedded Python allowed, the interactive profile, no timeout of its own,
    builtins that forward to the call's :class:`~tavernlab.shell._commands.ShellCommands`, one
    exported filesystem mounted at ``/`` that is pointed at each call's bridge) and
    ``reset()`` between calls, which restores exactly the state of a new one (variables,
    functions, aliases, options, traps, cwd, umask, the directory stack, exported
    environment) while keeping that configuration."""

    def __init__(self, fixed_time: bool, cwd: str = "/") -> None:
        self.fixed_time = fixed_time
        #: Where a reset puts the interpreter (a kept one: ``/``; each call's prelude enters
        #: its workdir).
        self.cwd = cwd
        self.slot = _Slot()
        self.exported = ExportedFilesystem(None)
        self.bash = bashkit.Bash(
            cwd=cwd,
            env={"HOME": "/", _PYTHON_PERMISSION: "1"},
            python=True,
            profile=bashkit.ExecutionProfile.Interactive,
            custom_builtins=_forwarding_builtins(self.slot, fixed_time),
        )
        self.bash.mount("/", self.exported.bashkit_fs)

    def attach(self, bridge: WorkspaceBridge, commands: ShellCommands) -> None:
        """Serve one call: its filesystem and its builtins."""
        self.exported.retarget(bridge)
        self.slot.commands = commands

    def detach(self) -> None:
        """Let go of the call's objects (nothing of a call outlives it)."""
        self.exported.retarget(None)
        self.slot.commands = None

    def reset(self) -> None:
        """Back to the state of a new interpreter, ready for the next call."""
        self.bash.clear_cancel()
        self.bash.reset()

    def close(self) -> None:
        """Drop the exported filesystem's Python side (the interpreter is not reused)."""
        self.detach()
        self.exported.close()


class KeptInterpreters:
    """Idle :class:`KeptInterpreter` s, by kind (with or without the fixed-clock ``date``).

    A call takes one and resets it (or builds one when none is idle), so no interpreter ever
    serves two threads at once; a call that ended normally hands it back, up to ``limit``
    idle ones per kind (an idle one keeps its last call's shell state, never its files or
    builtins, until it is taken). A forked child never uses its parent's interpreters (their
    runtime threads do not exist there): it keeps them referenced, unused, and builds its
    own."""

    def __init__(self, limit: int = 4) -> None:
        self.limit = limit
        self._idle: dict[bool, list[KeptInterpreter]] = {False: [], True: []}
        self._lock = threading.Lock()
        self._forks = _forks
        self._inherited: list[KeptInterpreter] = []
        #: How many interpreters :meth:`take` built (the rest were kept ones).
        self.built = 0

    def _check_fork(self) -> None:
        if self._forks != _forks:
            for idle in self._idle.values():
                self._inherited += idle
                idle.clear()
            self._forks = _forks

    def take(self, fixed_time: bool) -> KeptInterpreter:
        """An idle interpreter of that kind, reset now (so it is in the state of one built
        for this call), or a new one. When the reset fails the interpreter is closed and the
        error propagates."""
        with self._lock:
            self._check_fork()
            idle = self._idle[fixed_time]
            if not idle:
                self.built += 1
                interpreter = None
            else:
                interpreter = idle.pop()
        if interpreter is None:
            return KeptInterpreter(fixed_time)
        try:
            interpreter.reset()
        except BaseException:
            interpreter.close()
            raise
        return interpreter

    def give(self, interpreter: KeptInterpreter) -> None:
        """Keep ``interpreter`` for a later call (it is reset when taken), or close it when
        enough are idle."""
        with self._lock:
            self._check_fork()
            idle = self._idle[interpreter.fixed_time]
            if len(idle) < self.limit:
                idle.append(interpreter)
                return
        interpreter.close()

    def idle(self) -> int:
        """How many interpreters are idle (both kinds)."""
        with self._lock:
            return sum(len(idle) for idle in self._idle.values())


#: The process-wide interpreters every shell call takes from.
KEPT = KeptInterpreters()
