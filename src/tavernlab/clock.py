"""Time and identity, injectable: the one source of "now", elapsed time and new ids.

Every part of tavernlab that stamps a time, measures an elapsed time or mints an id asks a
:class:`Clock` or an :class:`IdFactory` it was given (a ``Lab`` hands its own to the runs,
the sandbox, the shell and the worktree tools). The defaults, :class:`SystemClock` and
:class:`RandomIds`, behave exactly as the standard library does. The deterministic pair,
:class:`FixedClock` and :class:`SequentialIds`, make two labs that play the same scripted run
produce byte-identical files: each reading of the clock advances it by a fixed step, and each
id is a counter.

Formats live here too, so that there is one rule for each: :func:`rfc3339` (upstream's
``2026-12-01T09:30:00.123456Z``), :func:`rfc3339_millis` (agentproto's
``2026-12-01T09:30:00.123Z``) and :func:`epoch_ms`.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The start of a :class:`FixedClock` unless another is given.
DEFAULT_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@runtime_checkable
class Clock(Protocol):
    """Wall time and a monotonic reading."""

    def now(self) -> datetime:
        """The current wall time as an aware UTC ``datetime``."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for elapsed times and deadlines)."""
        ...


@runtime_checkable
class IdFactory(Protocol):
    """Mints identifiers such as ``run_<32 hex>``."""

    def new(self, prefix: str, hex_chars: int = 32) -> str:
        """``<prefix>_`` followed by ``hex_chars`` lowercase hex characters."""
        ...


class SystemClock:
    """The real clock: ``datetime.now(UTC)`` and ``time.monotonic()``."""

    #: Readings vary from run to run.
    deterministic = False

    def now(self) -> datetime:
        """The current UTC time (microsecond precision)."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    def __repr__(self) -> str:
        return "SystemClock()"


class FixedClock:
    """A deterministic clock: reading ``k`` (from 0) returns ``start + k * step``.

    ``now()`` and ``monotonic()`` share one counter, so any sequence of readings is the same
    on every replay of the same actions. ``readings`` says how many were taken; a clock built
    with ``readings=n`` continues exactly where one that had given ``n`` readings stands (how
    a replay resumes a lab's clock at the start of a run). Thread-safe.

    >>> clock = FixedClock(step=timedelta(milliseconds=1))
    >>> clock.now().isoformat(), clock.now().isoformat()
    ('2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00.001000+00:00')
    """

    #: Readings are the same on every replay: the sandbox and the shell fix their own time and
    #: randomness too when a lab's clock says so (see :func:`is_deterministic`).
    deterministic = True

    def __init__(self, start: datetime = DEFAULT_EPOCH,
                 step: timedelta = timedelta(milliseconds=1), *, readings: int = 0) -> None:
        if start.tzinfo is None:
            raise ValueError("FixedClock needs an aware start time (for example tzinfo=UTC)")
        if step < timedelta(0):
            raise ValueError("FixedClock step must not be negative")
        if readings < 0:
            raise ValueError("FixedClock readings must not be negative")
        self.start = start.astimezone(UTC)
        self.step = step
        self._ticks = readings
        self._lock = threading.Lock()

    @property
    def readings(self) -> int:
        """How many readings this clock has given (``now()`` and ``monotonic()`` together)."""
        with self._lock:
            return self._ticks

    def _tick(self) -> int:
        with self._lock:
            tick = self._ticks
            self._ticks += 1
        return tick

    def now(self) -> datetime:
        """The next reading as wall time."""
        return self.start + self.step * self._tick()

    def monotonic(self) -> float:
        """The next reading as seconds since ``start``."""
        return (self.step * self._tick()).total_seconds()

    def __repr__(self) -> str:
        return f"FixedClock(start={self.start.isoformat()!r}, step={self.step!r})"


class RandomIds:
    """Random ids: ``<prefix>_`` + hex digits of a UUID v4 (32 by default)."""

    def new(self, prefix: str, hex_chars: int = 32) -> str:
        """A fresh random id."""
        digits = _ENTROPY.uuid4_hex()
        if hex_chars == 32:
            return f"{prefix}_{digits}"
        while len(digits) < hex_chars:
            digits += _ENTROPY.uuid4_hex()
        return f"{prefix}_{digits[:hex_chars]}"

    def many(self, prefix: str, count: int) -> list[str]:
        """``count`` fresh ids of 32 digits, as ``new`` would mint them one by one (from one
        read of entropy: a large persist state journals a record per file)."""
        if count <= 0:
            return []
        text = _uuid4_text(os.urandom(16 * count))
        if " " in prefix:  # (the digits are split at spaces)
            return [f"{prefix}_{digits}" for digits in text.split(" ")]
        return f"{prefix}_{text.replace(' ', f' {prefix}_')}".split(" ")

    def __repr__(self) -> str:
        return "RandomIds()"


#: The version (4) and variant (RFC 4122) bits of a UUID v4, and the bits they replace.
_UUID4_BITS = (4 << 76) | (2 << 62)
_UUID4_KEEP = ~((0xF << 76) | (0x3 << 62)) & ((1 << 128) - 1)


def _uuid4_hexes(raw: bytes) -> list[str]:
    """The ``uuid.uuid4().hex`` of each 16 bytes of ``raw`` (its version and variant bits
    set)."""
    return _uuid4_text(raw).split(" ") if len(raw) >= 16 else []


def _uuid4_text(raw: bytes) -> str:
    """:func:`_uuid4_hexes` of ``raw`` (at least 16 bytes) joined by spaces: the bits set on
    all of them as one number, and its bytes written in hex by ``bytes.hex`` (a ``UUID``
    each cost more than the rest of minting an id, and formatting the number in hex three
    times what its bytes' ``hex`` costs)."""
    count = len(raw) // 16
    keep = int.from_bytes(_UUID4_KEEP.to_bytes(16) * count)
    bits = int.from_bytes(_UUID4_BITS.to_bytes(16) * count)
    return (int.from_bytes(raw[:16 * count]) & keep | bits).to_bytes(16 * count).hex(" ", 16)


class _Entropy:
    """``os.urandom`` read 4 KiB at a time, turned into 256 UUID v4 hex strings at once and
    handed out one per id (a system call, or a number formatted, per id cost more than the
    rest of minting it). Thread-safe (each string is popped once from the list that holds
    it), and emptied in a forked child so parent and child never hand out the same ids."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready: list[str] = []

    def uuid4_hex(self) -> str:
        """The 32 hex digits of a fresh UUID v4."""
        try:
            return self._ready.pop()
        except IndexError:
            return self._refill()

    def _refill(self) -> str:
        with self._lock:  # one thread reads entropy while the others wait for it
            try:
                return self._ready.pop()
            except IndexError:
                ready = _uuid4_hexes(os.urandom(4096))
                digits = ready.pop()
                self._ready = ready
                return digits

    def forget(self) -> None:
        """Drop what was read, and a lock another thread may have held (after a fork)."""
        self._lock = threading.Lock()
        self._ready = []


_ENTROPY = _Entropy()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_ENTROPY.forget)


@runtime_checkable
class IdReservations(Protocol):
    """Where a :class:`SequentialIds` keeps the numbers it has handed out, so that another
    factory with the same seed (a lab opened again, in this process or another) never
    mints them again."""

    def held(self) -> Mapping[str, int]:
        """The highest number reserved so far, per prefix."""
        ...

    def reserve(self, prefix: str, first: int, count: int) -> int:
        """Reserve ``count`` numbers of ``prefix`` from ``first`` on, or from just above the
        highest number reserved so far when that is higher; returns the first number
        reserved."""
        ...


#: Most numbers a :class:`SequentialIds` reserves at once (one write per block).
RESERVE_BLOCK = 1024


class SequentialIds:
    """Deterministic ids: one counter per prefix, from 1, behind a seed-derived stem.

    ``SequentialIds()`` mints ``run_00000000000000000000000000000001``, then ``…02``; a
    ``prefix_seed`` puts the first hex digits of SHA-256(seed) in front of the counter, so two
    factories with different seeds never collide. Thread-safe.

    A factory that :meth:`continues_in` a set of :class:`IdReservations` (a
    :class:`~tavernlab.host.Lab` does this with its own) starts above every number the
    reservations hold and reserves numbers in blocks before minting them, so ids never
    repeat across two factories of the same seed on one lab: a lab opened again with the same
    seed continues after what it already holds. In a lab that holds nothing yet the ids are
    exactly those of a factory without reservations (a replay mints what the recording
    minted).
    """

    def __init__(self, prefix_seed: str = "", *, counters: Mapping[str, int] | None = None
                 ) -> None:
        self.prefix_seed = prefix_seed
        self._stem = (hashlib.sha256(prefix_seed.encode("utf-8")).hexdigest()
                      if prefix_seed else "")
        self._counters: dict[str, int] = dict(counters or {})
        if any(not isinstance(n, int) or n < 0 for n in self._counters.values()):
            raise ValueError("SequentialIds counters must be non-negative integers")
        self._lock = threading.Lock()
        self._reservations: IdReservations | None = None
        self._limits: dict[str, int] = {}

    def continues_in(self, reservations: IdReservations) -> None:
        """From now on, keep clear of every number ``reservations`` hold (each counter moves
        up to the highest one held) and reserve numbers there before minting them."""
        held = reservations.held()
        with self._lock:
            for prefix, number in held.items():
                if number > self._counters.get(prefix, 0):
                    self._counters[prefix] = number
            self._reservations = reservations
            self._limits = dict(self._counters)

    @property
    def counters(self) -> dict[str, int]:
        """The last number minted per prefix (a copy); ``SequentialIds(seed,
        counters=ids.counters)`` continues where ``ids`` stands."""
        with self._lock:
            return dict(self._counters)

    def new(self, prefix: str, hex_chars: int = 32) -> str:
        """The next id of ``prefix``."""
        stem = self._stem[:hex_chars // 2]
        with self._lock:
            number = self._counters.get(prefix, 0) + 1
            if self._reservations is not None and number > self._limits.get(prefix, 0):
                capacity = 16 ** max(0, hex_chars - len(stem))
                block = max(1, min(RESERVE_BLOCK, capacity // 4096))
                number = self._reservations.reserve(prefix, number, block)
                self._limits[prefix] = number + block - 1
            self._counters[prefix] = number
        body = stem + f"{number:0{hex_chars - len(stem)}x}"
        if len(body) > hex_chars:
            raise OverflowError(f"SequentialIds ran out of {hex_chars}-digit ids for {prefix}")
        return f"{prefix}_{body}"

    def many(self, prefix: str, count: int) -> list[str]:
        """The next ``count`` ids of ``prefix`` (``new`` called ``count`` times)."""
        return [self.new(prefix) for _ in range(count)]

    def __repr__(self) -> str:
        return f"SequentialIds({self.prefix_seed!r})"


def is_deterministic(clock: Clock) -> bool:
    """Whether ``clock`` promises the same readings on every replay (a :class:`FixedClock`, or
    any clock with a true ``deterministic`` attribute). The engines then fix what they can of
    their own time and randomness: ``Date`` and ``Math.random`` in the sandbox, ``date``,
    ``$RANDOM`` and file times in the shell."""
    return bool(getattr(clock, "deterministic", False))


def clock_settings(clock: Clock) -> dict[str, Any] | None:
    """How to rebuild ``clock`` exactly as it stands now, as JSON (``{kind: "fixed", start,
    stepMicroseconds, readings}``), or ``None`` when it cannot be rebuilt (the system clock,
    or any other clock class). A run records this when it starts, so a replay can resume the
    lab's clock at that reading (:func:`clock_from_settings`)."""
    if type(clock) is not FixedClock:
        return None
    return {"kind": "fixed", "start": rfc3339(clock.start),
            "stepMicroseconds": clock.step // timedelta(microseconds=1),
            "readings": clock.readings}


def clock_from_settings(settings: Mapping[str, Any]) -> FixedClock:
    """The clock described by :func:`clock_settings` (``ValueError`` for anything else)."""
    if settings.get("kind") != "fixed":
        raise ValueError(f"not a fixed clock's settings: {dict(settings)!r}")
    step, readings = settings.get("stepMicroseconds"), settings.get("readings")
    if not isinstance(step, int) or not isinstance(readings, int):
        raise ValueError("fixed clock settings need integer stepMicroseconds and readings")
    return FixedClock(parse_rfc3339(str(settings.get("start"))),
                      timedelta(microseconds=step), readings=readings)


def ids_settings(ids: IdFactory) -> dict[str, Any] | None:
    """How to rebuild ``ids`` as it stands now (``{kind: "sequential", prefixSeed,
    counters}``), or ``None`` for random ids and any other factory class."""
    if type(ids) is not SequentialIds:
        return None
    return {"kind": "sequential", "prefixSeed": ids.prefix_seed,
            "counters": dict(sorted(ids.counters.items()))}


def ids_from_settings(settings: Mapping[str, Any]) -> SequentialIds:
    """The id factory described by :func:`ids_settings` (``ValueError`` for anything else)."""
    counters = settings.get("counters")
    if settings.get("kind") != "sequential" or not isinstance(counters, Mapping):
        raise ValueError(f"not sequential ids' settings: {dict(settings)!r}")
    return SequentialIds(str(settings.get("prefixSeed", "")), counters=counters)


def many_ids(ids: IdFactory, prefix: str, count: int) -> list[str]:
    """``count`` ids of ``prefix`` from ``ids``, in order: its ``many`` when it has one (both
    factories here do), else ``new`` called ``count`` times."""
    many = getattr(ids, "many", None)
    if many is not None:
        return list(many(prefix, count))
    return [ids.new(prefix) for _ in range(count)]


def seed_from(ids: IdFactory) -> int:
    """A 32-bit seed minted by ``ids`` (so :class:`SequentialIds` give the same seeds on every
    replay)."""
    return int(ids.new("seed", 8).rpartition("_")[2], 16)


def rfc3339(moment: datetime) -> str:
    """UTC RFC 3339 with microseconds as Python writes them and a ``Z`` suffix (upstream
    TauriTavern's timestamps): ``moment.astimezone(UTC).isoformat()`` with ``Z`` for
    ``+00:00`` (no fraction when the microseconds are 0), the date and time to the second
    formatted once per second (every record is stamped)."""
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    key = (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)
    head = _SECONDS.get(key)
    if head is None:
        head = moment.replace(microsecond=0).isoformat()[:-6]  # without "+00:00"
        if len(_SECONDS) > 1024:
            _SECONDS.clear()
        _SECONDS[key] = head
    micro = moment.microsecond
    return f"{head}.{micro:06d}Z" if micro else f"{head}Z"


def stamps(clock: Clock, count: int) -> list[str]:
    """:func:`rfc3339` of ``count`` readings of ``clock`` taken one after the other (one per
    record of a batch, as one by one). The system clock is read as ``datetime.now(UTC)``
    reads it (``time.time_ns()``, to the microsecond below), without a ``datetime`` each: a
    run started from a large persist state stamps a record per file."""
    if type(clock) is not SystemClock:
        now = clock.now
        return [rfc3339(now()) for _ in range(count)]
    now_ns = time.time_ns
    readings = [now_ns() // 1000 for _ in range(count)]  # microseconds, one by one
    if not readings:
        return []
    second = readings[0] // 1_000_000
    start = second * 1_000_000
    if start < min(readings) and max(readings) < start + 1_000_000:  # one second, no .000000
        whole, below = datetime.fromtimestamp(second, UTC).isoformat()[:-6], start - 1_000_000
        # 1000001..1999999 without its leading 1 is the zero-padded fraction (a format
        # spec per stamp cost a third more)
        return [f"{whole}.{str(micro - below)[1:]}Z" for micro in readings]
    out: list[str] = []
    append = out.append
    heads: dict[int, str] = {}
    for reading in readings:
        second, micro = divmod(reading, 1_000_000)
        head = heads.get(second)
        if head is None:
            head = heads[second] = datetime.fromtimestamp(second, UTC).isoformat()[:-6]
        append(f"{head}.{micro:06d}Z" if micro else f"{head}Z")
    return out


#: ``YYYY-MM-DDTHH:MM:SS`` of the seconds :func:`rfc3339` formatted lately.
_SECONDS: dict[tuple[int, int, int, int, int, int], str] = {}


def rfc3339_millis(moment: datetime) -> str:
    """UTC RFC 3339 with milliseconds and ``Z`` (JavaScript's ``Date.toISOString()``, the
    agentproto worktree package's timestamps)."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since the Unix epoch (JavaScript's ``Date.now()``)."""
    return (moment - _UNIX_EPOCH) // timedelta(milliseconds=1)


def parse_rfc3339(text: str) -> datetime:
    """Parse an RFC 3339 timestamp (``Z`` or an offset) into an aware UTC ``datetime``."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"timestamp without a time zone: {text!r}")
    return moment.astimezone(UTC)


#: The process-wide defaults (stateless, so sharing them is safe).
SYSTEM_CLOCK = SystemClock()
RANDOM_IDS = RandomIds()
