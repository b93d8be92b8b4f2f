"""The cancel token: a one-way flag, its callbacks, and waiting for it (the event a wait
blocks on is made by the first wait)."""

from __future__ import annotations

import threading

import pytest

from tavernlab.cancel import CancelToken
from tavernlab.errors import Cancelled


def test_a_token_is_not_cancelled_until_cancel_and_then_stays_cancelled() -> None:
    token = CancelToken()
    assert not token.cancelled and token.reason == ""
    token.check()
    assert token.wait(0) is False
    token.cancel("stop")
    token.cancel("again")
    assert token.cancelled and token.reason == "stop"
    with pytest.raises(Cancelled):
        token.check()
    assert token.wait(0) is True and token.wait() is True


def test_a_wait_ends_when_another_thread_cancels() -> None:
    token = CancelToken()
    waited: list[bool] = []
    waiter = threading.Thread(target=lambda: waited.append(token.wait(30)))
    waiter.start()
    while token._event is None:  # the waiter made its event
        threading.Event().wait(0.001)
    token.cancel("now")
    waiter.join(30)
    assert waited == [True]


def test_a_wait_before_cancel_times_out_then_a_later_one_returns_at_once() -> None:
    token = CancelToken()
    assert token.wait(0.01) is False
    token.cancel()
    assert token.wait(30) is True


def test_callbacks_run_once_on_cancel_or_at_once_when_cancelled_already() -> None:
    token = CancelToken()
    calls: list[str] = []
    token.on_cancel(lambda: calls.append("a"))
    unregister = token.on_cancel(lambda: calls.append("b"))
    unregister()
    token.cancel()
    token.cancel()
    token.on_cancel(lambda: calls.append("c"))
    assert calls == ["a", "c"]
