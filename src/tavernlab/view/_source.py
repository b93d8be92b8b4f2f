"""Where a viewed run's files come from: a run of a lab, or the recording in a bundle.

:class:`RunFiles` is all the page needs: the run's id, its directory and workspace, the main
agent's view of the workspace (for the tree and its access badges) and its records. A lab's
run is read in place (opening it holds it, as any reader does, and changes nothing). A bundle's
recorded run directory is written out to a temporary directory first (every file by its
digest, as the bundle stores it); its ``skills/`` are not projected into the tree (the bundle
keeps the packages apart, by hash).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import tavernlab.layout as layout
from tavernlab.clock import RANDOM_IDS, SYSTEM_CLOCK
from tavernlab.events import Event, EventLog, JournalLog
from tavernlab.host import Lab, RunFeed
from tavernlab.replay import Bundle
from tavernlab.workspace.records import read_json
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.storage import WorkspaceFs


@dataclass
class RunFiles:
    """A run as files: what the page is built from (``fs`` is the run's own storage, where
    its hidden files are read; ``status`` is the one to show: a lab's run left unfinished by
    a dead process is ``interrupted``, a bundle's is the status it was exported with)."""

    id: str
    status: str
    dir: Path
    workspace_dir: Path
    scope: ScopedWorkspaceFs
    fs: WorkspaceFs
    records: list[Event]
    _temporary: Path | None = field(default=None, repr=False)

    def close(self) -> None:
        """Remove the files a bundle was written out to (nothing for a lab's run)."""
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None


def _records(run_id: str, run_dir: Path) -> list[Event]:
    events = EventLog(run_dir / layout.EVENTS, run_id, clock=SYSTEM_CLOCK, ids=RANDOM_IDS)
    return RunFeed(events, JournalLog(run_dir / layout.JOURNAL, events)).read(None)


def lab_run(lab: Lab, run_id: str) -> RunFiles:
    """The run ``run_id`` of ``lab``, read in place."""
    status = lab.live.shown_status(lab.index.load(run_id))  # before this reader holds it
    run = lab.open_run(run_id)
    return RunFiles(run.id, status, run.dir, run.workspace_dir, run.internals.scope,
                    run.internals.fs,
                    _records(run.id, run.dir))


def bundle_run(bundle: Bundle) -> RunFiles:
    """The recorded run of ``bundle``, written out to a temporary directory."""
    root = Path(tempfile.mkdtemp(prefix="tavernlab-view-"))
    run_dir = root / "run"
    try:
        tree = bundle.manifest.run
        for directory in tree.directories:
            (run_dir / directory).mkdir(parents=True, exist_ok=True)
        for path, digest in tree.files.items():
            target = run_dir / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(bundle.blob(digest))
        profile = Profile.model_validate(read_json(run_dir / layout.RESOLVED_PROFILE))
        fs = WorkspaceFs(run_dir)
        run_id = bundle.manifest.run_id
        status = str(bundle.manifest.record.get("status", ""))
        return RunFiles(run_id, status, run_dir, run_dir,
                        ScopedWorkspaceFs(fs, profile.policy()), fs, _records(run_id, run_dir),
                        root)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
