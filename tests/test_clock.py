"""The injectable clock and id factories (tavernlab.clock)."""

from __future__ import annotations

import os
import threading
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tavernlab.clock import (
    FixedClock,
    RandomIds,
    SequentialIds,
    SystemClock,
    _uuid4_hexes,
    clock_from_settings,
    clock_settings,
    epoch_ms,
    ids_from_settings,
    ids_settings,
    many_ids,
    parse_rfc3339,
    rfc3339,
    rfc3339_millis,
    stamps,
)


def test_fixed_clock_advances_one_step_per_reading() -> None:
    clock = FixedClock(datetime(2026, 12, 1, 9, 30, tzinfo=UTC), timedelta(seconds=2))
    assert clock.now() == datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    assert clock.monotonic() == 2.0
    assert clock.now() == datetime(2026, 12, 1, 9, 30, 4, tzinfo=UTC)


def test_fixed_clock_refuses_naive_start_and_negative_step() -> None:
    with pytest.raises(ValueError, match="aware start"):
        FixedClock(datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="must not be negative"):
        FixedClock(step=timedelta(seconds=-1))


def test_two_fixed_clocks_read_alike() -> None:
    a, b = FixedClock(), FixedClock()
    assert [a.now() for _ in range(5)] == [b.now() for _ in range(5)]


def test_fixed_clock_is_thread_safe() -> None:
    clock = FixedClock(step=timedelta(microseconds=1))
    seen: list[datetime] = []
    lock = threading.Lock()

    def read() -> None:
        for _ in range(500):
            value = clock.now()
            with lock:
                seen.append(value)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(seen)) == 2000


def test_sequential_ids() -> None:
    ids = SequentialIds()
    assert ids.new("run") == "run_00000000000000000000000000000001"
    assert ids.new("run") == "run_00000000000000000000000000000002"
    assert ids.new("inv") == "inv_00000000000000000000000000000001"
    assert ids.new("wt", 8) == "wt_00000001"


def test_sequential_ids_with_a_seed_do_not_collide() -> None:
    a, b = SequentialIds("lab-a"), SequentialIds("lab-b")
    first_a, first_b = a.new("run"), b.new("run")
    assert first_a != first_b
    assert len(first_a) == len("run_") + 32
    assert first_a.endswith("0001")
    assert SequentialIds("lab-a").new("run") == first_a


def test_random_ids_have_the_asked_length() -> None:
    ids = RandomIds()
    assert len(ids.new("evt")) == 4 + 32
    assert len(ids.new("wt", 8)) == 3 + 8
    assert len(ids.new("x", 40)) == 2 + 40
    assert ids.new("run") != ids.new("run")


def test_system_clock_is_aware_utc() -> None:
    now = SystemClock().now()
    assert now.tzinfo is UTC


def test_formats() -> None:
    moment = datetime(2026, 12, 1, 9, 30, 0, 123456, tzinfo=UTC)
    assert rfc3339(moment) == "2026-12-01T09:30:00.123456Z"
    assert rfc3339_millis(moment) == "2026-12-01T09:30:00.123Z"
    assert epoch_ms(moment) == 1796117400123
    assert parse_rfc3339("2026-12-01T09:30:00.123456Z") == moment
    assert parse_rfc3339("2026-12-01T10:30:00.123456+01:00") == moment
    with pytest.raises(ValueError, match="time zone"):
        parse_rfc3339("2026-12-01T09:30:00")


def test_a_fixed_clock_resumes_where_another_stands() -> None:
    clock = FixedClock(step=timedelta(seconds=1))
    for _ in range(5):
        clock.now()
    assert clock.readings == 5
    settings = clock_settings(clock)
    assert settings == {"kind": "fixed", "start": "2026-01-01T00:00:00Z",
                        "stepMicroseconds": 1_000_000, "readings": 5}
    resumed = clock_from_settings(settings)
    assert resumed.now() == clock.now() == datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    with pytest.raises(ValueError, match="readings must not be negative"):
        FixedClock(readings=-1)


def test_sequential_ids_resume_where_others_stand() -> None:
    ids = SequentialIds("seed")
    ids.new("run")
    ids.new("evt")
    ids.new("evt")
    assert ids.counters == {"run": 1, "evt": 2}
    settings = ids_settings(ids)
    assert settings == {"kind": "sequential", "prefixSeed": "seed",
                        "counters": {"evt": 2, "run": 1}}
    resumed = ids_from_settings(settings)
    assert resumed.new("evt") == ids.new("evt")
    with pytest.raises(ValueError, match="non-negative integers"):
        SequentialIds(counters={"run": -1})


def test_only_the_deterministic_pair_can_be_rebuilt() -> None:
    assert clock_settings(SystemClock()) is None
    assert ids_settings(RandomIds()) is None
    with pytest.raises(ValueError, match="not a fixed clock's settings"):
        clock_from_settings({"kind": "system"})
    with pytest.raises(ValueError, match="not sequential ids' settings"):
        ids_from_settings({"kind": "random"})


@settings(max_examples=500, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)),
                                               timezone(timedelta(hours=-8))])))
def test_rfc3339_is_isoformat_in_utc_with_z(moment: datetime) -> None:
    """The per-second cache writes exactly what ``astimezone(UTC).isoformat()`` writes,
    microseconds of 0 (no fraction) and other offsets included."""
    expected = moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
    assert rfc3339(moment) == expected
    assert rfc3339(moment.replace(microsecond=0)) == expected.split(".")[0].removesuffix(
        "Z") + "Z"


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
def test_random_ids_never_repeat_across_threads_and_a_fork() -> None:
    """Ids come from urandom read in blocks: threads never share bytes, and a forked child
    does not hand out what its parent will."""
    ids = RandomIds()
    seen: list[list[str]] = [[] for _ in range(4)]

    def mint(out: list[str]) -> None:
        out.extend(ids.new("x") for _ in range(2000))

    threads = [threading.Thread(target=mint, args=(out,)) for out in seen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    minted = [i for out in seen for i in out]
    assert len(set(minted)) == len(minted) == 8000
    assert all(i[2:][12] == "4" and i[2:][16] in "89ab" for i in minted)  # UUID v4 bits
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, then leave at once
        os.write(write, " ".join(ids.new("x") for _ in range(5)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = pipe.read().split()
    parent = [ids.new("x") for _ in range(5)]
    assert len(child) == 5 and not set(child) & set(parent)


@pytest.mark.parametrize("count", [0, 1, 2, 10_000])
def test_random_ids_in_bulk_are_uuid4_ids_as_new_mints_them(count: int) -> None:
    """``RandomIds.many`` (one read of entropy for a persist state's records) gives
    ``count`` distinct ids of the form ``new`` gives: the prefix and 32 hex digits of a
    UUID v4 with RFC 4122's variant."""
    minted = RandomIds().many("jrn", count)
    assert len(minted) == len(set(minted)) == count
    for ident in minted:
        prefix, _, digits = ident.partition("_")
        parsed = uuid.UUID(hex=digits)
        assert prefix == "jrn" and digits == parsed.hex
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
    assert {len(i) for i in minted} <= {len(RandomIds().new("jrn"))}


def test_many_ids_are_the_ids_new_would_mint_in_order() -> None:
    """Sequential ids in bulk continue the same counters; a factory with only ``new`` is
    asked once per id."""
    bulk, single = SequentialIds("seed"), SequentialIds("seed")
    bulk.new("jrn")
    single.new("jrn")
    assert many_ids(bulk, "jrn", 3) == [single.new("jrn") for _ in range(3)]
    assert bulk.counters == single.counters

    class OnlyNew:
        def __init__(self) -> None:
            self.asked = 0

        def new(self, prefix: str, hex_chars: int = 32) -> str:
            self.asked += 1
            return f"{prefix}_{self.asked:0{hex_chars}x}"

    plain = OnlyNew()
    assert many_ids(plain, "jrn", 2) == [f"jrn_{1:032x}", f"jrn_{2:032x}"]
    assert plain.asked == 2


def test_stamps_of_a_fixed_clock_are_its_readings_one_by_one() -> None:
    start = datetime(2026, 12, 1, 9, 30, 59, 999_998, tzinfo=UTC)
    one, other = (FixedClock(start=start, step=timedelta(microseconds=1)) for _ in range(2))
    assert stamps(one, 4) == [rfc3339(other.now()) for _ in range(4)] == [
        "2026-12-01T09:30:59.999998Z", "2026-12-01T09:30:59.999999Z", "2026-12-01T09:31:00Z",
        "2026-12-01T09:31:00.000001Z"]
    assert stamps(one, 0) == []


def test_stamps_of_the_system_clock_are_readings_in_order() -> None:
    before = datetime.now(UTC)
    taken = stamps(SystemClock(), 2000)
    after = datetime.now(UTC)
    moments = [parse_rfc3339(text) for text in taken]
    assert before <= moments[0] and moments == sorted(moments) and moments[-1] <= after
    assert [rfc3339(moment) for moment in moments] == taken


@pytest.mark.parametrize("first", [1_764_666_000_000_001, 1_764_666_000_999_990,
                                   1_764_666_000_000_000, 1_764_665_999_999_995])
def test_stamps_of_the_system_clock_format_each_reading_as_rfc3339(
        first: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Readings within one second (formatted together), across a second and on a whole
    second (no fraction) read as :func:`rfc3339` of each reading."""
    readings = iter(range(first * 1000, (first + 20) * 1000, 1000))
    monkeypatch.setattr("tavernlab.clock.time.time_ns", lambda: next(readings))
    taken = stamps(SystemClock(), 20)
    assert taken == [rfc3339(datetime.fromtimestamp(m // 1_000_000, UTC).replace(
        microsecond=m % 1_000_000)) for m in range(first, first + 20)]


def test_uuid4_digits_in_bulk_are_each_sixteen_bytes_with_the_v4_bits_set() -> None:
    raw = os.urandom(16 * 300 + 5)
    assert _uuid4_hexes(raw) == [
        uuid.UUID(bytes=raw[at:at + 16], version=4).hex for at in range(0, 16 * 300, 16)]
    assert _uuid4_hexes(raw[:15]) == []
    assert [ident.rpartition("_")[0] for ident in RandomIds().many("a b", 2)] == ["a b"] * 2
