"""The run index: ``index/runs/<run-id>.json`` (a copy of ``run.json``) and
``index/run-summaries/<run-id>.json`` (docs/layout.md), how a lab finds its runs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tavernlab.errors import NotFound
from tavernlab.workspace.records import RunRecord, read_json, write_json
from tavernlab.workspace.roots import check_dir_name


class RunIndex:
    """The index directories of one lab's ``agent-workspaces/``."""

    def __init__(self, workspaces_dir: Path) -> None:
        self.runs_dir = workspaces_dir / "index" / "runs"
        self.summaries_dir = workspaces_dir / "index" / "run-summaries"

    def save(self, run_id: str, record: Mapping[str, Any], summary: Mapping[str, Any] | None
             ) -> None:
        """Write the index entry (``run.json`` as JSON) and, when given, the summary of a
        run."""
        write_json(self.runs_dir / f"{run_id}.json", dict(record))
        if summary is not None:
            write_json(self.summaries_dir / f"{run_id}.json", dict(summary))

    def load(self, run_id: str) -> RunRecord:
        """The indexed ``run.json`` of ``run_id``."""
        check_dir_name(run_id, "run id")
        path = self.runs_dir / f"{run_id}.json"
        if not path.is_file():
            raise NotFound(f"run `{run_id}` was not found in the run index", path=run_id)
        return RunRecord.model_validate(read_json(path))

    def summary(self, run_id: str) -> dict[str, Any] | None:
        """The stored summary, if any."""
        path = self.summaries_dir / f"{run_id}.json"
        return read_json(path) if path.is_file() else None

    def delete(self, run_id: str) -> None:
        """Remove a run's index entry and summary (missing files are fine)."""
        for path in (self.runs_dir / f"{run_id}.json", self.summaries_dir / f"{run_id}.json"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def ids(self) -> list[str]:
        """Every indexed run id."""
        if not self.runs_dir.is_dir():
            return []
        return sorted(p.stem for p in self.runs_dir.glob("*.json"))

    def records(self) -> Iterator[RunRecord]:
        """Every indexed ``run.json``."""
        for run_id in self.ids():
            yield self.load(run_id)
