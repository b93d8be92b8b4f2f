"""Agent Profiles: roots, message body path, tool budgets and skill policy.

A Profile is frozen into each run as ``input/resolved_profile.json``. Upstream defaults that
are unknown are tavernlab choices (docs/tool-calls.md): ``maxRounds`` 50,
``maxCallsPerRun`` 200, ``maxCallsPerTool`` unlimited, an inline result limit of 20 000
characters.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from tavernlab.events import Model
from tavernlab.workspace.ids import check_dir_name
from tavernlab.workspace.policy import DEFAULT_ROOTS, Policy

SESSION_ROOTS: tuple[str, ...] = ("work", "tmp")


class WorkspaceSettings(Model):
    """``workspace.*`` of a Profile."""

    visible_roots: list[str] = Field(default_factory=lambda: list(DEFAULT_ROOTS))
    writable_roots: list[str] = Field(default_factory=lambda: list(DEFAULT_ROOTS))
    message_body_path: str = "output/main.md"
    inline_result_chars: int = Field(default=20_000, ge=1)


class ToolBudgets(Model):
    """``tools.*`` of a Profile: per-run round and call budgets (``None`` = unlimited)."""

    max_rounds: int | None = Field(default=50, ge=1)
    max_calls_per_run: int | None = Field(default=200, ge=1)
    max_calls_per_tool: int | None = Field(default=None, ge=1)


class SkillPolicy(Model):
    """``skills.*`` of a Profile: which installed skills an Invocation may bind.

    ``visible`` is ``"*"`` or a list of names; ``deny`` always wins. ``legacyRunScript``
    turns on the ``skill.run_script`` compatibility mode (off by default).
    """

    visible: Literal["*"] | list[str] = "*"
    deny: list[str] = Field(default_factory=list)
    legacy_run_script: bool = False

    def allows(self, name: str) -> bool:
        """Whether the policy lets an Invocation use the skill ``name``."""
        if name in self.deny:
            return False
        return self.visible == "*" or name in self.visible


class Profile(Model):
    """A resolved agent Profile."""

    id: str = "default"
    workspace: WorkspaceSettings = Field(default_factory=WorkspaceSettings)
    tools: ToolBudgets = Field(default_factory=ToolBudgets)
    skills: SkillPolicy = Field(default_factory=SkillPolicy)

    @field_validator("id")
    @classmethod
    def _id_is_a_name(cls, value: str) -> str:
        return check_dir_name(value, "profile id")

    def to_json(self) -> dict[str, Any]:
        """The Profile as a run stores it (``input/resolved_profile.json``, a sub-agent's
        journal record): every field, ``null`` budgets included, since ``null`` means
        unlimited and must survive being read back (dropping it restored the defaults)."""
        return self.model_dump(mode="json", by_alias=True)

    def policy(self) -> Policy:
        """The effective root policy (adds ``tool-results`` and ``skills``, read-only)."""
        return Policy.from_profile(self.workspace.visible_roots, self.workspace.writable_roots)

    @classmethod
    def session_default(cls) -> Profile:
        """The shared Session Profile's default: ``work/`` and ``tmp/`` writable."""
        return cls(id="session", workspace=WorkspaceSettings(
            visible_roots=list(SESSION_ROOTS), writable_roots=list(SESSION_ROOTS),
            message_body_path="work/main.md"))
