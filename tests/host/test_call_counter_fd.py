"""The run's call counter keeps its descriptor open between calls and still hands out
numbers no other handle or process hands out: the descriptor is let go when the run ends,
when its lab is closed and in a forked child, and the numbers are those of a counter that
opens the file for every update."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from tavernlab.host import Lab
from tavernlab.host._call_ids import CallCounter
from tavernlab.workspace.storage import CALL_COUNTER_NAME


def open_counters(path: Path) -> int:
    """How many of this process's descriptors are open on ``path``."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == str(path):
                count += 1
        except OSError:
            continue
    return count


class Reopening:
    """The counter as it was: the file opened, locked and closed for every update."""

    def __init__(self, path: Path) -> None:
        self.counter = CallCounter(path)

    def next(self, floor: int = 0) -> int:
        try:
            return self.counter.next(floor)
        finally:
            self.counter.close()

    def note(self, number: int) -> None:
        try:
            self.counter.note(number)
        finally:
            self.counter.close()


def test_the_numbers_and_the_file_are_those_of_a_counter_that_reopens(tmp_path: Path) -> None:
    kept, reopened = CallCounter(tmp_path / "kept"), Reopening(tmp_path / "reopened")
    steps = [("next", 0), ("next", 0), ("next", 5), ("note", 3), ("note", 9), ("next", 2),
             ("next", 0)]
    mine = [getattr(kept, op)(n) for op, n in steps]
    theirs = [getattr(reopened, op)(n) for op, n in steps]
    assert mine == theirs == [1, 2, 6, None, None, 10, 11]
    assert (tmp_path / "kept").read_bytes() == (tmp_path / "reopened").read_bytes() \
        == b"%020d\n" % 11
    assert kept.is_open
    kept.close()
    assert not kept.is_open and open_counters(tmp_path / "kept") == 0
    assert kept.next() == 12  # opened again


def test_two_counters_and_many_threads_never_hand_out_one_number_twice(tmp_path: Path
                                                                         ) -> None:
    path = tmp_path / "calls"
    counters = [CallCounter(path), CallCounter(path)]
    got: list[int] = []
    lock = threading.Lock()

    def work(counter: CallCounter) -> None:
        for _ in range(200):
            number = counter.next()
            with lock:
                got.append(number)

    threads = [threading.Thread(target=work, args=(counters[i % 2],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got) == list(range(1, 1201))
    assert path.read_bytes() == b"%020d\n" % 1200
    for counter in counters:
        counter.close()
    assert open_counters(path) == 0


def test_a_forked_child_counts_on_its_own_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "calls"
    counter = CallCounter(path)
    assert counter.next() == 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the inherited descriptor is gone, a new one counts
        try:
            os.close(read)
            numbers = [counter.next(), counter.next()]
            os.write(write, f"{numbers} {open_counters(path)}".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as handle:
        reported = handle.read()
    os.waitpid(pid, 0)
    assert reported == "[2, 3] 1"
    assert counter.next() == 4
    assert open_counters(path) == 1
    counter.close()


def test_the_descriptor_is_kept_while_the_run_goes_on_and_let_go_when_it_ends(
        tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab")
    run = lab.start_run(session=lab.sessions.create("work").id)
    counter_path = run.dir / CALL_COUNTER_NAME
    for _ in range(3):
        run.call_tool("workspace.list_files", {})
    assert open_counters(counter_path) == 1
    assert not run.finish().is_error
    assert run.status == "completed"
    assert open_counters(counter_path) == 0
    run.resume()  # the next call opens it again
    run.call_tool("workspace.list_files", {})
    assert open_counters(counter_path) == 1
    lab.close()
    assert open_counters(counter_path) == 0


def test_closing_the_lab_lets_the_descriptor_go(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab")
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.list_files", {})
    assert open_counters(run.dir / CALL_COUNTER_NAME) == 1
    lab.close()
    assert open_counters(run.dir / CALL_COUNTER_NAME) == 0
