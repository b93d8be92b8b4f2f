"""The helper thread that runs interpreters for main-thread callers
(:class:`tavernlab.shell.MainThreadHelper`)."""

from __future__ import annotations

import threading

import pytest

from tavernlab.shell import MainThreadHelper


def test_calls_run_in_order_on_one_thread_and_hand_back_results_and_errors() -> None:
    helper = MainThreadHelper()
    threads: list[int] = []

    def where(value: int) -> int:
        threads.append(threading.get_ident())
        return value * 2

    calls = [helper.submit(where, n) for n in range(50)]
    assert [call.wait() for call in calls] == [n * 2 for n in range(50)]
    assert len(set(threads)) == 1 and threads[0] != threading.get_ident()
    failing = helper.submit(int, "not a number")
    for _ in range(2):  # a second wait gives the same answer at once
        with pytest.raises(ValueError, match="not a number"):
            failing.wait()
    helper.close()


def test_close_waits_for_the_running_call_and_a_later_submit_starts_a_new_thread() -> None:
    helper = MainThreadHelper()
    started, release = threading.Event(), threading.Event()
    ran_on: list[threading.Thread] = []

    def slow() -> str:
        ran_on.append(threading.current_thread())
        started.set()
        release.wait(5)
        return "done"

    call = helper.submit(slow)
    started.wait(5)
    closer = threading.Thread(target=helper.close)
    closer.start()
    closer.join(0.05)
    assert closer.is_alive()  # still waiting for the running call
    release.set()
    closer.join(5)
    assert not closer.is_alive() and call.wait() == "done"
    assert not ran_on[0].is_alive()  # the thread ended with close()
    assert helper.submit(lambda: 7).wait() == 7
    helper.close()
