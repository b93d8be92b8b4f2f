"""Runs that could not replay byte for byte are refused at export, and nothing is written."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.host import Lab, Run
from tavernlab.replay._errors import RunNotExportable

from .conftest import SKILL, deterministic_lab, write_package


def refused(run: Run, target: Path) -> str:
    with pytest.raises(RunNotExportable) as info:
        run.export(target)
    assert not target.exists()
    return info.value.message


HOW = ("build the lab as Lab(path, clock=FixedClock(), ids=SequentialIds()) (from "
       "tavernlab.clock) to record runs that replay byte for byte")


def test_a_run_under_the_system_clock_or_random_ids(tmp_path: Path) -> None:
    run = Lab(tmp_path / "system").start_run(chat_id="a")
    assert refused(run, tmp_path / "a.tavernrun") == (
        f"run `{run.id}` ran under the system clock, so a replay cannot give the same "
        f"bytes: {HOW}")
    run = Lab(tmp_path / "ids", clock=FixedClock()).start_run(chat_id="a")
    assert refused(run, tmp_path / "b.tavernrun") == (
        f"run `{run.id}` ran under random ids, so a replay cannot give the same bytes: {HOW}")
    run = Lab(tmp_path / "clock", ids=SequentialIds()).start_run(chat_id="a")
    assert "ran under the system clock" in refused(run, tmp_path / "c.tavernrun")


def test_a_session_run(tmp_path: Path) -> None:
    lab = deterministic_lab(tmp_path / "lab")
    session = lab.sessions.create()
    run = lab.start_run(session=session.id)
    assert refused(run, tmp_path / "s.tavernrun") == (
        f"run `{run.id}` is a Session run: only Chat runs can be exported (a session's "
        "workspace holds files of its earlier runs, which a replay cannot rebuild)")


def test_a_run_with_a_job_still_running(tmp_path: Path) -> None:
    lab = deterministic_lab(tmp_path / "lab")
    run = lab.start_run(chat_id="a")
    worker = threading.Thread(target=run.js, args=(["-e", "while (true) {}"],))
    worker.start()
    try:
        while not lab.services.js_pool.running_jobs():
            threading.Event().wait(0.01)
        job = run.events(types="js_job_started")[0].payload.job_id
        assert refused(run, tmp_path / "j.tavernrun") == (
            f"run `{run.id}` cannot be exported while js -e while (true) {{}} ({job}) has not "
            "finished")
    finally:
        while worker.is_alive():
            run.cancel()
            worker.join(0.1)


def test_a_skill_that_changed_since_the_run_bound_it(tmp_path: Path) -> None:
    lab = deterministic_lab(tmp_path / "lab")
    lab.skills.install(write_package(tmp_path / "dice", SKILL))
    run = lab.start_run(chat_id="a")
    bound = lab.skills.get("dice").installed_hash
    changed = write_package(tmp_path / "dice2", {**SKILL, "scripts/roll.js": "// gone\n"})
    lab.skills.install(changed, on_conflict="replace")
    now = lab.skills.get("dice").installed_hash
    assert refused(run, tmp_path / "k.tavernrun") == (
        f"skill `dice` changed since run `{run.id}` bound it (bound {bound}, installed now: "
        f"{now})")
