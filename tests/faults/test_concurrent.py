"""Two processes writing one run while a third follows it: every call of both is recorded
once, with its own id, result and file; the follower sees every record, in order, exactly
once; the lab then opens and the run reads, exports and replays."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from .conftest import (
    WORKER,
    WORKER_TIMEOUT_S,
    Ledger,
    check_lab,
    deterministic_lab,
    work,
    worker_env,
)

CALLS = 12


def test_two_writers_and_a_follower_on_one_run_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    with deterministic_lab(root) as lab:
        run_id = lab.start_run(chat_id="alice").id
    gate = tmp_path / "gate"
    follower = subprocess.Popen(
        [sys.executable, str(WORKER), str(root), "follow", run_id, "--timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=worker_env())
    writers = [subprocess.Popen(
        [sys.executable, str(WORKER), str(root), "burst", run_id, "--calls", str(CALLS),
         "--tag", tag, "--ids", f"faults-{tag}", "--gate", str(gate)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=worker_env())
        for tag in ("a", "b")]
    try:
        waited = 0.0  # both writers open the run, then start at once
        while not all(Path(f"{gate}.{tag}").exists() for tag in ("a", "b")):
            assert waited < WORKER_TIMEOUT_S and all(w.poll() is None for w in writers)
            time.sleep(0.01)
            waited += 0.01
        gate.touch()
        outputs = [w.communicate(timeout=WORKER_TIMEOUT_S) for w in writers]
        assert [w.returncode for w in writers] == [0, 0], [err for _, err in outputs]
        finished = work(root, "finish", run_id, "--ids", "faults-finish")
        assert finished.lines[-1] == {"finished": True, "status": "completed"}
        followed, _ = follower.communicate(timeout=WORKER_TIMEOUT_S)
        assert follower.returncode == 0
    finally:
        for process in (*writers, follower):
            if process.poll() is None:
                process.kill()
            process.wait()
    ledger = Ledger()
    ledger.calls[run_id] = [json.loads(line) for out, _ in outputs
                            for line in out.splitlines()]
    ids = [call["callId"] for call in ledger.calls[run_id]]
    assert len(ids) == 2 * CALLS and len(set(ids)) == 2 * CALLS
    check_lab(root, ledger, tmp_path / "check")
    with deterministic_lab(root, "faults-read") as lab:
        run = lab.open_run(run_id)
        expected = [{"seq": r.seq, "type": r.type, "journal": r.source == "journal"}
                    for r in run.events()]
    seen = [json.loads(line) for line in followed.splitlines()]
    assert seen == expected  # in order, none twice, none missing
    assert [r["type"] for r in seen].count("run_completed") == 1
