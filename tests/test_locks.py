"""``tavernlab.locks``: a hold of a leasable lock and a locked open take and release their
``flock`` whatever the block does (the workspace port and the event log rely on it)."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

import pytest

from tavernlab.locks import LeasableLock, locked_open


def _free(path: Path) -> bool:
    """Whether another open file can take the lock exclusively right now."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_a_hold_takes_the_flock_and_lets_it_go_even_on_error(tmp_path: Path) -> None:
    released: list[int] = []
    lock = LeasableLock(tmp_path / "l.lock", on_release=lambda: released.append(1))
    with lock.exclusive():
        assert not _free(lock.path)
    assert _free(lock.path) and released == [1]
    with pytest.raises(ValueError), lock.shared():
        assert not _free(lock.path)
        raise ValueError
    assert _free(lock.path) and released == [1, 1]


def test_a_nested_hold_takes_its_own_flock(tmp_path: Path) -> None:
    """A shared hold inside a shared one of the same thread has a descriptor of its own:
    letting it go leaves the outer hold's flock in place."""
    lock = LeasableLock(tmp_path / "l.lock")
    with lock.shared():
        with lock.shared():
            assert not _free(lock.path)
        assert not _free(lock.path)
    assert _free(lock.path)


def test_an_operation_of_a_lease_that_fails_lets_the_others_in(tmp_path: Path) -> None:
    lock = LeasableLock(tmp_path / "l.lock")
    with lock.lease():
        with pytest.raises(ValueError), lock.exclusive():
            raise ValueError
        assert not _free(lock.path)  # the lease keeps the flock
        done = threading.Event()

        def other() -> None:
            with lock.shared():
                done.set()

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(5)
        assert done.is_set()  # the thread lock was given back
    assert _free(lock.path)


def test_locked_open_holds_the_flock_of_its_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "log.jsonl"
    with locked_open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND) as fd:
        os.write(fd, b"x\n")
        assert not _free(path)
    assert _free(path) and path.read_bytes() == b"x\n"
    with pytest.raises(ValueError), locked_open(path, shared=True):
        raise ValueError
    assert _free(path)
