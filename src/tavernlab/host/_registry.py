"""The tools a lab offers: one registry per :class:`~tavernlab.host.Lab`, built from tool
providers.

Engines export their tools as plain tuples of :class:`~tavernlab.workspace.tools.ToolSpec`
(nothing registers at import time, so ``importlib.reload`` of any module and two labs with
different tool sets in one kernel both work). A *provider* is a callable that receives the
lab's :class:`~tavernlab.host.LabServices` and returns specs; a lab built with
``Lab(path, tools=[...])`` accepts providers and specs alike. :data:`DEFAULT_TOOLS` is the set
upstream V5 offers: the workspace tools, the host's run-control tools (commit, finish,
``task.return``), the shell, the legacy skill tools (offered only in the compatibility mode)
and the Agent control tools (which act only in the agent loop).
:func:`worktree_tools` (the seven git worktree tools, on the lab's worktree runtime) is not in
the default set: a lab offers it when given it, ``Lab(path, tools=[*DEFAULT_TOOLS,
worktree_tools])``, and a run's calls to it are then recorded like any other tool call.

The default providers whose tools a first call does not need (the shell, the legacy skill
tools, the Agent control tools) declare the ids they offer (:data:`DECLARED_IDS`): the
registry knows those ids at once (duplicates are refused when the registry is built, as
before) and asks the provider for its specs, importing its module, when one of them is
first looked up or the tools are listed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import cast

from tavernlab.host._run_control import RUN_CONTROL_TOOLS
from tavernlab.host._services import LabServices
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.tools import WORKSPACE_TOOLS, ToolSpec

ToolProvider = Callable[[LabServices], Iterable[ToolSpec]]


def workspace_tools(services: LabServices) -> Iterable[ToolSpec]:
    """``workspace.list_files``, ``workspace.search_files``, ``workspace.read_file``,
    ``workspace.write_file`` and ``workspace.apply_patch`` (the storage floor's tools)."""
    return WORKSPACE_TOOLS


def run_control_tools(services: LabServices) -> Iterable[ToolSpec]:
    """``workspace.commit``, ``workspace.finish`` and ``task.return``: the host's own tools,
    which save a run's message, end the run and complete a sub-agent's invocation."""
    return RUN_CONTROL_TOOLS


def shell_tools(services: LabServices) -> Iterable[ToolSpec]:
    """``workspace.shell``, on the lab's worker pool and helper thread (made when a shell call
    first runs)."""
    from tavernlab.shell import ShellResources
    from tavernlab.shell import shell_tools as make_shell_tools

    return make_shell_tools(lambda: ShellResources(pool=services.js_pool,
                                                   helper=services.shell_helper))


def legacy_skill_tools(services: LabServices) -> Iterable[ToolSpec]:
    """``skill.run_script`` (on the lab's worker pool), ``skill.list`` and ``skill.read``
    (compatibility mode only)."""
    from tavernlab.skills import SKILL_COMPAT_TOOLS, run_script_tools

    return (*run_script_tools(lambda: services.js_pool), *SKILL_COMPAT_TOOLS)


def agent_control_tools(services: LabServices) -> Iterable[ToolSpec]:
    """``agent.delegate``, ``agent.await`` and ``agent.handoff`` (they act in the agent loop
    only)."""
    from tavernlab.host._agent_tools import AGENT_TOOLS

    return AGENT_TOOLS


def worktree_tools(services: LabServices) -> Iterable[ToolSpec]:
    """``worktree.provision``, ``worktree.run-gate``, ``worktree.cleanup``,
    ``worktree.run-script``, ``worktree.start-service``, ``worktree.stop-service`` and
    ``worktree.list-services`` on the lab's worktree runtime (not in :data:`DEFAULT_TOOLS`)."""
    from tavernlab.worktree import worktree_tool_specs

    return worktree_tool_specs(lambda: services.worktree)


#: The tools of a lab built without ``tools=``.
DEFAULT_TOOLS: tuple[ToolProvider, ...] = (workspace_tools, run_control_tools, shell_tools,
                                           legacy_skill_tools, agent_control_tools)

#: The ids a default provider offers, in its order, for the providers the registry asks for
#: their specs only when one of their tools is first looked up (``tests/host/test_lab.py``
#: checks each against what the provider returns).
DECLARED_IDS: dict[ToolProvider, tuple[str, ...]] = {
    shell_tools: ("workspace.shell",),
    legacy_skill_tools: ("skill.run_script", "skill.list", "skill.read"),
    agent_control_tools: ("agent.delegate", "agent.await", "agent.handoff"),
}


class _Later:
    """The tools of a provider with declared ids, asked of it on first use."""

    __slots__ = ("ids", "provider", "services")

    def __init__(self, ids: tuple[str, ...], provider: ToolProvider, services: LabServices
                 ) -> None:
        self.ids = ids
        self.provider = provider
        self.services = services

    def specs(self) -> tuple[ToolSpec, ...]:
        """The provider's specs (which must be the declared ids, in order)."""
        specs = tuple(self.provider(self.services))
        offered = tuple(spec.id for spec in specs)
        if offered != self.ids:
            raise RuntimeError(f"tool provider {self.provider.__name__} offers {offered}, "
                               f"not the declared {self.ids}")
        return specs


class ToolRegistry:
    """The tools of one lab, by id (ids are unique within a registry)."""

    def __init__(self, specs: Iterable[ToolSpec | _Later]) -> None:
        # A tool of a provider not yet asked holds its provider (a _Later) until first use.
        self._specs: dict[str, ToolSpec | _Later] = {}
        self._later = False
        self._lock = threading.Lock()
        for spec in specs:
            for tool_id in spec.ids if isinstance(spec, _Later) else (spec.id,):
                if tool_id in self._specs:
                    raise ValueError(f"tool `{tool_id}` is offered twice")
                self._specs[tool_id] = spec
            self._later = self._later or isinstance(spec, _Later)

    @classmethod
    def build(cls, tools: Sequence[ToolProvider | ToolSpec] | None, services: LabServices
              ) -> ToolRegistry:
        """The registry of ``tools`` (default :data:`DEFAULT_TOOLS`)."""
        specs: list[ToolSpec | _Later] = []
        for item in DEFAULT_TOOLS if tools is None else tools:
            if isinstance(item, ToolSpec):
                specs.append(item)
            elif (ids := DECLARED_IDS.get(item)) is not None:
                specs.append(_Later(ids, item, services))
            else:
                specs.extend(item(services))
        return cls(specs)

    def _made(self, later: _Later) -> None:
        """Ask ``later``'s provider for its specs and put them in place (each keeps its
        position among the tools)."""
        with self._lock:
            if self._specs.get(later.ids[0]) is later:
                for spec in later.specs():
                    self._specs[spec.id] = spec

    def _all(self) -> dict[str, ToolSpec]:
        """Every tool by id, each provider asked first."""
        if self._later:
            for entry in list(self._specs.values()):
                if isinstance(entry, _Later):
                    self._made(entry)
            self._later = False
        return cast("dict[str, ToolSpec]", self._specs)  # every entry is a spec now

    def get(self, tool_id: str) -> ToolSpec | None:
        """The tool ``tool_id``, if the lab has it."""
        entry = self._specs.get(tool_id)
        if isinstance(entry, _Later):
            self._made(entry)
            entry = self._specs[tool_id]
        return cast("ToolSpec | None", entry)

    def offered(self, profile: Profile) -> list[ToolSpec]:
        """The tools a run with ``profile`` offers, sorted by id (compatibility-mode tools
        only when the Profile enables ``skills.legacyRunScript``)."""
        legacy = profile.skills.legacy_run_script
        return [spec for _, spec in sorted(self._all().items()) if legacy or not spec.compat]

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._all().values())

    def __contains__(self, tool_id: object) -> bool:
        return tool_id in self._specs

    def __len__(self) -> int:
        return len(self._specs)

    def __repr__(self) -> str:
        return f"<ToolRegistry {len(self._specs)} tools>"
