"""What every fault test shares: running :mod:`fault_worker` as a real process, and the check
made after each fault - the lab opens, every run reads, exports and replays, its logs are
whole and contiguous, its call ids unique, every call a process saw return is recorded with
its stored result and its file, no staging file is visible or published, and every listed
skill's folder holds its entry's files.

``TAVERNLAB_FAULT_SEED`` chooses the random kill points (default 26); the number of trials of
each test is fixed, so the directory's time stays bounded."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.host import Lab, Run
from tavernlab.replay import read_bundle, replay
from tavernlab.skills import SkillRepository, load_directory
from tavernlab.workspace.storage import STAGING_DIR_NAME
from tavernlab.workspace.storage._atomic import TEMP_PREFIX

WORKER = Path(__file__).with_name("fault_worker.py")
#: Longest a worker may take (it is killed, and the test fails, past it).
WORKER_TIMEOUT_S = 120


def fault_seed() -> int:
    """The seed of the random kill points."""
    return int(os.environ.get("TAVERNLAB_FAULT_SEED", "26"))


@pytest.fixture
def rng() -> random.Random:
    """A random generator seeded by :func:`fault_seed`."""
    return random.Random(fault_seed())


def worker_env() -> dict[str, str]:
    """The environment of a worker: this interpreter's ``sys.path`` (the tavernlab under
    test), nothing else changed."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


@dataclass
class Worked:
    """What one worker process did: its exit status, the JSON lines it printed, its
    ``error:`` lines and how many file-system operations it made (when it was not killed)."""

    returncode: int
    lines: list[dict[str, Any]]
    errors: list[str]
    operations: int | None
    stderr: str
    #: ``(event, file name)`` of each operation, in order (``--trace``).
    trace: list[tuple[str, str]] = field(default_factory=list)

    @property
    def killed(self) -> bool:
        """Whether ``SIGKILL`` ended it."""
        return self.returncode == -9


def work(lab: Path, mode: str, *args: str) -> Worked:
    """Run :data:`WORKER` in ``mode`` on ``lab`` to its end (or its kill)."""
    done = subprocess.run([sys.executable, str(WORKER), str(lab), mode, *args],
                          capture_output=True, text=True, env=worker_env(),
                          timeout=WORKER_TIMEOUT_S, check=False)
    lines, errors = [], []
    for line in done.stdout.splitlines():
        if line.startswith("error: "):
            errors.append(line)
        elif line.strip():
            lines.append(json.loads(line))
    operations, trace = None, []
    for line in done.stderr.splitlines():
        if line.startswith("operations: "):
            operations = int(line.split()[1])
        elif line.startswith("op: "):
            _, _, event, *name = line.split(" ", 3)
            trace.append((event, name[0] if name else ""))
    if done.returncode not in (0, -9):
        raise AssertionError(f"worker {mode} failed ({done.returncode}):\n{done.stderr}")
    return Worked(done.returncode, lines, errors, operations, done.stderr, trace)


def deterministic_lab(root: Path, seed: str = "faults") -> Lab:
    """A lab whose runs can be exported (a fixed clock, sequential ids of ``seed``)."""
    return Lab(root, clock=FixedClock(), ids=SequentialIds(seed))


@dataclass
class Ledger:
    """Every call a worker saw return, by run id: what must never be lost or overwritten."""

    calls: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, run_id: str, worked: Worked) -> None:
        self.calls.setdefault(run_id, []).extend(line for line in worked.lines
                                                 if "callId" in line)


def log_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a run log, parsed (an unfinished or broken line fails the test)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"{path.name} ends with an unfinished line"
    return [json.loads(line) for line in data.splitlines()]


def check_run(run: Run, seen: list[dict[str, Any]], scratch: Path) -> None:
    """One run after a fault (see the module docstring)."""
    scratch.mkdir(parents=True, exist_ok=True)
    records = run.events()  # reads
    for name in ("events.jsonl", "journal.jsonl"):
        numbers = [line["seq"] for line in log_lines(run.dir / name)]
        assert numbers == list(range(1, len(numbers) + 1)), f"{name} is not contiguous"
    assert len(records) == sum(len(log_lines(run.dir / n))
                               for n in ("events.jsonl", "journal.jsonl"))
    requested = [r.payload.call_id for r in records if r.type == "tool_call_requested"]
    assert len(requested) == len(set(requested)), "a call id was reused"
    finished = {r.payload.call_id for r in records
                if r.type in ("tool_call_completed", "tool_call_failed")}
    results = {}
    for path in (run.dir / "tool-results").rglob("*.json"):
        stored = json.loads(path.read_text())
        assert stored["callId"] not in results, "two stored results of one call"
        results[stored["callId"]] = stored
    for call in seen:
        assert call["callId"] in finished, f"{call['callId']} was lost"
        assert call["callId"] in results, f"the result of {call['callId']} was lost"
        assert (run.dir / call["path"]).read_text() == call["content"], call["path"]
    for top in ("output", "scratch", "plan", "summaries", "persist", "tool-results"):
        for path in (run.dir / top).rglob("*"):
            assert not path.name.startswith(TEMP_PREFIX), f"litter the model sees: {path}"
    chat = run.chat
    assert chat is not None
    for state_id in chat.persist.state_ids():
        for path in chat.persist.state_dir(state_id).rglob("*"):
            assert not path.name.startswith(TEMP_PREFIX) and path.name != STAGING_DIR_NAME, \
                f"litter published in {state_id}: {path}"
    bundle = run.export(scratch / f"{run.id}.tavernrun")
    assert read_bundle(bundle).manifest.run_id == run.id
    report = replay(bundle, lab=scratch / f"replayed-{run.id}")
    assert report.status in ("identical", "diverged")


def check_skills(root: Path) -> None:
    """Every listed skill's folder holds its entry's files; no install work is left."""
    repository = SkillRepository(root)
    for entry in repository.list():
        folder = repository.package_dir(entry.name, entry.scope)
        (package,) = load_directory(folder).require_valid()
        assert package.installed_hash == entry.installed_hash, entry.name
    if repository.staging_root.exists():
        assert os.listdir(repository.staging_root) == []


def check_lab(root: Path, ledger: Ledger, scratch: Path) -> None:
    """The whole lab after a fault: it opens, and every run and skill checks out."""
    scratch.mkdir(parents=True, exist_ok=True)
    lab = deterministic_lab(root, "faults-check")
    try:
        for record in lab.runs():
            check_run(lab.open_run(record.id), ledger.calls.get(record.id, []),
                      scratch / record.id)
        check_skills(root)
    finally:
        lab.close()
