"""Invocations: the agents of a run (docs/workspace.md).

An Invocation is one agent inside a run: the main agent, or a return-mode sub-agent that
shares the run workspace with roots filtered by its own Profile. It owns its policy view
(:class:`~tavernlab.workspace.scope.ScopedWorkspaceFs`), its fixed skill bindings and the read
records of its text-tool session.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from tavernlab.workspace.roots import Profile
from tavernlab.workspace.scope import ReadRecords, ScopedWorkspaceFs


class Invocation:
    """One agent of a run with its scoped workspace view, skills and read records."""

    def __init__(self, invocation_id: str, agent_id: str, *,
                 mode: Literal["main", "return"], profile: Profile, scope: ScopedWorkspaceFs,
                 skills: Mapping[str, Any]) -> None:
        self.id = invocation_id
        self.agent_id = agent_id
        self.mode: Literal["main", "return"] = mode
        self.profile = profile
        self.scope = scope
        self.skills = skills
        self.records = ReadRecords()

    def __repr__(self) -> str:
        return f"<Invocation {self.id} agent={self.agent_id} mode={self.mode}>"

    def skill_policy_allows(self, name: str) -> bool:
        """Whether this Invocation's Profile skill policy allows the skill ``name``."""
        return self.profile.skills.allows(name)
