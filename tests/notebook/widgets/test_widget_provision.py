"""ProvisionProgress on real git repositories: phases with their times, the hook output tail,
the queue, failures, and Cancel removing the worktree and its branch."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tavernlab.cancel import CancelToken
from tavernlab.notebook.widgets import ProvisionProgress, progress_for
from tavernlab.notebook.widgets._provision import PREPARE
from tavernlab.worktree import ProvisionCancelledError, WorktreeRuntime
from tavernlab.worktree._errors import BaseRefNotFoundError
from tavernlab.worktree._limits import ProvisionLimits
from tavernlab.worktree._scheduler import ProvisionScheduler

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout on ``main`` (private HOME and git identity) whose ``agentproto.json`` the
    test writes with :func:`commit_setup`."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Tavern Lab")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "lab@example.invalid")
    path = tmp_path / "work" / "app"
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hello\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def commit_setup(repo: Path, setup: str | list[str]) -> None:
    (repo / "agentproto.json").write_text(json.dumps({"worktree": {"setup": setup}}))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "setup")


@pytest.fixture
def runtime() -> Iterator[WorktreeRuntime]:
    """A runtime with its own one-slot scheduler."""
    runtime = WorktreeRuntime(scheduler=ProvisionScheduler(ProvisionLimits(concurrency=1)))
    yield runtime
    runtime.close()
    runtime.scheduler.close()


def new_input(repo: Path, slug: str) -> dict[str, object]:
    return {"repoRoot": str(repo), "slug": slug, "base": "main"}


def phases(progress: ProvisionProgress) -> list[tuple[str, str]]:
    return [(phase.name, phase.outcome) for phase in progress.phases]


def test_a_provision_shows_each_phase_and_the_hook_output(repo: Path,
                                                          runtime: WorktreeRuntime) -> None:
    commit_setup(repo, ["echo installing; echo step two", "echo warned >&2"])
    progress = progress_for("feature")
    out = progress.provision(new_input(repo, "feature"), runtime)
    assert out == {"cwd": str(repo.parent / "_worktrees" / "feature"), "branch": "wt/feature"}
    assert progress.outcome == "ok"
    assert phases(progress) == [(PREPARE, "ok"), ("setup", "ok")]
    assert all(phase.ended is not None for phase in progress.phases)
    assert [(line["stream"], line["line"]) for line in progress.tail] == [
        ("stdout", "installing"), ("stdout", "step two"), ("stderr", "warned")]
    assert progress.settle() and progress.cancel_button.disabled
    progress.close()


def test_cancel_removes_the_worktree_and_its_branch(repo: Path,
                                                   runtime: WorktreeRuntime) -> None:
    commit_setup(repo, "echo started; sleep 60")
    progress = progress_for("slow")
    worktree = repo.parent / "_worktrees" / "slow"

    def click_when_started() -> None:
        for _ in range(2000):
            if any(line["line"] == "started" for line in list(progress.tail)):
                progress.cancel_button.click()
                return
            threading.Event().wait(0.01)

    clicker = threading.Thread(target=click_when_started)
    clicker.start()
    with pytest.raises(ProvisionCancelledError) as caught:
        progress.provision(new_input(repo, "slow"), runtime)
    clicker.join()
    assert not caught.value.interrupted
    assert progress.outcome == "cancelled" and progress.signal.cancelled
    assert phases(progress) == [(PREPARE, "ok"), ("setup", "cancelled")]
    assert not worktree.exists()
    assert git(repo, "branch", "--list", "wt/slow") == ""
    assert str(worktree) not in git(repo, "worktree", "list", "--porcelain")
    assert progress.snapshot_text().splitlines()[0].startswith(
        "Worktree slow: cancelled after ")
    progress.close()


def test_a_queued_provision_shows_its_position(repo: Path, runtime: WorktreeRuntime) -> None:
    commit_setup(repo, "echo ran")
    holder = runtime.scheduler.acquire(os.path.abspath(repo), "someone-else")
    progress = progress_for("queued")

    def release_when_queued() -> None:
        for _ in range(2000):
            if progress.position == 1:
                holder.release()
                return
            threading.Event().wait(0.01)
        holder.release()

    releaser = threading.Thread(target=release_when_queued)
    releaser.start()
    progress.provision(new_input(repo, "queued"), runtime)
    releaser.join()
    assert phases(progress) == [(PREPARE, "ok"), ("queue", "ok"), ("setup", "ok")]
    assert progress.position is None and progress.outcome == "ok"
    progress.close()


def test_an_error_before_progress_shows_as_failed(repo: Path,
                                                  runtime: WorktreeRuntime) -> None:
    progress = progress_for("nobase")
    with pytest.raises(BaseRefNotFoundError):
        progress.provision({"repoRoot": str(repo), "slug": "nobase", "base": "nope"}, runtime)
    assert progress.outcome == "failed"
    assert progress.error == ('worktree.base_not_found: base ref `nope` not found; pass base '
                              '(for example "main")')
    assert phases(progress) == [(PREPARE, "failed")]
    progress.close()


class SteppedClock:
    """A clock the test moves by hand (readings from other threads do not move it)."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=self.seconds)

    def monotonic(self) -> float:
        return self.seconds


def test_events_drive_the_phases_with_their_times() -> None:
    """The ``on_progress`` seam on its own: each event comes one second after the last."""
    clock = SteppedClock()
    progress = ProvisionProgress("demo", clock=clock)
    progress.context("notebook")
    for event in ({"kind": "queued", "position": 2, "phase": "deps"},
                  {"kind": "queued", "position": 1, "phase": "deps"},
                  {"kind": "started", "phase": "deps"}, {"kind": "phase", "phase": "deps"},
                  {"kind": "phase", "phase": "setup"}):
        clock.seconds += 1
        progress(event)  # type: ignore[arg-type]
    progress.on_output({"phase": "setup", "stream": "stdout", "line": "compiling"})
    clock.seconds += 1.5
    progress({"kind": "done", "outcome": "ok"})
    clock.seconds += 10
    assert [(p.name, p.outcome, p.seconds(clock.seconds)) for p in progress.phases] == [
        (PREPARE, "ok", 1.0), ("queue", "ok", 2.0), ("deps", "ok", 1.0), ("setup", "ok", 1.5)]
    assert progress.snapshot_text() == "\n".join([
        "Worktree demo: ready in 6.50 s",
        f"  ok        {PREPARE:<40} 1.00 s",
        f"  ok        {'queue':<40} 2.00 s",
        f"  ok        {'deps':<40} 1.00 s",
        f"  ok        {'setup':<40} 1.50 s",
        "  | compiling"])
    data, _ = progress._repr_mimebundle_()
    assert set(data) == {WIDGET_VIEW, "text/plain", "text/html"}
    assert 'data-phase="queue" data-outcome="ok"' in data["text/html"]
    assert "compiling" in data["text/html"]
    progress.close()


def test_the_widget_and_the_observer_it_fills_have_two_names() -> None:
    import tavernlab.notebook as face
    from tavernlab.notebook.widgets._plugin import WidgetProgress

    assert "ProvisionObserver" in face.__all__ and "ProvisionProgress" not in face.__all__
    assert not hasattr(face, "ProvisionProgress")
    adapter = WidgetProgress("named", CancelToken())
    observer: face.ProvisionObserver = adapter  # the widget's adapter fills the protocol
    assert isinstance(adapter.widget, ProvisionProgress) and adapter.widget.slug == "named"
    observer.close("failed")
    assert adapter.widget.outcome == "failed"
