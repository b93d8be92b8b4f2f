"""The one base model of on-disk JSON: its rules, and that every on-disk record uses it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import ValidationError

from tavernlab.events import Event, ToolCallCompleted
from tavernlab.host._retention import RetentionSettings
from tavernlab.host._sessions import SessionRecord
from tavernlab.ondisk import Model
from tavernlab.replay._manifest import BundleManifest
from tavernlab.skills import SkillIndexEntry, SkillScope
from tavernlab.skills._binding import SkillScopeRefs
from tavernlab.skills._package import SkillFileRef
from tavernlab.skills._sidecar import RecommendedContext, Sidecar
from tavernlab.workspace.persist import PersistSnapshot
from tavernlab.workspace.persist._chat import ChatFile
from tavernlab.workspace.records import RunRecord
from tavernlab.workspace.roots import Profile
from tavernlab.worktree._config import AgentprotoConfig, LocalWorktreeConfig

SRC = Path(__file__).resolve().parents[1] / "src" / "tavernlab"

#: Pydantic models that are not files: a worktree tool's arguments.
NOT_ON_DISK = {"worktree/_tool_inputs.py": ["ToolInput"]}


class Sample(Model):
    run_id: str
    size_bytes: int = 0


def test_camel_case_on_disk_either_name_in_python_unknown_keys_kept() -> None:
    read = Sample.model_validate({"runId": "run_1", "sizeBytes": 3, "addedLater": [1]})
    assert (read.run_id, read.size_bytes) == ("run_1", 3)
    assert read.model_dump(by_alias=True) == {"runId": "run_1", "sizeBytes": 3,
                                              "addedLater": [1]}
    assert Sample(run_id="run_2").model_dump(by_alias=True) == {"runId": "run_2",
                                                                "sizeBytes": 0}
    with pytest.raises(ValidationError) as caught:
        Sample.model_validate({"sizeBytes": 1})
    assert caught.value.errors()[0]["loc"] == ("runId",)


def test_every_on_disk_record_model_inherits_the_one_base() -> None:
    for model in (Event, RunRecord, PersistSnapshot, ChatFile, Profile, SessionRecord,
                  RetentionSettings, BundleManifest, SkillScope, SkillIndexEntry, SkillFileRef,
                  SkillScopeRefs, Sidecar, AgentprotoConfig, LocalWorktreeConfig,
                  ToolCallCompleted):
        assert issubclass(model, Model), model


def test_no_other_module_starts_its_own_pydantic_base() -> None:
    own: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    (isinstance(b, ast.Name) and b.id == "BaseModel")
                    or (isinstance(b, ast.Attribute) and b.attr == "BaseModel")
                    for b in node.bases):
                own.setdefault(rel, []).append(node.name)
    assert own == {"ondisk.py": ["Model"], **NOT_ON_DISK}


def test_a_family_narrows_the_base_in_its_own_model() -> None:
    # the skill sidecar: camelCase names only, unknown keys refused
    assert RecommendedContext.model_validate(
        {"defaultBudgetTokens": 5}).default_budget_tokens == 5
    with pytest.raises(ValidationError):
        RecommendedContext.model_validate({"default_budget_tokens": 5})
    with pytest.raises(ValidationError):
        RecommendedContext.model_validate({"defaultBudgetTokens": 5, "extra": 1})
    # the skill index ignores unknown keys instead of keeping them
    scope = SkillScope.model_validate({"kind": "preset", "id": "p", "later": True})
    assert scope.model_dump(by_alias=True) == {"kind": "preset", "id": "p"}
    # the worktree configuration is strict
    with pytest.raises(ValidationError):
        LocalWorktreeConfig.model_validate({"depsCmd": 3})
    assert LocalWorktreeConfig.model_validate({"depsCmd": "make"}).deps_cmd == "make"
