"""Custom commands of the workspace shell: ``js``/``node``/``deno``, ``sleep`` and ``touch``.

They are bashkit custom builtins: each receives the argv after the command name, the
pipeline's stdin (text) and the shell's current directory, and returns stdout, stderr and an
exit status.

* ``js``, ``node``, ``deno`` run the QuickJS sandbox's V5 command
  (:func:`tavernlab.js.run_js_command`) with the shell's cwd, stdin, the call's
  scoped view (so module reads count toward the call's input budget and writes toward its
  mutation tracking), the call's remaining deadline and its cancel token. Jobs of one call run
  one at a time. A job that ran into the deadline stops the interpreter and the call reports
  ``Command timed out.``; a cancelled job reports ``Command cancelled.``
* ``sleep`` replaces bashkit's (which does not notice cancellation): it waits on the cancel
  token, bounded by the deadline. ``sleep N[smhd]…`` sums its operands; ``infinity`` is
  accepted.
* ``touch`` replaces bashkit's (which needs settable file times, absent from the workspace):
  a missing file is created empty; an existing file is left unchanged (upstream detail
  unknown; tavernlab chooses this and documents it). ``-c``/``--no-create`` skips missing
  files; ``-a``, ``-m``, ``-h`` are accepted and ignored; ``-d``, ``-t``, ``-r`` take a value
  that is ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import re
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import bashkit

from tavernlab.cancel import CancelToken
from tavernlab.clock import Clock
from tavernlab.errors import InvalidData
from tavernlab.js import WorkerPool, run_js_command
from tavernlab.shell._bridge import WorkspaceBridge, parse_shell_path, posix_error, shell_path
from tavernlab.shell._fixed_time import fixed_date
from tavernlab.shell._vfs import VfsError
from tavernlab.workspace.macros import FrozenContext

JS_COMMANDS = ("js", "node", "deno")
_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$")
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
#: The custom builtins that are coroutines (bashkit awaits them).
ASYNC_BUILTINS = ("sleep",)


def builtin_names(fixed_time: bool) -> tuple[str, ...]:
    """The names :meth:`ShellCommands.builtins` maps: the ``js`` commands, ``sleep``,
    ``touch`` and, under a deterministic clock (``fixed_time``), ``date``."""
    return (*JS_COMMANDS, "sleep", "touch", *(("date",) if fixed_time else ()))


def parse_sleep_seconds(operands: list[str]) -> float:
    """Sum ``sleep`` operands (``1``, ``0.5s``, ``2m``, ``infinity``); ``ValueError`` names the
    first invalid one."""
    total = 0.0
    for operand in operands:
        if operand in ("inf", "infinity"):
            return math.inf
        match = _DURATION.match(operand)
        if match is None:
            raise ValueError(operand)
        total += float(match.group(1)) * _UNITS[match.group(2)]
    return total


class ShellCommands:
    """The custom builtins of one shell call, bound to its bridge, deadline and token."""

    def __init__(self, bridge: WorkspaceBridge, context: FrozenContext, deadline: float,
                 cancel: CancelToken, stop: Callable[[], None], *,
                 pool: WorkerPool | None = None, clock: Clock | None = None,
                 seed: int = 0) -> None:
        self.bridge = bridge
        self.pool = pool
        #: A deterministic clock (``None``: the host's time): ``date`` and the ``js`` jobs'
        #: ``Date`` read it, and each job gets the next seed for ``Math.random``.
        self.clock = clock
        self._seeds = itertools.count(seed * 1000)
        self.context = context
        self.deadline = deadline
        self.cancel = cancel
        self.stop = stop
        #: A job or sleep ran into the deadline.
        self.timed_out = False
        #: An unexpected exception escaped a command (the tool call aborts with it).
        self.internal_fault: BaseException | None = None
        self._js_lock = threading.Lock()
        self._table: Mapping[str, Callable[[Any], Any]] | None = None

    def builtin(self, name: str) -> Callable[[Any], Any]:
        """The builtin ``name`` of :meth:`builtins` (the mapping is made on first use, so a
        call that runs none of them never makes it)."""
        table = self._table
        if table is None:
            table = self._table = self.builtins()
        return table[name]

    def builtins(self) -> Mapping[str, Callable[[Any], Any]]:
        """The ``custom_builtins`` mapping for ``bashkit.Bash``."""
        table: dict[str, Callable[[Any], Any]] = {
            name: self._guard(self.javascript) for name in JS_COMMANDS}
        table["sleep"] = self._guard_async(self.sleep)
        table["touch"] = self._guard(self.touch)
        if self.clock is not None:
            table["date"] = self._guard(fixed_date(self.clock))
        return table

    def _fault(self, ctx: Any, error: BaseException) -> bashkit.BuiltinResult:
        """Remember an unexpected exception and stop the interpreter (the call aborts)."""
        if self.internal_fault is None:
            self.internal_fault = error
        self.stop()
        return bashkit.BuiltinResult(stderr=f"{ctx.name}: internal error\n", exit_code=1)

    def _guard(self, command: Callable[[Any], bashkit.BuiltinResult]
               ) -> Callable[[Any], bashkit.BuiltinResult]:
        def run(ctx: Any) -> bashkit.BuiltinResult:
            try:
                return command(ctx)
            except BaseException as error:  # reported, then the call aborts
                return self._fault(ctx, error)
        return run

    def _guard_async(self, command: Callable[[Any], Awaitable[bashkit.BuiltinResult]]
                     ) -> Callable[[Any], Awaitable[bashkit.BuiltinResult]]:
        async def run(ctx: Any) -> bashkit.BuiltinResult:
            try:
                return await command(ctx)
            except asyncio.CancelledError:  # bashkit's `timeout` or deadline stopped it
                raise
            except BaseException as error:  # reported, then the call aborts
                return self._fault(ctx, error)
        return run

    # -- js / node / deno --------------------------------------------------------------------

    def javascript(self, ctx: Any) -> bashkit.BuiltinResult:
        """Run the sandbox's V5 command for ``js``, ``node`` or ``deno``."""
        stdin = ctx.stdin.encode("utf-8") if ctx.stdin is not None else None
        with self._js_lock:
            result = run_js_command(
                list(ctx.argv), scope=self.bridge.scope, context=self.context, cwd=ctx.cwd,
                stdin=stdin, command=ctx.name, deadline=self.deadline, token=self.cancel,
                budget=self.bridge.budget, pool=self.pool, clock=self.clock,
                seed=None if self.clock is None else next(self._seeds))
        if result.timed_out:
            self.timed_out = True
            self.stop()
        elif result.cancelled:
            self.stop()
        return bashkit.BuiltinResult(stdout=result.stdout, stderr=result.stderr,
                                     exit_code=result.exit_code)

    # -- sleep ------------------------------------------------------------------------------------

    async def sleep(self, ctx: Any) -> bashkit.BuiltinResult:
        """Wait for the given time, waking up on cancellation or at the deadline.

        It is a coroutine so that bashkit's ``timeout`` and the interpreter's own deadline can
        interrupt it; the cancel token wakes it through its loop."""
        operands = list(ctx.argv)
        if not operands:
            return bashkit.BuiltinResult(stderr="sleep: missing operand\n", exit_code=1)
        try:
            seconds = parse_sleep_seconds(operands)
        except ValueError as error:
            return bashkit.BuiltinResult(
                stderr=f"sleep: invalid time interval '{error.args[0]}'\n", exit_code=1)
        until = time.monotonic() + seconds
        budget = min(until, self.deadline) - time.monotonic()
        if await self._wait_for_cancel(max(budget, 0.0)):
            return bashkit.BuiltinResult(exit_code=130)
        if until > self.deadline:
            self.timed_out = True
            self.stop()
            return bashkit.BuiltinResult(exit_code=124)
        return bashkit.BuiltinResult()

    async def _wait_for_cancel(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True as soon as the call's token is cancelled."""
        loop = asyncio.get_running_loop()
        woken = loop.create_future()

        def resolve() -> None:
            if not woken.done():
                woken.set_result(None)

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop may be gone already
                loop.call_soon_threadsafe(resolve)

        unregister = self.cancel.on_cancel(wake)
        try:
            await asyncio.wait([woken], timeout=seconds)
        finally:
            unregister()
        return self.cancel.cancelled

    # -- touch ------------------------------------------------------------------------------------

    def touch(self, ctx: Any) -> bashkit.BuiltinResult:
        """Create missing files empty; leave existing ones unchanged."""
        create = True
        operands: list[str] = []
        args = iter(ctx.argv)
        options_done = False
        for arg in args:
            if options_done or arg == "-" or not arg.startswith("-"):
                operands.append(arg)
            elif arg == "--":
                options_done = True
            elif arg in ("-c", "--no-create"):
                create = False
            elif arg in ("-d", "-t", "-r"):
                next(args, None)
            elif arg.startswith(("--date=", "--reference=", "--time=")) or arg in (
                    "-a", "-m", "-h", "--no-dereference"):
                continue
            else:
                return bashkit.BuiltinResult(
                    stderr=f"touch: unrecognized option '{arg}'\n", exit_code=1)
        if not operands:
            return bashkit.BuiltinResult(stderr="touch: missing file operand\n", exit_code=1)
        errors = []
        for operand in operands:
            try:
                path = shell_path(parse_shell_path(operand, ctx.cwd))
            except InvalidData as error:
                errors.append(f"touch: cannot touch '{operand}': {posix_error(error).message}")
                continue
            try:
                if not self.bridge.exists(path) and create:
                    self.bridge.write_file(path, b"")
            except VfsError as error:
                errors.append(f"touch: cannot touch '{operand}': {error.message}")
        stderr = "".join(line + "\n" for line in errors)
        return bashkit.BuiltinResult(stderr=stderr, exit_code=1 if errors else 0)
