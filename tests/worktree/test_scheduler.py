"""The provisioning scheduler (docs/worktrees.md): limits, fairness, caps, load guard."""

from __future__ import annotations

import asyncio
import math
import os
import threading
from concurrent.futures import Future

import pytest

from tavernlab.worktree import (
    CancelToken,
    ProvisionCancelledError,
    ProvisionContext,
    current_provision_context,
    run_with_provision_context,
)
from tavernlab.worktree._limits import ProvisionLimits, parse_cap, parse_provision_limits
from tavernlab.worktree._scheduler import Lease, ProvisionScheduler

INF = math.inf


def snap(s: ProvisionScheduler) -> tuple[float, float, float]:
    view = s.snapshot()
    return view["running"], view["queued"], view["limit"]


def test_env_and_config_concurrency() -> None:
    assert parse_provision_limits({"provisionConcurrency": 1},
                                  {"AGENTPROTO_WORKTREES_PROVISION_CONCURRENCY": "x"}
                                  ).concurrency == 1
    assert parse_provision_limits(None, {}).concurrency == 2
    assert parse_provision_limits({"provisionConcurrency": 1},
                                  {"AGENTPROTO_WORKTREES_PROVISION_CONCURRENCY": "3"}
                                  ).concurrency == 3
    assert parse_provision_limits({}, {"AGENTPROTO_WORKTREES_PROVISION_CONCURRENCY": "0"}
                                  ).concurrency == INF
    assert parse_provision_limits("not an object", {}) == ProvisionLimits()


@pytest.mark.parametrize("value", [-1, 1.5, "lots", None, float("nan"), {}, [], True, "  "])
def test_invalid_caps(value: object) -> None:
    assert parse_cap(value) is None


def test_valid_caps() -> None:
    assert parse_cap(0) == INF
    assert parse_cap("4") == 4
    assert parse_cap(" 2 ") == 2


def test_per_repo_keys() -> None:
    home = os.environ["HOME"]
    limits = parse_provision_limits({"provisionConcurrencyByRepo": {
        "agentik-studio": 1, "/srv/repos/big": 0, "~/code/mine": 3, "bad": -2,
        "alsoBad": "two", "  ": 1}}, {})
    assert dict(limits.per_repo) == {"agentik-studio": 1, "/srv/repos/big": INF,
                                     f"{home}/code/mine": 3}
    assert parse_provision_limits({"provisionConcurrencyByRepo": [1]}, {}).per_repo == {}


def test_load_factor_parsing() -> None:
    assert parse_provision_limits({"provisionLoadFactor": "2"}, {}).load_factor == 0
    assert parse_provision_limits({"provisionLoadFactor": INF}, {}).load_factor == 0
    assert parse_provision_limits({"provisionLoadFactor": 1.5}, {}).load_factor == 1.5


def test_cap_two_grants_at_once() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=2))
    calls: list[int] = []
    a = s.request("/r", on_queued=calls.append)
    b = s.request("/r", on_queued=calls.append)
    assert a.done() and b.done()
    assert s.snapshot() == {"running": 2, "queued": 0, "limit": 2}
    assert calls == []


def test_fifo_for_one_caller() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=1))
    admitted: list[str] = []
    futures = {name: s.request("/r", "one") for name in "abcd"}
    for name, future in futures.items():
        future.add_done_callback(lambda _f, n=name: admitted.append(n))
    for name in "abcd":
        futures[name].result().release()
    assert admitted == ["a", "b", "c", "d"]


def test_burst_across_callers_never_exceeds_cap() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=2))
    peak = 0
    lock = threading.Lock()
    active = 0

    def work(index: int) -> None:
        nonlocal peak, active
        lease = s.acquire("/r", f"caller-{index % 3}")
        with lock:
            active += 1
            peak = max(peak, active)
        with lock:
            active -= 1
        lease.release()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak <= 2
    assert s.snapshot() == {"running": 0, "queued": 0, "limit": 2}


def test_burst_reaches_cap_exactly() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=2))
    futures = [s.request("/r", f"caller-{i % 3}") for i in range(12)]
    peak = s.snapshot()["running"]
    done = 0
    while done < 12:
        ready = [f for f in futures if f.done()]
        peak = max(peak, s.snapshot()["running"])
        ready[0].result().release()
        futures.remove(ready[0])
        done += 1
    assert peak == 2
    assert s.snapshot() == {"running": 0, "queued": 0, "limit": 2}


def test_fairness_quiet_caller_first() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=2))
    first = s.acquire("/r", "chatty")
    s.acquire("/r", "chatty")
    chatty3 = s.request("/r", "chatty")
    quiet1 = s.request("/r", "quiet")
    first.release()
    assert quiet1.done() and not chatty3.done()
    quiet1.result().release()
    assert chatty3.done()


def test_positions() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=1))
    holder = s.acquire("/r", "x")
    seen: dict[str, list[int]] = {"a": [], "b": [], "c": []}
    futures = {name: s.request("/r", "x", on_queued=seen[name].append) for name in "abc"}
    assert seen == {"a": [1], "b": [2], "c": [3]}
    holder.release()
    assert seen["b"] == [2, 1] and seen["c"] == [3, 2]
    futures["a"].result().release()
    assert seen["c"] == [3, 2, 1]


def test_cancel_while_queued() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=1))
    s.acquire("/r", "x")
    signal = CancelToken()
    doomed = s.request("/r", "x", signal=signal)
    positions: list[int] = []
    s.request("/r", "x", on_queued=positions.append)
    signal.cancel()
    with pytest.raises(ProvisionCancelledError,
                       match=r"^worktree provisioning cancelled while queued$"):
        doomed.result()
    assert snap(s) == (1, 1, 1)
    assert positions == [2, 1]


def test_already_cancelled_never_queues() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=1))
    signal = CancelToken()
    signal.cancel()
    with pytest.raises(ProvisionCancelledError, match=r"^worktree provisioning cancelled$"):
        s.acquire("/r", signal=signal)
    assert snap(s) == (0, 0, 1)
    assert ProvisionCancelledError().__class__.__name__ == "ProvisionCancelledError"


def test_cancel_after_grant_and_double_release() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=2))
    signal = CancelToken()
    lease = s.acquire("/r", signal=signal)
    other = s.acquire("/r")
    signal.cancel()
    assert s.snapshot()["running"] == 2
    lease.release()
    lease.release()
    assert s.snapshot()["running"] == 1
    other.release()


def test_per_repo_cap() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=3, per_repo={"studio": 1}))
    studio1 = s.request("/code/studio")
    other1 = s.request("/code/other")
    studio2 = s.request("/code/studio")
    assert studio1.done() and other1.done() and not studio2.done()
    assert snap(s) == (2, 1, 3)
    studio1.result().release()
    assert studio2.done()


def test_per_repo_cap_by_absolute_key_and_global_minimum() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=3, per_repo={"/code/studio": 1}))
    s.acquire("/code/studio")
    assert not s.request("/code/studio").done()
    s = ProvisionScheduler(ProvisionLimits(concurrency=1, per_repo={"studio": 10}))
    s.acquire("/code/studio")
    assert not s.request("/code/studio").done()


def test_inherited_keys_never_match() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=2, per_repo={"studio": 1}))
    s.acquire("/x/constructor")
    assert s.request("/x/constructor").done()


def test_configure_raises_and_lowers() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=1))
    s.acquire("/r")
    waiter = s.request("/r")
    s.configure(ProvisionLimits(concurrency=2))
    assert waiter.done()
    s = ProvisionScheduler(ProvisionLimits(concurrency=3))
    a, b = s.acquire("/r"), s.acquire("/r")
    s.configure(ProvisionLimits(concurrency=1))
    nxt = s.request("/r")
    a.release()
    assert not nxt.done()
    b.release()
    assert nxt.done()
    s = ProvisionScheduler(ProvisionLimits(concurrency=INF))
    leases: list[Future[Lease]] = [s.request("/r") for _ in range(20)]
    assert all(f.done() for f in leases) and s.snapshot()["queued"] == 0


def test_load_guard() -> None:
    load = [12.0]
    s = ProvisionScheduler(ProvisionLimits(concurrency=4, load_factor=1),
                           load_average=lambda: load[0], cpu_count=lambda: 8, load_poll_ms=5)
    first = s.request("/r")
    assert first.done()
    second = s.request("/r")
    assert snap(s) == (1, 1, 4)
    load[0] = 3.0
    second.result(timeout=10)
    assert snap(s) == (2, 0, 4)


def test_load_guard_admits_after_release_on_loaded_host() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=4, load_factor=1),
                           load_average=lambda: 100.0, cpu_count=lambda: 8, load_poll_ms=60000)
    first = s.acquire("/r")
    waiter = s.request("/r")
    assert not waiter.done()
    first.release()
    assert waiter.done()


def test_load_guard_off_by_default_and_cancel_clears_timer() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=4), load_average=lambda: 100.0,
                           cpu_count=lambda: 1)
    s.acquire("/r")
    assert s.request("/r").done()
    guarded = ProvisionScheduler(ProvisionLimits(concurrency=4, load_factor=1),
                                 load_average=lambda: 100.0, cpu_count=lambda: 8,
                                 load_poll_ms=60000)
    guarded.acquire("/r")
    signal = CancelToken()
    held = guarded.request("/r", signal=signal)
    assert guarded.timer_armed
    signal.cancel()
    assert held.exception() is not None
    assert guarded.snapshot()["queued"] == 0 and not guarded.timer_armed


def test_observer_exceptions_are_swallowed() -> None:
    s = ProvisionScheduler(ProvisionLimits(concurrency=1))
    s.acquire("/r")

    def boom(_: int) -> None:
        raise RuntimeError("observer")

    assert not s.request("/r", on_queued=boom).done()


def test_context_visible_inside_only() -> None:
    ctx = ProvisionContext(caller_key="k")
    assert current_provision_context() is None
    assert run_with_provision_context(ctx, current_provision_context) is ctx
    assert current_provision_context() is None

    async def inner() -> ProvisionContext | None:
        await asyncio.sleep(0)
        first = current_provision_context()
        await asyncio.sleep(0)
        assert current_provision_context() is first
        return first

    assert asyncio.run(run_with_provision_context(ctx, inner)) is ctx
    assert current_provision_context() is None
