"""The shell under a deterministic clock: ``date`` reads the lab's clock.

bashkit's own ``date`` reads the host's clock and cannot be told otherwise, so when a lab's
clock is deterministic (:func:`tavernlab.clock.is_deterministic`) the shell replaces it with
this builtin. It prints the clock's reading in UTC in bashkit's format (``Tue Dec  1 09:30:00
UTC 2026``), honours ``+FORMAT`` (strftime, plus ``%N`` nanoseconds and ``%s`` epoch
seconds), ``-u``/``--utc``, ``-I``/``--iso-8601[=date|hours|minutes|seconds|ns]``, ``-R`` and
``--rfc-3339=date|seconds|ns``; any other option (``-d DATE``, ``-r FILE``, ``-s``) fails with
``date: option not supported under a fixed clock: <arg>`` (a tavernlab choice: those need a
date parser or the host's clock). What the shell cannot fix: ``$SRANDOM`` (bashkit ignores
assignments to it); ``$RANDOM`` is seeded, file times are fixed (see the engine).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import bashkit

from tavernlab.clock import Clock, epoch_ms

#: bashkit's default ``date`` output.
DEFAULT_FORMAT = "%a %b %e %H:%M:%S UTC %Y"
_ISO = {"date": "%Y-%m-%d", "hours": "%Y-%m-%dT%H+00:00", "minutes": "%Y-%m-%dT%H:%M+00:00",
        "seconds": "%Y-%m-%dT%H:%M:%S+00:00", "ns": "%Y-%m-%dT%H:%M:%S,%N+00:00"}
_RFC3339 = {"date": "%Y-%m-%d", "seconds": "%Y-%m-%d %H:%M:%S+00:00",
            "ns": "%Y-%m-%d %H:%M:%S.%N+00:00"}


def fixed_date(clock: Clock) -> Callable[[Any], bashkit.BuiltinResult]:
    """The ``date`` builtin over ``clock``."""

    def date(ctx: Any) -> bashkit.BuiltinResult:
        """Print the clock's time (see the module docstring)."""
        try:
            pattern = _pattern(list(ctx.argv))
        except ValueError as error:
            return bashkit.BuiltinResult(stderr=f"date: {error}\n", exit_code=1)
        return bashkit.BuiltinResult(stdout=render(clock.now(), pattern) + "\n")

    return date


def _pattern(argv: list[str]) -> str:
    pattern = DEFAULT_FORMAT
    for arg in argv:
        if arg in ("-u", "--utc", "--universal"):
            continue
        if arg.startswith("+"):
            pattern = arg[1:]
        elif arg in ("-I", "--iso-8601"):
            pattern = _ISO["date"]
        elif arg.startswith(("-I", "--iso-8601=")):
            pattern = _choose(_ISO, arg.split("=", 1)[1] if "=" in arg else arg[2:], arg)
        elif arg in ("-R", "--rfc-email"):
            pattern = "%a, %d %b %Y %H:%M:%S +0000"
        elif arg.startswith("--rfc-3339="):
            pattern = _choose(_RFC3339, arg.split("=", 1)[1], arg)
        else:
            raise ValueError(f"option not supported under a fixed clock: {arg}")
    return pattern


def _choose(table: dict[str, str], key: str, arg: str) -> str:
    if key not in table:
        raise ValueError(f"invalid argument '{key}' for '{arg.split('=', 1)[0]}'")
    return table[key]


def render(moment: datetime, pattern: str) -> str:
    """``strftime`` of ``pattern`` with ``%N`` (nanoseconds) and ``%s`` (epoch seconds)."""
    expanded = (pattern.replace("%%", "\ue000")
                .replace("%N", f"{moment.microsecond * 1000:09d}")
                .replace("%s", str(epoch_ms(moment) // 1000)))
    return moment.strftime(expanded).replace("\ue000", "%")
