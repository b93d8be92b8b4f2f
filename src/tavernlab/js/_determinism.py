"""Deterministic time and randomness inside a job (tavernlab choice; upstream has neither).

A job may carry a **time origin** and a **random state** (:class:`~tavernlab.js._job.Job`).
``run_js_command(..., clock=..., seed=...)`` and ``run_skill_script(..., clock=..., seed=...)``
set them; without them a job sees the engine's real clock and randomness, exactly as before.

Time, from a :class:`~tavernlab.clock.Clock`: the origin is one reading of ``clock.now()`` per
job, in epoch milliseconds (:func:`time_origin`). Inside the job every clock reading takes the
next tick of one counter: reading ``k`` (from 0) of ``Date.now()``, ``new Date()`` without
arguments or ``Date()`` called as a function is ``origin + k`` milliseconds, and
``performance.now()`` returns ``k`` (``performance.timeOrigin`` is the origin). ``new
Date(value)`` and the other ``Date`` functions are untouched. So the same script with the same
origin prints the same times, and two readings are never equal. Time zones are not faked:
``toString()`` and ``getHours()`` use the worker's local zone (``TZ``), inherited from the
kernel's environment.

Randomness, from an integer seed: ``Math.random`` becomes xoshiro128** over four 32-bit words
taken from the first 16 bytes (little-endian) of SHA-256 of ``"tavernlab.random:<seed>"``
(:func:`random_state`); each value combines two outputs into 53 bits,
``((a >>> 5) * 2**26 + (b >>> 6)) / 2**53``. Each job starts from the seed's state, so jobs
with the same seed see the same sequence, and different seeds different ones.
"""

from __future__ import annotations

import hashlib
import struct

from tavernlab.clock import Clock, epoch_ms

RandomState = tuple[int, int, int, int]


def time_origin(clock: Clock | None) -> int | None:
    """The job's time origin: one reading of ``clock`` in epoch ms (``None``: real time)."""
    return None if clock is None else epoch_ms(clock.now())


def random_state(seed: int | None) -> RandomState | None:
    """The xoshiro128** state of ``seed`` (``None``: the engine's own ``Math.random``).

    An all-zero state (which xoshiro cannot leave) becomes ``(1, 0, 0, 0)``.
    """
    if seed is None:
        return None
    digest = hashlib.sha256(f"tavernlab.random:{seed}".encode()).digest()
    words: RandomState = struct.unpack("<4I", digest[:16])
    return words if any(words) else (1, 0, 0, 0)
