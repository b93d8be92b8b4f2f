"""Deterministic time and randomness in jobs: the rule of tavernlab.js._determinism."""

from __future__ import annotations

import hashlib
import json
import struct
import time
from datetime import UTC, datetime, timedelta

from tavernlab.clock import FixedClock, epoch_ms
from tavernlab.js import SkillScriptRequest, run_skill_script
from tavernlab.js._determinism import random_state, time_origin

from .conftest import JsRunner

START = datetime(2026, 8, 20, 12, 0, tzinfo=UTC)
PROBE = ("const readings = [Date.now(), new Date().toISOString(), typeof Date(), "
         "performance.now(), performance.timeOrigin, Date.now()];\n"
         "const randoms = [Math.random(), Math.random(), Math.random()];\n"
         "console.log(JSON.stringify({ readings, randoms }));")


def xoshiro128ss(state: tuple[int, int, int, int], count: int) -> list[float]:
    """Reference: ``count`` values of the documented generator from ``state``."""
    s = list(state)
    mask = 0xFFFFFFFF

    def rotl(x: int, k: int) -> int:
        return ((x << k) | (x >> (32 - k))) & mask

    def step() -> int:
        result = (rotl((s[1] * 5) & mask, 7) * 9) & mask
        t = (s[1] << 9) & mask
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 11)
        return result

    values = []
    for _ in range(count):
        a, b = step(), step()
        values.append(((a >> 5) * 67108864 + (b >> 6)) / 9007199254740992)
    return values


def run_probe(js: JsRunner, **kwargs: object) -> dict[str, list[object]]:
    result = js("-e", PROBE, **kwargs)
    assert (result.exit_code, result.stderr) == (0, "")
    data: dict[str, list[object]] = json.loads(result.stdout)
    return data


def test_the_seed_state_follows_the_documented_rule() -> None:
    digest = hashlib.sha256(b"tavernlab.random:42").digest()
    assert random_state(42) == struct.unpack("<4I", digest[:16])
    assert random_state(None) is None
    assert time_origin(None) is None
    assert time_origin(FixedClock(START)) == epoch_ms(START)


def test_same_origin_and_seed_give_identical_output(js: JsRunner) -> None:
    first = js("-e", PROBE, clock=FixedClock(START), seed=7)
    second = js("-e", PROBE, clock=FixedClock(START), seed=7)
    assert first.exit_code == 0
    assert first.stdout == second.stdout


def test_time_readings_tick_one_millisecond_each(js: JsRunner) -> None:
    origin = epoch_ms(START)
    data = run_probe(js, clock=FixedClock(START), seed=1)
    assert data["readings"] == [origin, "2026-08-20T12:00:00.001Z", "string", 3, origin,
                                origin + 4]


def test_math_random_is_the_seeded_generator(js: JsRunner) -> None:
    data = run_probe(js, clock=FixedClock(START), seed=42)
    state = random_state(42)
    assert state is not None
    assert data["randoms"] == xoshiro128ss(state, 3)
    assert all(0 <= value < 1 for value in xoshiro128ss(state, 1000))


def test_different_seeds_differ(js: JsRunner) -> None:
    one = run_probe(js, seed=1)["randoms"]
    two = run_probe(js, seed=2)["randoms"]
    assert one != two


def test_a_clock_without_a_seed_keeps_engine_randomness(js: JsRunner) -> None:
    first = run_probe(js, clock=FixedClock(START))
    second = run_probe(js, clock=FixedClock(START))
    assert first["readings"] == second["readings"]
    assert first["randoms"] != second["randoms"]


def test_without_clock_and_seed_nothing_changes(js: JsRunner) -> None:
    before = time.time() * 1000
    first = run_probe(js)
    after = time.time() * 1000
    second = run_probe(js)
    now = first["readings"][0]
    assert isinstance(now, int) and before - 1 <= now <= after + 1
    assert first["randoms"] != second["randoms"]


def test_dates_with_arguments_subclasses_and_identity_still_work(js: JsRunner) -> None:
    source = ("class Stamp extends Date {}\n"
              "console.log(JSON.stringify([new Date(5).getTime(), new Date(2020, 0, 1) "
              "instanceof Date, new Stamp().getTime(), new Stamp() instanceof Date, Date.name, "
              "Date.length, Date.prototype.constructor === Date, Date.UTC(2000, 0), "
              "Date.parse('2000-01-01T00:00:00Z'), Object.prototype.toString.call(new Date())]));"
              "\nMath.imul = () => 0;\nconsole.log(Math.random() === Math.random());")
    result = js("-e", source, clock=FixedClock(START), seed=3)
    first, second = result.stdout.splitlines()
    assert json.loads(first) == [5, True, epoch_ms(START), True, "Date", 7, True,
                                 946684800000, 946684800000, "[object Date]"]
    assert second == "false"


def test_the_legacy_engine_takes_the_same_clock_and_seed() -> None:
    request = SkillScriptRequest(
        skill="d", entry="scripts/d.js", args={}, visible_roots=(), writable_roots=(),
        modules={"scripts/d.js": "export default () => [Date.now(), Math.random()];"})
    clock = FixedClock(START, step=timedelta(seconds=1))
    first = run_skill_script(request, clock=clock, seed=9).value
    second = run_skill_script(request, clock=FixedClock(START), seed=9).value
    state = random_state(9)
    assert state is not None
    assert first == second == [epoch_ms(START), xoshiro128ss(state, 1)[0]]
    assert run_skill_script(request, clock=clock, seed=9).value[0] == epoch_ms(START) + 1000
