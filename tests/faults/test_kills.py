"""kill -9 at random points (seeded) of tool bursts, ``finish``, export and skill install:
after each kill the lab opens, every run reads, exports and replays, and nothing a process
saw done was lost or overwritten."""

from __future__ import annotations

import os
import random
from pathlib import Path

from tavernlab.replay import read_bundle
from tavernlab.workspace.storage import STAGING_DIR_NAME

from .conftest import Ledger, Worked, check_lab, check_skills, deterministic_lab, work

BURST_TRIALS = 5
FINISH_TRIALS = 3
EXPORT_TRIALS = 3
INSTALL_TRIALS = 4


def kill_points(rng: random.Random, operations: int, trials: int) -> list[int]:
    """``trials`` distinct operations to kill at, among the ``operations`` of a full run."""
    return sorted(rng.sample(range(1, operations + 1), min(trials, operations)))


def killed_or_past(worked: Worked, at: int) -> bool:
    """Whether the worker was killed, or made fewer operations than ``at`` this time (a run
    already set up makes a few less than the probe that counted them)."""
    return worked.killed or (worked.operations is not None and worked.operations < at)


def test_kills_in_tool_bursts_lose_no_call_and_leave_nothing_visible(
        tmp_path: Path, rng: random.Random) -> None:
    root = tmp_path / "lab"
    with deterministic_lab(root) as lab:
        run_id = lab.start_run(chat_id="alice").id
    ledger = Ledger()
    full = work(root, "burst", run_id, "--calls", "4", "--tag", "full", "--ids", "faults-full",
                "--trace")
    assert not full.killed and full.operations == len(full.trace)
    ledger.add(run_id, full)
    staged = sum(1 for event, name in full.trace
                 if event == "os.rename" and name.startswith(f"{STAGING_DIR_NAME}/"))
    assert staged  # the port's writes and the run's records both stage
    staging = next(root.rglob(f"runs/{run_id}")) / STAGING_DIR_NAME
    # Random points, and the renames of a staged file (the kill leaves the file staged).
    kills = [["--kill-at", str(at)] for at in kill_points(rng, full.operations, BURST_TRIALS)]
    kills += [["--kill-on", f"os.rename:{STAGING_DIR_NAME}/:{n}"]
              for n in sorted({1, rng.randint(1, staged)})]
    for trial, kill in enumerate(kills):
        worked = work(root, "burst", run_id, "--calls", "4", "--tag", f"t{trial}", *kill,
                      "--ids", f"faults-{trial}")
        assert worked.killed if kill[0] == "--kill-on" else killed_or_past(worked, int(kill[1]))
        ledger.add(run_id, worked)
        if kill[0] == "--kill-on":
            assert os.listdir(staging)  # the kill left its temporary file staged
        check_lab(root, ledger, tmp_path / f"check-{trial}")
        if kill[0] == "--kill-on":
            assert os.listdir(staging) == []  # removed when the run was opened
    after = work(root, "burst", run_id, "--calls", "2", "--tag", "after", "--ids", "faults-after")
    ledger.add(run_id, after)
    check_lab(root, ledger, tmp_path / "check-after")


def test_kills_in_finish_leave_a_run_that_finishes_later(tmp_path: Path,
                                                          rng: random.Random) -> None:
    root = tmp_path / "lab"
    with deterministic_lab(root) as lab:
        runs = [lab.start_run(chat_id="alice").id for _ in range(FINISH_TRIALS + 1)]
    probe = work(root, "finish", runs[0], "--ids", "faults-probe")
    assert probe.lines[-1] == {"finished": True, "status": "completed"}
    assert probe.operations
    ledger = Ledger()
    for trial, (run_id, at) in enumerate(zip(runs[1:], kill_points(
            rng, probe.operations, FINISH_TRIALS), strict=False)):
        assert killed_or_past(work(root, "finish", run_id, "--kill-at", str(at),
                                   "--ids", f"faults-{trial}"), at)
        check_lab(root, ledger, tmp_path / f"check-{trial}")
        again = work(root, "finish", run_id, "--ids", f"faults-again-{trial}")
        assert again.lines[-1]["finished"] is True, again.lines
    check_lab(root, ledger, tmp_path / "check-end")


def test_kills_in_export_leave_no_half_bundle_and_the_run_unchanged(
        tmp_path: Path, rng: random.Random) -> None:
    root = tmp_path / "lab"
    with deterministic_lab(root) as lab:
        run = lab.start_run(chat_id="alice")
        run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "a"})
        run_id = run.id
    out = tmp_path / "out"
    out.mkdir()
    probe = work(root, "export", run_id, "--out", str(out / "probe.tavernrun"))
    assert probe.operations
    run_dir = next(root.rglob(f"runs/{run_id}"))
    before = {n: (run_dir / n).read_bytes() for n in ("events.jsonl", "run.json")}
    for trial, at in enumerate(kill_points(rng, probe.operations, EXPORT_TRIALS)):
        target = out / f"killed-{trial}.tavernrun"
        assert killed_or_past(work(root, "export", run_id, "--out", str(target),
                                   "--kill-at", str(at)), at)
        if target.exists():  # renamed into place before the kill: whole
            assert read_bundle(target).manifest.run_id == run_id
        assert {n: (run_dir / n).read_bytes() for n in before} == before
        check_lab(root, Ledger(), tmp_path / f"check-{trial}")


def test_kills_in_skill_install_leave_every_listed_skill_whole(
        tmp_path: Path, rng: random.Random) -> None:
    root = tmp_path / "lab"
    versions = []
    for number in range(INSTALL_TRIALS + 2):
        folder = tmp_path / f"v{number}" / "demo"
        (folder / "scripts").mkdir(parents=True)
        (folder / "SKILL.md").write_text("---\nname: demo\ndescription: Demo.\n---\n# demo\n")
        (folder / "scripts" / "main.js").write_text(f"console.log({number})\n")
        versions.append(folder)
    first = work(root, "install", "--source", str(versions[0]))
    assert first.lines == [{"action": "installed", "hash": first.lines[0]["hash"]}]
    probe = work(root, "install", "--source", str(versions[1]))
    assert probe.lines[0]["action"] == "replaced" and probe.operations
    for trial, at in enumerate(kill_points(rng, probe.operations, INSTALL_TRIALS)):
        assert killed_or_past(work(root, "install", "--source", str(versions[trial + 2]),
                                   "--kill-at", str(at)), at)
        check_skills(root)
    check_lab(root, Ledger(), tmp_path / "check")
