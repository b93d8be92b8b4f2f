"""A job's stop request: its wake pipe is reused across jobs, never with a stale wake-up, and
SIGINT is routed to it (and the previous handler restored) in the main thread."""

from __future__ import annotations

import os
import select
import signal
import threading

from tavernlab.cancel import CancelToken
from tavernlab.js._stopping import StopRequest, route_sigint


def readable(fd: int) -> bool:
    return bool(select.select([fd], [], [], 0)[0])


def test_a_closed_request_hands_its_pipe_on_drained() -> None:
    first = StopRequest(None)
    fds = (first.wake_fd, first._write_fd)
    first.wake()
    first.wake()
    assert readable(first.wake_fd)
    first.close()
    first.close()  # closing twice is harmless
    first.wake()  # a late wake-up of a closed request writes nothing
    second = StopRequest(None)
    assert (second.wake_fd, second._write_fd) == fds
    assert not readable(second.wake_fd)
    second.wake()
    assert readable(second.wake_fd)
    second.drain()
    assert not readable(second.wake_fd)
    second.close()


def test_requests_alive_together_have_their_own_pipes() -> None:
    requests = [StopRequest(None) for _ in range(3)]
    assert len({r.wake_fd for r in requests}) == 3
    requests[1].wake()
    assert [readable(r.wake_fd) for r in requests] == [False, True, False]
    for request in requests:
        request.close()


def test_a_cancel_after_close_does_not_reach_the_next_job() -> None:
    token = CancelToken()
    first = StopRequest(token)
    first.close()
    second = StopRequest(None)
    token.cancel()
    assert not readable(second.wake_fd)
    assert first.poll(float("inf")) == "cancel" and second.poll(float("inf")) is None
    second.close()


def test_a_forked_child_never_takes_its_parents_pipes() -> None:
    spare = StopRequest(None)
    fds = {spare.wake_fd, spare._write_fd}
    spare.close()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child reports whether it got a pipe of its own
        child = StopRequest(None)
        os.write(write_end, b"1" if {child.wake_fd, child._write_fd}.isdisjoint(fds) else b"0")
        os._exit(0)
    os.close(write_end)
    assert os.read(read_end, 1) == b"1"
    os.close(read_end)
    os.waitpid(pid, 0)
    again = StopRequest(None)
    assert {again.wake_fd, again._write_fd} == fds  # the parent still reuses its own
    again.close()


def test_sigint_is_routed_to_the_request_and_the_handler_restored() -> None:
    assert threading.current_thread() is threading.main_thread()

    def mine(signum: int, frame: object) -> None:
        raise AssertionError("the routed handler should have run")

    previous = signal.signal(signal.SIGINT, mine)
    try:
        stop = StopRequest(None)
        with route_sigint(stop):
            signal.raise_signal(signal.SIGINT)
            assert stop.keyboard_interrupt and stop.reason == "cancel"
            assert readable(stop.wake_fd)
        assert signal.getsignal(signal.SIGINT) is mine
        stop.close()
    finally:
        signal.signal(signal.SIGINT, previous)


def test_in_another_thread_sigint_stays_untouched() -> None:
    seen: list[object] = []
    before = signal.getsignal(signal.SIGINT)

    def job() -> None:
        stop = StopRequest(None)
        with route_sigint(stop):
            seen.append(signal.getsignal(signal.SIGINT))
        stop.close()

    thread = threading.Thread(target=job)
    thread.start()
    thread.join()
    assert seen == [before]
