"""Retention (docs/persist.md) and sessions (docs/layout.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tavernlab.errors import InvalidData, NotFound
from tavernlab.host import Lab, Run
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage._fs import WriteGuard


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path / "lab")


def finished_run(lab: Lab, chat: str = "alice") -> Run:
    run = lab.start_run(chat_id=chat, presentation="background")
    run.internals.scope.write_text(WorkspacePath("scratch/notes.md"), "n" * 100,
                                   WriteGuard.unchecked())
    run.call_tool("workspace.list_files", {})
    assert not run.finish().is_error
    return run


def test_retention_slims_and_deletes_by_rank(lab: Lab) -> None:
    oldest, middle, newest = finished_run(lab), finished_run(lab), finished_run(lab, "bob")
    index = lab.workspaces_dir / "index"
    plan = lab.retention.plan({"keepFullRecentRuns": 1, "keepRecentTerminalRuns": 2})
    assert [(r.run_id, r.action) for r in plan.runs] == [(middle.id, "slim"),
                                                         (oldest.id, "delete")]
    assert (plan.slim_runs, plan.delete_runs, plan.kept_runs) == (1, 1, 1)
    limited = lab.retention.plan({"keepFullRecentRuns": 1, "keepRecentTerminalRuns": 2},
                                 detail_limit=1)
    assert (limited.files, limited.bytes) == (plan.files, plan.bytes)
    assert len(limited.runs) == 1 and limited.details_truncated
    slim_before = sum(1 for p in middle.dir.rglob("*") if p.is_file()) - 2
    deleted_before = sum(1 for p in oldest.dir.rglob("*") if p.is_file())
    assert plan.files == slim_before + deleted_before
    result = lab.retention.apply({"keepFullRecentRuns": 1, "keepRecentTerminalRuns": 2})
    assert [r.run_id for r in result.applied] == [middle.id, oldest.id]
    assert result.failed_runs == []
    assert sorted(p.name for p in middle.dir.iterdir()) == ["events.jsonl", "run.json"]
    assert (index / "runs" / f"{middle.id}.json").exists()
    assert (index / "run-summaries" / f"{middle.id}.json").exists()
    assert not oldest.dir.exists()
    assert not (index / "runs" / f"{oldest.id}.json").exists()
    assert not (index / "run-summaries" / f"{oldest.id}.json").exists()
    assert (newest.dir / "scratch" / "notes.md").exists()
    assert result.after_plan.slim_runs == 1 and result.after_plan.delete_runs == 0
    assert lab.chat("alice").persist.state_ids()  # persistent states are never touched


def test_non_terminal_and_anomalous_runs_are_blocked(lab: Lab) -> None:
    active = lab.start_run(chat_id="alice")
    done = finished_run(lab)
    no_event = finished_run(lab)
    events = no_event.dir / "events.jsonl"
    lines = [line for line in events.read_text().splitlines()
             if json.loads(line)["type"] != "run_completed"]
    events.write_text("\n".join(lines) + "\n")
    plan = lab.retention.plan({"keepFullRecentRuns": 0, "keepRecentTerminalRuns": 0})
    blocked = {b.run_id: b.reason for b in plan.blocked_runs}
    assert blocked == {active.id: "run is not terminal (calling_model)",
                       no_event.id: "run has no terminal event"}
    lab.retention.apply({"keepFullRecentRuns": 0, "keepRecentTerminalRuns": 0})
    assert active.dir.exists() and no_event.dir.exists() and not done.dir.exists()


def test_retention_settings(lab: Lab) -> None:
    assert lab.retention.read_settings().keep_recent_terminal_runs == 100
    assert lab.retention.read_settings().keep_full_recent_runs == 20
    assert lab.retention.read_settings().auto_prune_enabled is False
    saved = lab.retention.update_settings(keepFullRecentRuns=5, keepRecentTerminalRuns=10)
    assert saved.keep_full_recent_runs == 5
    stored = json.loads((lab.data_dir / "settings.json").read_text())
    assert stored["agent"]["retention"] == {"autoPruneEnabled": False,
                                            "keepRecentTerminalRuns": 10,
                                            "keepFullRecentRuns": 5}
    for bad in ({"keepFullRecentRuns": 11}, {"keepRecentTerminalRuns": 10_001},
                {"keepFullRecentRuns": -1}):
        with pytest.raises(InvalidData, match=r"invalid agent\.retention"):
            lab.retention.update_settings(**bad)
    assert lab.retention.read_settings().keep_recent_terminal_runs == 10


def test_sessions_layout_runs_and_history(lab: Lab) -> None:
    session = lab.sessions.create("Research")
    assert sorted(p.name for p in session.workspace_dir.iterdir()) == [
        "tmp", "tool-results", "work"]
    assert (lab.workspaces_dir / "sessions" / "profile.json").is_file()
    run = lab.start_run(session=session.id)
    assert run.workspace_dir == session.workspace_dir
    assert run.dir == session.dir / "runs" / run.id
    # (its own id: the run's counter would hand it `call_1`, which the write below takes, and
    # a call id may not repeat in a round)
    listing = run.call_tool("workspace.list_files", {"depth": 1}, call_id="listing")
    assert listing.content == "skills/\ntmp/\ntool-results/\nwork/"
    run.call_tool("workspace.write_file", {"path": "work/n.md", "content": "kept"},
                  call_id="call_1")
    stored = f"tool-results/{run.id}/round-001-call_74196fe72e4cdc13.json"
    assert (session.workspace_dir / stored).is_file()
    assert run.call_tool("workspace.commit", {}).error_code == "tool.not_available"
    assert not run.finish().is_error  # sessions need no commit and publish nothing
    later = lab.start_run(session=session.id)
    assert later.read("work/n.md") == "kept"
    assert (lab.workspaces_dir / "index" / "runs" / f"{later.id}.json").is_file()

    assert session.record.last_used_at is None
    session.append_history(run.id, "user", "hello")
    session.append_history(later.id, "assistant", "hi", origin="model")
    session.append_history(later.id, "user", "again")
    assert session.record.last_used_at is not None
    assert [e.seq for e in session.history()] == [1, 2, 3]
    assert [e.message.content for e in session.history(limit=2)] == ["hi", "again"]
    assert [e.seq for e in session.history(limit=1, before_seq=3)] == [2]
    assert [e.seq for e in session.history(limit=5, after_seq=1)] == [2, 3]
    with pytest.raises(InvalidData, match="not both"):
        session.history(limit=1, before_seq=2, after_seq=1)
    with pytest.raises(InvalidData, match="does not belong"):
        session.append_history("run_elsewhere", "user", "x")

    text = session.history_path.read_text()
    session.history_path.write_text(text + '{"seq": 4')
    with pytest.raises(InvalidData, match="incomplete line"):
        session.history()
    lines = text.splitlines()
    session.history_path.write_text(lines[0] + "\n" + lines[2] + "\n")
    with pytest.raises(InvalidData, match="expected seq 2, found 3"):
        session.history()


def test_session_listing_rename_and_delete(lab: Lab) -> None:
    first = lab.sessions.create("one", session_id="s-a")
    second = lab.sessions.create("two", session_id="s-b")
    assert [s.id for s in lab.sessions.list()][:2] in (["s-b", "s-a"], ["s-a", "s-b"])
    run = lab.start_run(session=first.id)
    first.append_history(run.id, "user", "bump")
    assert [s.id for s in lab.sessions.list()] == ["s-a", "s-b"]
    lab.sessions.rename("s-b", "renamed")
    assert lab.session("s-b").record.title == "renamed"
    with pytest.raises(InvalidData, match="already exists"):
        lab.sessions.create("dup", session_id="s-a")
    lab.sessions.delete("s-a")
    assert not first.dir.exists()
    assert not (lab.workspaces_dir / "index" / "runs" / f"{run.id}.json").exists()
    assert (lab.workspaces_dir / "sessions" / "profile.json").exists()
    lab.sessions.delete("s-a")  # deleting a missing session succeeds
    with pytest.raises(NotFound):
        lab.session("s-a")
    os.symlink(second.dir, lab.workspaces_dir / "sessions" / "s-link")
    with pytest.raises(InvalidData, match="symlink"):
        lab.sessions.list()


def test_auto_prune_runs_when_a_run_finishes(lab: Lab) -> None:
    first = finished_run(lab)
    lab.retention.update_settings(autoPruneEnabled=True, keepFullRecentRuns=0,
                                  keepRecentTerminalRuns=1)
    second = finished_run(lab)
    assert not first.dir.exists()
    assert sorted(p.name for p in second.dir.iterdir()) == ["events.jsonl", "run.json"]
