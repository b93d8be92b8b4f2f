"""A full disk (``RLIMIT_FSIZE``, and a real small tmpfs where one can be mounted) and
descriptor exhaustion (``RLIMIT_NOFILE``), imposed on a
worker process at seeded random points of a tool burst: every failure is one clear
``workspace.file_io`` error naming the file, the logs stay whole, the run goes on once the
resource is back, and the lab then opens and every run reads, exports and replays with no
call lost that a process saw return."""

from __future__ import annotations

import errno
import os
import random
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Ledger, check_lab, deterministic_lab, work

TRIALS = 3
ERROR = re.compile(r"error: FileIo: workspace\.file_io: (\d+): failed to [\w ]+ workspace path "
                   r"`[^`]+`: (.+)")


def started_run(root: Path) -> str:
    with deterministic_lab(root) as lab:
        run = lab.start_run(chat_id="alice")
        run.call_tool("workspace.write_file", {"path": "output/first.md", "content": "1"})
        return run.id


def errors_of(lines: list[str]) -> set[int]:
    """The errno of each error line, every one checked to be a clear ``FileIo`` line."""
    numbers = set()
    for line in lines:
        match = ERROR.fullmatch(line)
        assert match, line
        numbers.add(int(match.group(1)))
    return numbers


def test_a_full_disk_at_any_point_fails_clearly_and_loses_nothing_written(
        tmp_path: Path, rng: random.Random) -> None:
    root = tmp_path / "lab"
    run_id = started_run(root)
    events = next(root.rglob(f"runs/{run_id}/events.jsonl"))
    ledger = Ledger()
    probe = work(root, "burst", run_id, "--calls", "3", "--tag", "probe", "--ids", "probe")
    assert probe.operations and not probe.errors
    ledger.add(run_id, probe)
    seen: set[int] = set()
    for trial in range(TRIALS):
        at = rng.randint(1, probe.operations * 2 // 3)  # before the last call's append
        limit = events.stat().st_size + rng.randint(0, 2000)  # less than a call's records
        worked = work(root, "burst", run_id, "--calls", "3", "--tag", f"t{trial}",
                      "--fsize", str(limit), "--limit-at", str(at), "--ids", f"faults-{trial}")
        assert worked.errors
        seen |= errors_of(worked.errors)
        ledger.add(run_id, worked)
        assert events.read_bytes().endswith(b"\n")
        check_lab(root, ledger, tmp_path / f"check-{trial}")
    assert seen == {errno.EFBIG}
    after = work(root, "burst", run_id, "--calls", "2", "--tag", "after", "--ids", "after")
    assert not after.errors and len(after.lines) == 2  # space is back: the run goes on
    ledger.add(run_id, after)
    check_lab(root, ledger, tmp_path / "check-after")


def test_a_full_disk_mid_append_cuts_the_torn_line_back(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    run_id = started_run(root)
    events = next(root.rglob(f"runs/{run_id}/events.jsonl"))
    before = events.read_bytes()
    worked = work(root, "burst", run_id, "--calls", "1", "--fsize",
                  str(len(before) + 100), "--ids", "torn")  # room for part of one line
    assert errors_of(worked.errors) == {errno.EFBIG}
    assert events.read_bytes() == before  # the part written was cut back off
    check_lab(root, Ledger(), tmp_path / "check")


def test_descriptor_exhaustion_at_any_point_fails_clearly_and_wedges_nothing(
        tmp_path: Path, rng: random.Random) -> None:
    root = tmp_path / "lab"
    run_id = started_run(root)
    ledger = Ledger()
    probe = work(root, "burst", run_id, "--calls", "3", "--tag", "probe", "--ids", "probe")
    assert probe.operations
    ledger.add(run_id, probe)
    seen: set[int] = set()
    for trial in range(TRIALS):
        at = rng.randint(1, probe.operations * 2 // 3)
        worked = work(root, "burst", run_id, "--calls", "3", "--tag", f"t{trial}", "--nofile",
                      "0", "--limit-at", str(at), "--ids", f"faults-{trial}")
        seen |= errors_of(worked.errors)
        # one call fails; the limit is lifted after it, and every later call works
        assert len(worked.errors) == 1 and len(worked.lines) == 2
        ledger.add(run_id, worked)
        check_lab(root, ledger, tmp_path / f"check-{trial}")
    assert seen == {errno.EMFILE}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs mounted for the test (skipped where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False, timeout=30)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False, timeout=30)


def fill(disk: Path, leave: int) -> Path:
    """A file taking all the free space of ``disk`` but about ``leave`` bytes."""
    filler = disk / "filler"
    with filler.open("wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - leave))
    return filler


def test_a_real_full_disk_fails_clearly_keeps_the_run_readable_and_recovers(
        small_disk: Path, tmp_path: Path) -> None:
    root = small_disk / "lab"
    run_id = started_run(root)
    ledger = Ledger()
    filler = fill(small_disk, 8192)
    worked = work(root, "burst", run_id, "--calls", "6", "--tag", "full", "--ids", "full")
    assert worked.errors
    for line in worked.errors:
        assert re.fullmatch(r"error: (FileIo|ToolResult): workspace\.file_io: (28|-): .+", line), \
            line
        assert "No space left on device" in line, line
    ledger.add(run_id, worked)
    events = next(root.rglob(f"runs/{run_id}/events.jsonl"))
    assert events.read_bytes().endswith(b"\n")
    with deterministic_lab(root, "faults-read") as lab:  # readable while the disk is full
        records = lab.open_run(run_id).events()
        assert [r.seq for r in records if r.source == "events"] == list(
            range(1, len(events.read_bytes().splitlines()) + 1))
    filler.unlink()
    after = work(root, "burst", run_id, "--calls", "2", "--tag", "after", "--ids", "after")
    assert not after.errors and len(after.lines) == 2
    ledger.add(run_id, after)
    check_lab(root, ledger, tmp_path / "check")
