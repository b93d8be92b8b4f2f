"""Run retention (docs/persist.md).

Settings live in ``_tauritavern/settings.json`` under ``agent.retention``. Only terminal Chat
runs are ranked (newest ``createdAt`` first, across the whole lab): rank below
``keepFullRecentRuns`` keeps everything; below ``keepRecentTerminalRuns`` the run is
**slimmed** to ``run.json``, ``events.jsonl``, its index entry and its summary; beyond, the
run directory, index entry and summary are deleted. Non-terminal runs, runs without a terminal
event and storage anomalies are reported as ``blockedRuns`` and never touched. Session runs
and ``persistent-states/`` are never touched. With ``autoPruneEnabled`` (default off) a run
that finishes applies the stored settings (tavernlab's choice of when upstream prunes).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

import tavernlab.layout as layout
from tavernlab.errors import InvalidData, TavernlabError
from tavernlab.events import TERMINAL_EVENT_TYPES
from tavernlab.host._index import RunIndex
from tavernlab.locks import file_lock
from tavernlab.ondisk import Model
from tavernlab.workspace.records import RunRecord, dump_model, read_json, write_json

SLIM_KEEP = frozenset({layout.RUN_RECORD, layout.EVENTS})


class RetentionSettings(Model):
    """``agent.retention``."""

    auto_prune_enabled: bool = False
    keep_recent_terminal_runs: int = Field(default=100, ge=0, le=10_000)
    keep_full_recent_runs: int = Field(default=20, ge=0, le=10_000)

    @model_validator(mode="after")
    def _full_within_recent(self) -> RetentionSettings:
        if self.keep_full_recent_runs > self.keep_recent_terminal_runs:
            raise ValueError("keepFullRecentRuns must be <= keepRecentTerminalRuns")
        return self


class RunPlan(Model):
    """What pruning does to one run."""

    run_id: str
    action: Literal["keep", "slim", "delete"]
    rank: int
    files: int
    bytes: int


class BlockedRun(Model):
    """A run pruning will not touch, and why."""

    run_id: str
    reason: str


class PrunePlan(Model):
    """A dry run: totals (independent of ``detailLimit``), per-run details, blocked runs."""

    retention: RetentionSettings
    slim_runs: int = 0
    delete_runs: int = 0
    kept_runs: int = 0
    files: int = 0
    bytes: int = 0
    runs: list[RunPlan] = Field(default_factory=list)
    details_truncated: bool = False
    blocked_runs: list[BlockedRun] = Field(default_factory=list)


class PruneResult(Model):
    """What ``apply`` did, the runs that failed, and the plan afterwards."""

    applied: list[RunPlan] = Field(default_factory=list)
    failed_runs: list[BlockedRun] = Field(default_factory=list)
    after_plan: PrunePlan


class Retention:
    """Settings, ``plan`` and ``apply`` for one lab."""

    def __init__(self, data_dir: Path, workspaces_dir: Path, index: RunIndex) -> None:
        self.data_dir = data_dir
        self.workspaces_dir = workspaces_dir
        self.index = index
        self.settings_path = data_dir / "settings.json"

    # -- settings -------------------------------------------------------------------------------

    def read_settings(self) -> RetentionSettings:
        """The stored settings (defaults when none were saved)."""
        if not self.settings_path.exists():
            return RetentionSettings()
        data = read_json(self.settings_path)
        return RetentionSettings.model_validate(data.get("agent", {}).get("retention", {}))

    def update_settings(self, **changes: Any) -> RetentionSettings:
        """Validate and save new settings (camelCase or snake_case keys); nothing is written
        when they are invalid."""
        merged = {**dump_model(self.read_settings()), **changes}
        try:
            settings = RetentionSettings.model_validate(merged)
        except ValidationError as exc:
            raise InvalidData(f"invalid agent.retention: {exc.errors()[0]['msg']}") from None
        with file_lock(self.data_dir / ".settings.lock"):
            data = read_json(self.settings_path) if self.settings_path.exists() else {}
            data.setdefault("agent", {})["retention"] = dump_model(settings)
            write_json(self.settings_path, data)
        return settings

    # -- planning ------------------------------------------------------------------------------

    def plan(self, retention: RetentionSettings | dict[str, Any] | None = None,
             detail_limit: int | None = None) -> PrunePlan:
        """Dry run: what :meth:`apply` would do now."""
        settings = self._settings(retention)
        plan = PrunePlan(retention=settings)
        ranked: list[tuple[RunRecord, Path]] = []
        for run_id in self.index.ids():
            try:
                record = self.index.load(run_id)
            except (ValidationError, ValueError, OSError) as exc:
                plan.blocked_runs.append(BlockedRun(run_id=run_id, reason=f"unreadable index "
                                                    f"entry: {exc}"))
                continue
            if record.target.kind != "chat":
                continue
            run_dir = self._run_dir(record)
            reason = self._blocked_reason(record, run_dir)
            if reason is not None:
                plan.blocked_runs.append(BlockedRun(run_id=run_id, reason=reason))
                continue
            ranked.append((record, run_dir))
        ranked.sort(key=lambda item: (item[0].created_at, item[0].id), reverse=True)
        details: list[RunPlan] = []
        for rank, (record, run_dir) in enumerate(ranked):
            if rank < settings.keep_full_recent_runs:
                plan.kept_runs += 1
                continue
            action: Literal["slim", "delete"] = (
                "slim" if rank < settings.keep_recent_terminal_runs else "delete")
            files, size = _measure(run_dir, keep=SLIM_KEEP if action == "slim" else frozenset())
            if action == "slim":
                plan.slim_runs += 1
            else:
                plan.delete_runs += 1
            plan.files += files
            plan.bytes += size
            details.append(RunPlan(run_id=record.id, action=action, rank=rank, files=files,
                                   bytes=size))
        if detail_limit is not None and len(details) > detail_limit:
            plan.details_truncated = True
            details = details[:detail_limit]
        plan.runs = details
        return plan

    def _settings(self, retention: RetentionSettings | dict[str, Any] | None
                  ) -> RetentionSettings:
        if retention is None:
            return self.read_settings()
        if isinstance(retention, RetentionSettings):
            return retention
        try:
            return RetentionSettings.model_validate(retention)
        except ValidationError as exc:
            raise InvalidData(f"invalid agent.retention: {exc.errors()[0]['msg']}") from None

    def _run_dir(self, record: RunRecord) -> Path:
        target = record.target
        assert target.kind == "chat"
        return (self.workspaces_dir / "chats" / target.workspace_id / "runs" / record.id)

    def _blocked_reason(self, record: RunRecord, run_dir: Path) -> str | None:
        if run_dir.is_symlink() or not run_dir.is_dir():
            return "run directory is missing"
        try:
            on_disk = RunRecord.model_validate(read_json(run_dir / layout.RUN_RECORD))
        except (OSError, ValueError, ValidationError):
            return "run.json is missing or unreadable"
        if on_disk.id != record.id:
            return "run.json names another run"
        if not on_disk.is_terminal:
            return f"run is not terminal ({on_disk.status})"
        if not _has_terminal_event(run_dir / layout.EVENTS):
            return "run has no terminal event"
        return None

    # -- applying --------------------------------------------------------------------------------

    def apply(self, retention: RetentionSettings | dict[str, Any] | None = None,
              detail_limit: int | None = None) -> PruneResult:
        """Re-plan and prune (serialized lab-wide); a run that fails is listed in
        ``failedRuns`` and the others continue."""
        with file_lock(self.data_dir / ".retention.lock"):
            plan = self.plan(retention, None)
            result = PruneResult(after_plan=plan)
            for item in plan.runs:
                record = self.index.load(item.run_id)
                run_dir = self._run_dir(record)
                try:
                    if item.action == "delete":
                        shutil.rmtree(run_dir)
                        self.index.delete(item.run_id)
                    else:
                        _slim(run_dir)
                except OSError as exc:
                    result.failed_runs.append(BlockedRun(run_id=item.run_id, reason=str(exc)))
                    continue
                result.applied.append(item)
            result.after_plan = self.plan(retention, detail_limit)
        return result


    def auto_prune(self) -> None:
        """Apply retention when ``agent.retention.autoPruneEnabled`` is on (the host calls this
        once a run has ended). A pruning failure never fails the finished run: it is logged,
        and the next finish tries again."""
        if not self.read_settings().auto_prune_enabled:
            return
        try:
            self.apply()
        except (TavernlabError, OSError) as exc:
            logging.getLogger("tavernlab.retention").warning("auto-prune failed: %s", exc)


def _has_terminal_event(path: Path) -> bool:
    if not path.is_file():
        return False
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip() and json.loads(line).get("type") in TERMINAL_EVENT_TYPES:
                return True
    return False


def _measure(run_dir: Path, *, keep: frozenset[str]) -> tuple[int, int]:
    files = size = 0
    for dirpath, _dirnames, filenames in os.walk(run_dir):
        top = dirpath == str(run_dir)
        for name in filenames:
            if top and name in keep:
                continue
            files += 1
            size += os.lstat(os.path.join(dirpath, name)).st_size
    return files, size


def _slim(run_dir: Path) -> None:
    for entry in run_dir.iterdir():
        if entry.name in SLIM_KEEP:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
