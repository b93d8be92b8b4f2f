"""What the host records so a run can be replayed: where the clock and ids stood when the run
started, the chat's host file before the run, each ``run.js`` job's bytes, and file changes
grouped without wall time under a deterministic clock."""

from __future__ import annotations

import base64
from pathlib import Path

from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.events import Event, FileChanged
from tavernlab.host import Lab
from tavernlab.workspace.records import read_json


def test_the_origin_says_where_the_clock_and_ids_stood(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab", clock=FixedClock(), ids=SequentialIds("seed"))
    lab.chat("alice").add_message("hello")
    readings = lab.clock.readings  # type: ignore[attr-defined]
    counters = lab.ids.counters  # type: ignore[attr-defined]
    run = lab.start_run(chat_id="alice")
    assert read_json(run.dir / "input" / "origin.json") == {
        "clock": {"kind": "fixed", "start": "2026-01-01T00:00:00Z", "stepMicroseconds": 1000,
                  "readings": readings},
        "ids": {"kind": "sequential", "prefixSeed": "seed", "counters": counters}}
    system = Lab(tmp_path / "system").start_run(chat_id="bob")
    assert read_json(system.dir / "input" / "origin.json") == {"clock": None, "ids": None}


def test_the_host_chat_before_the_run_is_kept(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab")
    fresh = lab.start_run(chat_id="new")
    assert not (fresh.dir / "input" / "host_chat.json").exists()
    chat = lab.chat("alice")
    chat.add_message("hello")
    before = chat.path.read_bytes()
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "hi"})
    run.call_tool("workspace.commit", {})
    assert chat.path.read_bytes() != before
    assert (run.dir / "input" / "host_chat.json").read_bytes() == before


def test_a_js_job_keeps_its_bytes(tmp_path: Path) -> None:
    run = Lab(tmp_path / "lab").start_run(chat_id="a")
    run.js(["-e", "console.log('out'); console.error('err')"], stdin=b"\x00\xffbytes",
           eval_name="<cell 3>")
    job = run.events(types="js_job_started")[0].payload.job_id
    assert read_json(run.dir / "js-jobs" / f"{job}.json") == {
        "jobId": job, "evalName": "<cell 3>",
        "stdin": base64.b64encode(b"\x00\xffbytes").decode("ascii"),
        "exitCode": 0, "stdout": "out\n", "stderr": "err\n"}
    run.js(["-e", "console.log(1)"])
    second = run.events(types="js_job_started")[1].payload.job_id
    assert read_json(run.dir / "js-jobs" / f"{second}.json")["stdin"] is None


def test_a_deterministic_lab_journals_a_long_call_when_it_ends(tmp_path: Path) -> None:
    """No flush on a wall-time tick: the first file's record comes once the call has written
    its last file (with the system clock it comes while the call sleeps, see
    ``test_a_long_shell_call_shows_its_files_while_it_runs``)."""
    lab = Lab(tmp_path / "lab", clock=FixedClock(), ids=SequentialIds())
    run = lab.start_run(chat_id="a")
    late = run.workspace_dir / "scratch" / "late.md"
    seen: list[bool] = []

    def watch(record: Event) -> None:
        if isinstance(record, FileChanged) and record.payload.path == "scratch/early.md":
            seen.append(late.exists())

    with run.subscribe(watch):
        result = run.shell("echo hi > /scratch/early.md; sleep 1.2; echo x > /scratch/late.md")
    assert result.exit_code == 0
    assert seen == [True]
