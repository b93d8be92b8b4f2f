"""The host floor: a tool registry per lab, services a lab may own, old import paths."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import tavernlab
from tavernlab.errors import RunStateError, ToolError
from tavernlab.host import DEFAULT_TOOLS, Lab, LabServices, ToolRegistry
from tavernlab.host._registry import DECLARED_IDS, shell_tools, workspace_tools
from tavernlab.workspace.records import read_json
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.tools import ToolResult, ToolSpec


def test_the_public_surface() -> None:
    from tavernlab import Lab as PublicLab
    from tavernlab import Run, TavernlabError, ToolResult, WorkspacePath, worktree

    assert PublicLab is Lab
    assert {Run.__name__, TavernlabError.__name__, ToolResult.__name__,
            WorkspacePath.__name__} == {"Run", "TavernlabError", "ToolResult", "WorkspacePath"}
    assert worktree.__name__ == "tavernlab.worktree"
    assert sorted(tavernlab.__all__) == ["Lab", "ReplayReport", "Run", "TavernlabError",
                                         "ToolResult", "WorkspacePath",
                                         "load_ipython_extension", "replay", "replay_many",
                                         "unload_ipython_extension", "worktree"]


def test_reload_then_a_new_lab_works(tmp_path: Path) -> None:
    code = ("import importlib, tavernlab.shell._tool as m; importlib.reload(m); "
            "from tavernlab import Lab; "
            f"print(Lab({str(tmp_path / 'x')!r}).start_run(chat_id='a').shell('echo ok').stdout,"
            " end='')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\n", "")


def test_two_labs_with_different_tools_side_by_side(tmp_path: Path) -> None:
    def echo(ctx, args):  # type: ignore[no-untyped-def]
        return ToolResult(content=f"{ctx.tool_id} says {args.string('text')}")

    full = Lab(tmp_path / "full")
    lean = Lab(tmp_path / "lean", tools=[workspace_tools,
                                         ToolSpec("lab.echo", echo, False, "echo", ("text",))])
    a, b = full.start_run(chat_id="a"), lean.start_run(chat_id="a")
    assert a.shell("echo hi").stdout == "hi\n"
    refused = b.call_tool("workspace.shell", {"command": "echo hi"})
    assert (refused.error_code, refused.content) == ("tool.unknown",
                                                     "Unknown tool `workspace.shell`.")
    assert b.call_tool("lab.echo", {"text": "yo"}).content == "lab.echo says yo"
    assert a.call_tool("lab.echo", {"text": "yo"}).error_code == "tool.unknown"
    assert "lab.echo" in {spec.id for spec in b.tools}
    assert "workspace.shell" not in {spec.id for spec in b.tools}


def test_a_registry_refuses_the_same_tool_twice() -> None:
    with pytest.raises(ValueError, match=r"tool `workspace\.list_files` is offered twice"):
        ToolRegistry.build([*DEFAULT_TOOLS, workspace_tools], LabServices.shared())


def test_a_declared_provider_offers_its_declared_ids() -> None:
    services = LabServices.shared()
    for provider, ids in DECLARED_IDS.items():
        assert tuple(spec.id for spec in provider(services)) == ids
        assert provider in DEFAULT_TOOLS


def test_a_lazy_registry_is_the_eager_one() -> None:
    services = LabServices.shared()
    eager = [spec for provider in DEFAULT_TOOLS for spec in provider(services)]
    lazy = ToolRegistry.build(None, services)
    assert len(lazy) == len(eager)
    assert all(spec.id in lazy for spec in eager)  # known before any provider is asked
    shell = lazy.get("workspace.shell")  # asks the shell's provider only
    assert shell is not None and shell.id == "workspace.shell"
    assert lazy.get("workspace.shell") is shell
    assert lazy.get("skill.nope") is None
    assert [spec.id for spec in lazy] == [spec.id for spec in eager]  # the same order
    assert [(s.id, s.description, s.schema, s.compat) for s in lazy.offered(Profile())] == [
        (s.id, s.description, s.schema, s.compat)
        for s in ToolRegistry(eager).offered(Profile())]
    with pytest.raises(ValueError, match=r"tool `workspace\.shell` is offered twice"):
        ToolRegistry.build([*DEFAULT_TOOLS, shell_tools], services)


def test_a_provider_that_breaks_its_declaration_is_an_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(DECLARED_IDS, shell_tools, ("workspace.sh",))
    registry = ToolRegistry.build(None, LabServices.shared())
    with pytest.raises(RuntimeError, match=r"shell_tools offers \('workspace\.shell',\)"):
        registry.get("workspace.sh")


def test_compat_tools_are_offered_only_in_the_legacy_mode(lab: Lab) -> None:
    plain = {spec.id for spec in lab.start_run(chat_id="a").tools}
    legacy = {spec.id for spec in lab.start_run(chat_id="a", legacy_run_script=True).tools}
    assert legacy - plain == {"skill.run_script", "skill.list", "skill.read"}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_closing_a_lab_with_private_services_stops_its_workers(tmp_path: Path) -> None:
    with Lab(tmp_path / "lab", services=LabServices.private(js_workers=1)) as lab:
        run = lab.start_run(chat_id="a")
        assert run.js(["-e", "console.log(6 * 7)"]).stdout == "42\n"
        pids = lab.services.js_pool.worker_pids()
        assert pids and all(_alive(pid) for pid in pids)
        results = []
        job = threading.Thread(target=lambda: results.append(run.js(["-e", "while (true) {}"])))
        job.start()
        while not lab.services.js_pool.running_jobs():
            time.sleep(0.01)
    job.join(timeout=30)
    assert not job.is_alive()
    assert results[0].cancelled and results[0].exit_code != 0
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)
    with pytest.raises(RunStateError, match="is closed"):
        lab.start_run(chat_id="a")


def test_closing_a_lab_on_shared_services_keeps_them(tmp_path: Path) -> None:
    first = Lab(tmp_path / "one")
    first.start_run(chat_id="a").js(["-e", "1"])
    first.close()
    first.close()  # twice is fine
    assert Lab(tmp_path / "two").start_run(chat_id="a").js(
        ["-e", "console.log('still here')"]).stdout == "still here\n"


@pytest.mark.parametrize("old", ["tavernlab.lab", "tavernlab.workspace.runs"])
def test_old_import_paths_are_gone(old: str) -> None:
    import importlib

    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_replay_is_a_plain_package_with_a_replay_function() -> None:
    import types

    from tavernlab.replay import replay

    assert type(tavernlab.replay) is types.ModuleType
    assert tavernlab.replay.replay is replay
    assert not callable(tavernlab.replay)


def test_the_upward_seam_accepts_only_its_listed_names() -> None:
    from tavernlab.host import _presentation as presentation

    assert presentation.UPWARD == ("run.show", "run.export", "agent.run", "agent.start",
                                   "agent.tool_definitions")
    with pytest.raises(ValueError, match=r"'run\.print' is not an upward name of the host"):
        presentation.register_presenter("run.print", print)
    with pytest.raises(ValueError, match=r"'run\.print' is not an upward name"):
        presentation.present("run.print")


def test_version_flag() -> None:
    done = subprocess.run([sys.executable, "-m", "tavernlab.cli", "--version"],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, f"tavernlab {tavernlab.__version__}\n")


def test_a_refused_shell_call_raises_instead_of_printing_nothing(tmp_path: Path) -> None:
    run = Lab(tmp_path / "lab").start_run(
        chat_id="a", profile={"tools": {"maxCallsPerRun": 1}})
    assert run.shell("echo one").stdout == "one\n"
    with pytest.raises(ToolError) as info:
        run.shell("echo two")
    assert (info.value.code, info.value.message) == (
        "agent.tool_budget_exhausted",
        "The tool call limit for this task has been reached (1 calls).")
    failed = run.events(types="tool_call_failed")[-1].payload
    assert failed.error_code == "agent.tool_budget_exhausted"


def test_an_unlimited_budget_survives_reopening(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab")
    profile = Profile()
    profile.tools.max_calls_per_run = None
    run = lab.start_run(chat_id="a", profile=profile)
    run.start_subagent("critic", profile)
    stored = read_json(run.dir / "input" / "resolved_profile.json")
    assert {k: stored["tools"][k] for k in ("maxRounds", "maxCallsPerRun", "maxCallsPerTool",
                                            "externalResultInlineCharLimit")} == {
        "maxRounds": 80, "maxCallsPerRun": None, "maxCallsPerTool": {},
        "externalResultInlineCharLimit": 50000}
    again = lab.open_run(run.id)
    assert again.internals.profile.tools.max_calls_per_run is None
    assert again.subagents[0].profile.tools.max_calls_per_run is None
