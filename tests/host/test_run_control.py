"""The run-control tools (``workspace.commit``, ``workspace.finish``, ``task.return``) are the
host's own: declared and handled on the host floor, offered by the default registry in the
same place as before."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tavernlab.errors import ToolError
from tavernlab.host import DEFAULT_TOOLS, CallContext, Lab, LabServices, Run, ToolRegistry
from tavernlab.host._registry import run_control_tools
from tavernlab.host._run_control import RUN_CONTROL_TOOLS, RunControlContext
from tavernlab.workspace.tools import WORKSPACE_TOOLS, Arguments, ToolContext

#: The ``put`` fixture (tests/conftest.py): a shell-like unchecked write.
Put = Callable[[Run, str, str], None]

RUN_CONTROL = ("workspace.commit", "workspace.finish", "task.return")


def test_the_run_control_declarations_are_the_hosts() -> None:
    assert [spec.id for spec in RUN_CONTROL_TOOLS] == list(RUN_CONTROL)
    assert [spec.id for spec in run_control_tools(LabServices.shared())] == list(RUN_CONTROL)
    for spec in RUN_CONTROL_TOOLS:
        assert spec.handler.__module__ == "tavernlab.host._run_control", spec.id
        assert spec.available is not None
        assert spec.available.__module__ == "tavernlab.host._run_control", spec.id
    assert not {spec.id for spec in WORKSPACE_TOOLS} & set(RUN_CONTROL)
    assert run_control_tools in DEFAULT_TOOLS


def test_the_default_tools_keep_their_ids_and_order() -> None:
    registry = ToolRegistry.build(None, LabServices.shared())
    assert [spec.id for spec in registry] == [
        "workspace.list_files", "workspace.search_files", "workspace.read_file",
        "workspace.write_file", "workspace.apply_patch", "workspace.commit",
        "workspace.finish", "task.return", "workspace.shell", "skill.run_script",
        "skill.list", "skill.read", "agent.delegate", "agent.await", "agent.handoff"]
    assert [registry.get(tool_id).model_name for tool_id in RUN_CONTROL  # type: ignore[union-attr]
            ] == ["workspace_commit", "workspace_finish", "task_return"]


def test_the_hosts_call_context_is_a_run_control_context(run: Run) -> None:
    call = CallContext(run._core, run.internals.main, "call_x", "workspace.finish", 1)
    assert isinstance(call, RunControlContext)
    assert (call.agent_mode, call.is_chat) == ("main", True)


class StorageOnly:
    """A call context with only the storage floor's members (what a host other than
    tavernlab's could give a tool): it forwards them to a real call context."""

    def __init__(self, inner: CallContext) -> None:
        for name in [n for n in vars(ToolContext) if not n.startswith("_")]:
            setattr(self, name, getattr(inner, name))


@pytest.mark.parametrize(("tool", "args", "alias"), [
    ("workspace.commit", {}, "workspace_commit"),
    ("workspace.finish", {}, "workspace_finish"),
    ("task.return", {"summary": "done"}, "task_return"),
])
def test_without_the_hosts_capabilities_run_control_is_not_available(
        run: Run, put: Put, tool: str, args: dict[str, str], alias: str) -> None:
    put(run, "output/main.md", "body")
    status = run.status
    spec = next(spec for spec in RUN_CONTROL_TOOLS if spec.id == tool)
    bare = StorageOnly(CallContext(run._core, run.internals.main, "call_y", tool, 1))
    assert not isinstance(bare, RunControlContext)
    assert spec.available is not None
    assert spec.available(bare) == ("tool.not_available",  # type: ignore[arg-type]
                                    f"{alias} is not available for this task.")
    with pytest.raises(ToolError) as info:
        spec.handler(bare, Arguments(args, spec.arguments))  # type: ignore[arg-type]
    assert (info.value.code, info.value.message) == (
        "tool.not_available", f"{alias} is not available for this task.")
    assert run.internals.explicit_commits == 0
    assert run.status == status
    assert run.chat is not None and run.chat.messages == []


def test_a_run_still_commits_and_finishes_through_them(lab: Lab, put: Put) -> None:
    run = lab.start_run(chat_id="a")
    put(run, "output/main.md", "the message")
    committed = run.call_tool("workspace.commit", {})
    assert (committed.is_error, committed.structured["messageIndex"]) == (False, 0)
    finished = run.call_tool("workspace.finish", {"reason": "done"})
    assert (finished.is_error, finished.content) == (False, "Finished the Agent run.")
    assert run.chat is not None and [m.body for m in run.chat.messages] == ["the message"]
