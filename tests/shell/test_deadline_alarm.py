"""A call's stop is also its deadline alarm: the watchdog rings it once at the deadline while
the call is attached, and never once the call detached (nor reaches the next call)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tavernlab.shell._engine import Watchdog, _Stop


@pytest.fixture
def watchdog() -> Iterator[Watchdog]:
    """A watchdog of its own, whose thread ends with the test."""
    dog = Watchdog()
    yield dog
    with dog._cond:
        dog._forks = -2  # the thread sees it is not its process's watchdog any more, and ends
        dog._cond.notify_all()


class FakeBash:
    """Counts ``cancel()``."""

    def __init__(self) -> None:
        self.cancels = 0
        self.cancelled = threading.Event()

    def cancel(self) -> None:
        self.cancels += 1
        self.cancelled.set()


def test_the_watchdog_rings_an_attached_stop_once_at_its_deadline(watchdog: Watchdog) -> None:
    bash = FakeBash()
    stop = _Stop(time.monotonic() + 0.05)
    stop.attach(bash)  # type: ignore[arg-type]
    watchdog.arm(stop)
    assert bash.cancelled.wait(5)
    time.sleep(0.05)
    assert (bash.cancels, stop.deadline_hit, stop.armed) == (1, True, False)
    stop.fire()  # a second ring does nothing
    stop()  # a cancel callback still stops while attached
    assert bash.cancels == 2
    stop.detach()
    stop()
    assert bash.cancels == 2


def test_a_detached_stop_never_rings_and_an_early_one_is_not_held_up(
        watchdog: Watchdog) -> None:
    late, early = FakeBash(), FakeBash()
    finished = _Stop(time.monotonic() + 0.05)
    finished.attach(late)  # type: ignore[arg-type]
    watchdog.arm(finished)
    finished.detach()  # the call ended in time
    waiting = _Stop(time.monotonic() + 0.1)
    waiting.attach(early)  # type: ignore[arg-type]
    watchdog.arm(waiting)
    assert early.cancelled.wait(5)
    assert (late.cancels, finished.deadline_hit) == (0, False)
    assert (early.cancels, waiting.deadline_hit) == (1, True)
    finished.fire()
    assert (late.cancels, finished.deadline_hit) == (0, False)


def test_many_disarmed_alarms_are_dropped_and_a_later_one_still_rings(
        watchdog: Watchdog) -> None:
    for _ in range(600):  # past the heap's clean-up size
        stop = _Stop(time.monotonic() + 30)
        watchdog.arm(stop)
        stop.detach()
    assert len(watchdog._heap) <= 258
    bash = FakeBash()
    stop = _Stop(time.monotonic() + 0.02)
    stop.attach(bash)  # type: ignore[arg-type]
    watchdog.arm(stop)
    assert bash.cancelled.wait(5) and stop.deadline_hit
