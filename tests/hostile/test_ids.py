"""Deterministic ids never collide with records that exist.

A lab built with a fixed clock and sequential ids (``Lab(path, clock=FixedClock(),
ids=SequentialIds(SEED))``, or ``%tavern lab PATH --fixed-clock --ids SEED``) and opened
again with the same seed continues after the ids it already handed out: a run in another
chat does not take an existing run's id (and index entry), a run in the same chat does not
fail on an existing run directory, a reopened run's new agent and jobs get new ids, and two
processes with one seed on one lab never mint the same id. Where a lab holds records its
reservations do not know of, a new id that a record holds is refused, never written over.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.terminal.interactiveshell import TerminalInteractiveShell
from IPython.testing.globalipapp import start_ipython

import tavernlab
from tavernlab.clock import RESERVE_BLOCK, FixedClock, SequentialIds
from tavernlab.errors import InvalidData
from tavernlab.host import Lab, Run
from tavernlab.host._reservations import FILE_NAME
from tavernlab.replay import replay

SEED = "hostile-ids"
SRC = Path(__file__).resolve().parents[2] / "src"


def _lab(root: Path) -> Lab:
    return Lab(root, clock=FixedClock(), ids=SequentialIds(SEED))


def _finished_run(lab: Lab, chat: str) -> Run:
    """A run of ``chat`` that wrote, committed and finished (so it published a persist
    state)."""
    run = lab.start_run(chat_id=chat)
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": chat})
    run.call_tool("workspace.write_file", {"path": "persist/notes.md", "content": chat})
    run.call_tool("workspace.commit", {"path": "output/main.md"})
    assert not run.finish().is_error
    return run


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the lab with its bytes, except the reservations file (which grows)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != FILE_NAME and not p.name.endswith(".lock")}


def _unchanged(before: dict[str, bytes], root: Path, *, grown: tuple[str, ...] = ()
               ) -> None:
    """Every file of ``before`` still holds its bytes, except those whose path contains one
    of ``grown``: they may have changed, and a log (``.jsonl``) may only have grown."""
    after = _snapshot(root)
    for path, data in before.items():
        if not any(part in path for part in grown):
            assert after.get(path) == data, path
        elif path.endswith(".jsonl"):
            assert after[path].startswith(data), path


def test_a_run_in_another_chat_does_not_take_an_existing_runs_id(tmp_path: Path) -> None:
    with _lab(tmp_path / "lab") as lab:
        first = _finished_run(lab, "alice")
    before = _snapshot(tmp_path / "lab")
    with _lab(tmp_path / "lab") as lab:
        second = lab.start_run(chat_id="bob")
        assert second.id != first.id
        assert {r.id for r in lab.runs()} == {first.id, second.id}
        assert lab.open_run(first.id).id == first.id
    _unchanged(before, tmp_path / "lab")


def test_a_run_in_the_same_chat_continues_after_the_existing_run(tmp_path: Path) -> None:
    with _lab(tmp_path / "lab") as lab:
        first = _finished_run(lab, "alice")
        state = lab.chat("alice").current_persist_state()
    before = _snapshot(tmp_path / "lab")
    with _lab(tmp_path / "lab") as lab:
        second = _finished_run(lab, "alice")  # used to raise FileExistsError
        assert second.id != first.id
        assert lab.chat("alice").current_persist_state() not in (None, state)
    _unchanged(before, tmp_path / "lab", grown=("host-chats/",))  # the chat's new message


def test_a_run_reopened_by_a_new_lab_gets_new_agent_and_job_ids(tmp_path: Path) -> None:
    with _lab(tmp_path / "lab") as lab:
        run = lab.start_run(chat_id="alice")
        run.js(["-e", "console.log(1)"])
        first_main = run.internals.main.id
    before = _snapshot(tmp_path / "lab")
    with _lab(tmp_path / "lab") as lab:
        reopened = lab.open_run(run.id)
        assert reopened.internals.main.id != first_main
        reopened.js(["-e", "console.log(2)"])
        helper = reopened.start_subagent("helper")
        assert helper.id not in (first_main, reopened.internals.main.id)
        jobs = sorted(p.name for p in (reopened.dir / "js-jobs").iterdir())
        assert len(jobs) == 2
    # the run goes on: its logs grow and its record (and index entry) is updated
    _unchanged(before, tmp_path / "lab", grown=(".jsonl", f"{run.id}.json"))


def test_two_labs_with_one_seed_open_at_once_never_mint_the_same_id(tmp_path: Path) -> None:
    with _lab(tmp_path / "lab") as one, _lab(tmp_path / "lab") as two:
        runs = [one.start_run(chat_id="alice"), two.start_run(chat_id="alice"),
                two.start_run(chat_id="bob"), one.start_run(chat_id="bob")]
        assert len({run.id for run in runs}) == 4
        invocations = {run.internals.main.id for run in runs}
        assert len(invocations) == 4


WORKER = """
import sys
from tavernlab.clock import RESERVE_BLOCK, FixedClock, SequentialIds
from tavernlab.host import Lab
with Lab(sys.argv[1], clock=FixedClock(), ids=SequentialIds(sys.argv[2])) as lab:
    for chat in ("alice", "bob", "carol"):
        run = lab.start_run(chat_id=chat)
        run.call_tool("workspace.write_file", {"path": "output/a.md", "content": chat})
        print(run.id, run.internals.main.id)
"""


def test_processes_with_one_seed_on_one_lab_never_mint_the_same_id(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    with _lab(root) as lab:
        first = _finished_run(lab, "alice")
    before = _snapshot(root)
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(root), SEED], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
    outputs = [worker.communicate(timeout=300) for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], [err for _, err in outputs]
    minted = [line.split() for out, _ in outputs for line in out.splitlines()]
    assert len(minted) == 6
    run_ids = [run_id for run_id, _ in minted] + [first.id]
    assert len(set(run_ids)) == 7
    assert len({invocation for _, invocation in minted}) == 6
    with _lab(root) as lab:
        assert sorted(r.id for r in lab.runs()) == sorted(run_ids)
    _unchanged(before, root)


def test_a_run_recorded_in_a_reopened_lab_replays_identically(tmp_path: Path) -> None:
    with _lab(tmp_path / "lab") as lab:
        _finished_run(lab, "alice")
    with _lab(tmp_path / "lab") as lab:
        run = _finished_run(lab, "alice")
        assert not run.id.endswith("0002")  # it continued after the block reserved before
        bundle = run.export(tmp_path / "again.tavernrun")
    report = replay(bundle)
    assert report.identical, str(report)


def test_a_fresh_lab_mints_the_ids_it_always_minted(tmp_path: Path) -> None:
    with _lab(tmp_path / "lab") as lab:
        assert lab.start_run(chat_id="alice").id == SequentialIds(SEED).new("run")
    reservations = json.loads((tmp_path / "lab" / "_tauritavern" / FILE_NAME).read_text())
    assert reservations["formatVersion"] == 1
    seed = hashlib.sha256(SEED.encode()).hexdigest()
    assert reservations["seeds"][seed]["run"] == RESERVE_BLOCK  # the first block, 1..1024


def test_a_taken_id_is_refused_never_written_over(tmp_path: Path) -> None:
    # a lab whose reservations were lost (or written before they existed)
    root = tmp_path / "lab"
    with _lab(root) as lab:
        first = _finished_run(lab, "alice")
    before = _snapshot(root)
    for chat in ("bob", "alice"):
        (root / "_tauritavern" / FILE_NAME).unlink()
        with _lab(root) as lab, pytest.raises(InvalidData, match=(
                f"^run id `{first.id}` from the lab's id factory is already taken by a run "
                "of this lab; nothing was written")):
            lab.start_run(chat_id=chat)
    assert _snapshot(root) == before


def test_a_damaged_reservations_file_is_refused_when_the_lab_opens(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    with _lab(root) as lab:
        lab.start_run(chat_id="alice")
    (root / "_tauritavern" / FILE_NAME).write_text('{"formatVersion": 1, "seeds": []}')
    with pytest.raises(InvalidData, match="is not a valid record of the lab's deterministic"):
        _lab(root)


@pytest.fixture
def ipython(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
            ) -> Iterator[TerminalInteractiveShell]:
    """IPython's testing shell with the extension loaded, working in ``tmp_path``."""
    start_ipython()
    shell = TerminalInteractiveShell.instance()
    monkeypatch.chdir(tmp_path)
    tavernlab.load_ipython_extension(shell)
    try:
        yield shell
    finally:
        tavernlab.unload_ipython_extension(shell)


def test_the_tavern_lab_magic_reopened_with_its_seed_continues(
        ipython: TerminalInteractiveShell, tmp_path: Path) -> None:
    session = tavernlab.notebook.current_state(ipython)
    minted = []
    for index, chat in enumerate(("alice", "bob", "alice")):
        create = " --create" if index == 0 else ""  # reopened without it: the lab exists
        ipython.run_line_magic("tavern",
                               f"lab {tmp_path / 'lab'} --fixed-clock --ids {SEED}{create}")
        ipython.run_line_magic("tavern", f"run new --chat {chat}")
        minted.append(session.run.id)
    assert len(set(minted)) == 3
    assert len(session.lab.runs()) == 3
