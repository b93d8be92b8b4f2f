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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from tavernlab.host._run_control import RUN_CONTROL_TOOLS
from tavernlab.host._services import LabServices
from tavernlab.shell import ShellResources
from tavernlab.shell import shell_tools as make_shell_tools
from tavernlab.skills import SKILL_COMPAT_TOOLS, run_script_tools
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
    return make_shell_tools(lambda: ShellResources(pool=services.js_pool,
                                                   helper=services.shell_helper))


def legacy_skill_tools(services: LabServices) -> Iterable[ToolSpec]:
    """``skill.run_script`` (on the lab's worker pool), ``skill.list`` and ``skill.read``
    (compatibility mode only)."""
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


class ToolRegistry:
    """The tools of one lab, by id (ids are unique within a registry)."""

    def __init__(self, specs: Iterable[ToolSpec]) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.id in self._specs:
                raise ValueError(f"tool `{spec.id}` is offered twice")
            self._specs[spec.id] = spec

    @classmethod
    def build(cls, tools: Sequence[ToolProvider | ToolSpec] | None, services: LabServices
              ) -> ToolRegistry:
        """The registry of ``tools`` (default :data:`DEFAULT_TOOLS`)."""
        specs: list[ToolSpec] = []
        for item in DEFAULT_TOOLS if tools is None else tools:
            if isinstance(item, ToolSpec):
                specs.append(item)
            else:
                specs.extend(item(services))
        return cls(specs)

    def get(self, tool_id: str) -> ToolSpec | None:
        """The tool ``tool_id``, if the lab has it."""
        return self._specs.get(tool_id)

    def offered(self, profile: Profile) -> list[ToolSpec]:
        """The tools a run with ``profile`` offers, sorted by id (compatibility-mode tools
        only when the Profile enables ``skills.legacyRunScript``)."""
        legacy = profile.skills.legacy_run_script
        return [spec for _, spec in sorted(self._specs.items()) if legacy or not spec.compat]

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._specs.values())

    def __contains__(self, tool_id: object) -> bool:
        return tool_id in self._specs

    def __len__(self) -> int:
        return len(self._specs)

    def __repr__(self) -> str:
        return f"<ToolRegistry {len(self._specs)} tools>"
