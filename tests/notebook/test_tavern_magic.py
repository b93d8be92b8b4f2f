"""``%tavern``: the current lab and run, skills, the tree and events; every subcommand, its
options, its rich result and its usage errors."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from notebook_support import Notebook

from tavernlab.clock import DEFAULT_EPOCH, FixedClock, SequentialIds
from tavernlab.host import Lab, Run
from tavernlab.notebook import Subcommand, current_state, register_tavern_command
from tavernlab.notebook._display import EventList, SkillList
from tavernlab.skills import SkillInstallReport
from tavernlab.workspace.scope import TreeNode
from tavernlab.workspace.tools import ToolResult

SKILL = """---
name: hello
description: Says hello.
---
Run `js /skills/hello/scripts/hi.js`.
"""


def _skill(root: Path, text: str = SKILL) -> Path:
    folder = root / "src-skills" / "hello"
    (folder / "scripts").mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text)
    (folder / "scripts" / "hi.js").write_text("console.log('hello from the skill')\n")
    return folder


def test_the_lab_is_created_beside_the_notebook_on_first_use(nb: Notebook, tmp_path: Path
                                                             ) -> None:
    assert not (tmp_path / ".tavernlab").exists()
    lab = nb.cell("%tavern lab").value
    assert isinstance(lab, Lab)
    assert lab.root == tmp_path / ".tavernlab"
    assert (tmp_path / ".tavernlab" / "_tauritavern").is_dir()


def test_lab_path_switches_the_lab_and_forgets_the_run(nb: Notebook, tmp_path: Path) -> None:
    first = current_state(nb.shell).run
    switched = nb.cell(f"%tavern lab '{tmp_path / 'other lab'}' --create").value
    assert switched.root == tmp_path / "other lab"
    assert current_state(nb.shell).run.id != first.id
    nb.cell(f"%config TavernMagics.lab_path = {str(tmp_path / 'configured')!r}")
    assert nb.cell("%tavern lab").value.root == tmp_path / "configured"


def test_run_new_open_finish_and_cancel(nb: Notebook) -> None:
    run = nb.cell("%tavern run new --chat alice --background").value
    assert isinstance(run, Run)
    assert (run.record.target.stable_chat_id, run.record.presentation) == ("alice",
                                                                            "background")
    assert current_state(nb.shell).run is run
    cancelled = nb.cell("%tavern run cancel").value
    assert cancelled.text == f"cancelled 0 running calls or jobs of {run.id}"
    finished = nb.cell("%tavern run finish --reason done").value
    assert isinstance(finished, ToolResult)
    assert (finished.is_error, finished.content) == (False, "Finished the Agent run.")
    assert run.status == "completed"
    reopened = nb.cell(f"%tavern run open {run.id}").value
    assert reopened.id == run.id and current_state(nb.shell).run is reopened


def test_finishing_a_foreground_chat_run_needs_a_commit(nb: Notebook) -> None:
    finished = nb.cell("%tavern run finish").value
    assert (finished.is_error, finished.error_code) == (True,
                                                        "agent.foreground_commit_required")


def test_skills_install_list_and_bind(nb: Notebook, tmp_path: Path) -> None:
    source = _skill(tmp_path)
    report = nb.cell(f"%tavern skill install {source}").value
    assert isinstance(report, SkillInstallReport) and report.installed == ["hello"]
    _skill(tmp_path, SKILL + "\nChanged.\n")
    conflict = nb.cell(f"%tavern skill install {source}")
    assert conflict.error is not None and conflict.error.code == "skill.conflict"
    assert conflict.stdout.startswith("skill.conflict: Skill 'hello' already exists")
    replaced = nb.cell(f"%tavern skill install {source} --replace").value
    assert replaced.replaced == ["hello"]
    listed = nb.cell("%tavern skill list").value
    assert isinstance(listed, SkillList) and [e.name for e in listed] == ["hello"]
    assert nb.cell("%tavern skill list --scope preset:none").value == []
    run = nb.cell("%tavern run new --skills hello --legacy").value
    assert sorted(run.skills) == ["hello"] and run.internals.profile.skills.legacy_run_script
    assert nb.cell("%js /skills/hello/scripts/hi.js").stdout == "hello from the skill\n"


def test_skill_dev_reinstalls_once_per_cell_round(nb: Notebook, tmp_path: Path) -> None:
    source = _skill(tmp_path)
    bound = nb.cell(f"%tavern skill dev {source}")
    assert bound.value.startswith(f"hello: {source} (hash ")
    assert "hello: installed for development" in bound.stdout  # news, not an error
    assert bound.stderr == ""
    nb.cell("%tavern run new --skills hello")
    assert nb.cell("%js /skills/hello/scripts/hi.js").stdout == "hello from the skill\n"
    (source / "scripts" / "hi.js").write_text("console.log('edited')\n")
    edited = nb.cell("%js /skills/hello/scripts/hi.js")  # a new cell is a new round
    assert edited.stdout.startswith("hello: reinstalled (hash ")
    assert edited.stdout.endswith(")\nedited\n") and edited.stderr == ""
    assert nb.cell("%tavern skill dev").value[0].startswith(f"hello: {source} (hash ")


def test_tree_and_events(nb: Notebook) -> None:
    nb.cell("%ws_shell mkdir -p /scratch/a && echo hi > /scratch/a/b.md")
    tree = nb.cell("%tavern tree scratch --static").value
    assert isinstance(tree, TreeNode)
    assert [n.path for n in tree.walk()] == ["scratch", "scratch/a", "scratch/a/b.md"]
    shallow = nb.cell("%tavern tree --depth 0 scratch").value
    assert shallow.children is None
    hidden = nb.cell("%tavern tree --hidden --depth 1").value
    assert "run.json" in [c.name for c in hidden.children or []]
    events = nb.cell("%tavern events").value
    assert isinstance(events, EventList) and len(events) > 5
    last = nb.cell("%tavern events --last 2").value
    assert [e.id for e in last] == [e.id for e in events[-2:]]
    only = nb.cell("%tavern events --no-journal --type tool_call_requested").value
    assert [e.payload.tool_id for e in only] == ["workspace.shell"]


def test_lab_fixed_clock_and_ids_open_a_deterministic_lab(nb: Notebook, tmp_path: Path
                                                         ) -> None:
    lab = nb.cell(f"%tavern lab '{tmp_path / 'fixed'}' --create --fixed-clock --ids demo").value
    assert lab.root == tmp_path / "fixed"
    assert isinstance(lab.clock, FixedClock) and lab.clock.start == DEFAULT_EPOCH
    assert isinstance(lab.ids, SequentialIds) and lab.ids.prefix_seed == "demo"
    run = current_state(nb.shell).run
    assert run.id == SequentialIds("demo").new("run")
    plain = nb.cell(f"%tavern lab '{tmp_path / 'plain'}' --create").value
    assert not isinstance(plain.clock, FixedClock) and not isinstance(plain.ids, SequentialIds)
    refused = nb.cell("%tavern lab --ids demo")
    assert isinstance(refused.error, UsageError)
    assert str(refused.error) == ("%tavern lab: --fixed-clock and --ids need a PATH (they "
                                  "apply when a lab is opened)")
    assert current_state(nb.shell).lab is plain


def test_status_shows_the_lab_run_and_settings(nb: Notebook, tmp_path: Path) -> None:
    before = nb.cell("%tavern status").value
    assert before.text == (f"lab: {tmp_path / '.tavernlab'}\nno current run (one starts on "
                           "first use)\nnew runs start in the chat notebook (shared: the "
                           "kernel does not know this notebook's path (no __session__ or "
                           "JPY_SESSION_NAME))\nsettings: chat_per_notebook=True, "
                           "round_per_cell=True, raise_on_error=True, stream=True")
    nb.cell("%%js\n1")
    after = nb.cell("%tavern status").value
    run = current_state(nb.shell).run
    assert f"Run {run.id} (chat notebook, foreground): calling_model" in after.text
    assert "js jobs: 1" in after.text


def test_help_lists_every_command(nb: Notebook) -> None:
    shown = nb.cell("%tavern?").stdout
    for usage in ("%tavern lab [-h] [--create] [--fixed-clock] [--ids SEED] [PATH]",
                  "%tavern run new [-h] [--chat ID]",
                  "%tavern run open [-h] RUN_ID", "%tavern run finish [-h] [--reason REASON]",
                  "%tavern run cancel [-h]", "%tavern status [-h]",
                  "%tavern skill install [-h] [--replace] [--scope SCOPE] DIR",
                  "%tavern skill list [-h] [--scope SCOPE]",
                  "%tavern tree [-h] [--depth N] [--hidden] [--static] [PATH]",
                  "%tavern events [-h] [--last N] [--type TYPE] [--no-journal]"):
        assert usage in shown, usage
    one = nb.cell("%tavern events -h")
    assert one.error is None and one.stdout.startswith("usage: %tavern events [-h]")


def test_bad_input_is_one_usage_line(nb: Notebook) -> None:
    cases = {
        "%tavern": "%tavern: give a command (lab, run new, run open, run finish, run cancel, "
                   "status, skill install, skill list, skill dev, tree, events, mcp serve, "
                   "mcp stop, timeline); `%tavern?` shows their options",
        "%tavern nope": "%tavern: unknown command 'nope' (commands: lab, run new, run open, "
                        "run finish, run cancel, status, skill install, skill list, skill dev, "
                        "tree, events, mcp serve, mcp stop, timeline; `%tavern?` shows their "
                        "options)",
        "%tavern run": "%tavern: unknown command 'run' (commands: lab, run new, run open, run "
                       "finish, run cancel, status, skill install, skill list, skill dev, tree, "
                       "events, mcp serve, mcp stop, timeline; `%tavern?` shows their options)",
        "%tavern run new --bogus": "%tavern run new: unrecognized arguments: --bogus",
        "%tavern run open": "%tavern run open: the following arguments are required: RUN_ID",
        "%tavern events --last 0": "%tavern events: argument --last: must be at least 1, got 0",
        "%tavern events --last x": "%tavern events: argument --last: invalid positive value: "
                                   "'x'",
        "%tavern lab 'open": "%tavern: No closing quotation",
    }
    for source, message in cases.items():
        ran = nb.cell(source)
        assert isinstance(ran.error, UsageError), source
        assert str(ran.error) == message
        assert ran.stderr == f"UsageError: {message}\n"


def test_an_unknown_run_is_one_line(nb: Notebook) -> None:
    ran = nb.cell("%tavern run open run_00000000000000000000000000000000")
    assert ran.error is not None
    assert ran.stdout == f"{ran.error.code}: {ran.error.message}\n"


def test_commands_can_be_added_and_replaced(nb: Notebook) -> None:
    def notes(session: object, args: argparse.Namespace) -> str:
        return f"notes on {args.what}"

    register_tavern_command(Subcommand("notes", "show notes", notes,
                                       lambda p: p.add_argument("what")), ip=nb.shell)
    assert nb.cell("%tavern notes now").value == "notes on now"
    assert "%tavern notes [-h] what" in nb.cell("%tavern?").stdout
    with pytest.raises(ValueError, match="already registered"):
        register_tavern_command(Subcommand("tree", "x", notes), ip=nb.shell)
    register_tavern_command(Subcommand("tree", "a widget", lambda s, a: "widget"),
                            replace=True, ip=nb.shell)
    assert nb.cell("%tavern tree").value == "widget"


def test_help_ends_with_examples(nb: Notebook) -> None:
    shown = nb.cell("%tavern?").stdout
    examples = shown.split("Examples\n--------\n", 1)[1]
    assert "%tavern run new --chat notes" in examples and "%tavern tree output" in examples


def test_mcp_serve_serves_the_current_run_and_mcp_stop_ends_it(nb: Notebook) -> None:
    from tavernlab.mcp_client import McpConnection

    run = current_state(nb.shell).run
    served = nb.cell("%tavern mcp serve")
    assert served.error is None
    text = served.value.text
    assert text.startswith(f"serving run {run.id} at http://127.0.0.1:")
    url = text.split(" at ", 1)[1].split(" ", 1)[0]
    again = nb.cell("%tavern mcp serve")
    assert isinstance(again.error, UsageError) and "already serving" in str(again.error)
    with McpConnection(url) as client:
        answer = client.call_tool("workspace_write_file", {"path": "output/mcp.md",
                                                           "content": "from outside"})
        assert answer.is_error is False
    assert run.read("output/mcp.md") == "from outside"
    assert any(e.type == "tool_call_completed" for e in run.events())
    assert nb.cell("%tavern mcp stop").value.text == f"stopped serving run {run.id}"
    assert nb.cell("%tavern mcp stop").value.text == "no MCP server is running"
    assert run.status not in ("completed", "failed", "cancelled")
    written = nb.cell("%%ws_shell\ncat output/mcp.md")  # the notebook's cells go on
    assert written.stdout == "from outside"
