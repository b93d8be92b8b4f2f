"""The worktree commands both surfaces share: one rule for ``--worktree PATH|SLUG`` and one
``rm PATH|SLUG``, seen through :mod:`tavernlab.worktree._commands` and through the command
line (the notebook's side is in ``tests/notebook/test_worktree_magic.py``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tavernlab.cli import main
from tavernlab.errors import ToolError
from tavernlab.worktree import (
    CLI,
    NOTEBOOK,
    ProvisionInput,
    Target,
    commands_for,
    gate,
    new_request,
)
from tavernlab.worktree._commands import COMMANDS, add_new_arguments, find_linked, resolve_target
from tavernlab.worktree._tool_inputs import ToolInput
from tavernlab.worktree._tools import call_tool

from .conftest import Repo


def provision(repo: Repo, slug: str) -> str:
    return str(call_tool("worktree.provision", {"repoRoot": repo.root, "slug": slug,
                                                "runSetup": False})["cwd"])


def test_a_worktree_is_named_by_its_directory_or_its_slug(repo: Repo,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    cwd = provision(repo, "named")
    linked = Target(repo.root, cwd, "wt/named")
    assert resolve_target(cwd) == linked
    assert resolve_target("named", repo=repo.root) == linked
    assert resolve_target("wt/named", repo=repo.root) == linked
    assert resolve_target(repo.root) == Target(repo.root, repo.root, "main")  # the main checkout
    assert resolve_target(cwd, branch="other") == Target(repo.root, cwd, "other")
    monkeypatch.chdir(cwd)
    assert resolve_target(None) == Target(repo.root, cwd, "wt/named")  # the current directory
    fixed = Target("r", "p", "b")
    assert resolve_target(None, current=lambda: fixed) == fixed
    assert resolve_target(None, branch="x", current=lambda: fixed) == Target("r", "p", "x")


def test_unknown_names_are_not_found_and_a_path_is_never_a_slug(repo: Repo) -> None:
    provision(repo, "worktree")
    with pytest.raises(ToolError) as caught:
        resolve_target("nope", repo=repo.root)
    assert (caught.value.code, caught.value.message) == (
        "not_found", f"not a linked worktree of {repo.root}: nope")
    with pytest.raises(ToolError) as caught:
        find_linked(repo.root, "/no/such/worktree")  # its last part is a slug, it is a path
    assert caught.value.message == f"not a linked worktree of {repo.root}: /no/such/worktree"
    with pytest.raises(ToolError) as caught:
        find_linked(repo.root, repo.root)  # the main checkout is not a linked worktree
    assert caught.value.code == "not_found"


def test_the_command_line_takes_slugs_too(repo: Repo, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit_config({"scripts": {"hello": {"command": "echo hello from $PWD"}}})
    cwd = provision(repo, "by-slug")
    monkeypatch.chdir(repo.path)
    assert main(["worktree", "run", "hello", "--worktree", "by-slug"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("hello from ") and said.endswith("/_worktrees/by-slug\n")
    assert main(["worktree", "services", "--worktree", "by-slug", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["services"] == []
    assert main(["worktree", "rm", "by-slug", "--delete-branch", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"removed": True}
    assert not Path(cwd).exists() and repo.branches("wt/by-slug") == ""


# -- one table, two surfaces ------------------------------------------------------------------


def _flags(parser: argparse.ArgumentParser) -> dict[str, tuple[object, ...]]:
    """Each argument of ``parser`` (its first option string, or its dest for a positional)
    with what it takes: dest, nargs, whether it stores a constant, and its choices."""
    shown: dict[str, tuple[object, ...]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        name = action.option_strings[0] if action.option_strings else action.dest
        shown[name] = (tuple(action.option_strings), action.dest, action.nargs,
                       action.const, action.type, action.metavar)
    return shown


def _cli_parsers() -> dict[str, argparse.ArgumentParser]:
    from tavernlab.cli import _worktree as cli_worktree

    root = argparse.ArgumentParser(prog="tavernlab")
    cli_worktree.register(root.add_subparsers())
    [worktree] = [a for a in root._actions if isinstance(a, argparse._SubParsersAction)]
    [commands] = [a for a in worktree.choices["worktree"]._actions
                  if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def test_the_command_line_and_the_magic_take_the_same_flags() -> None:
    from tavernlab.cli._worktree import HANDLERS as CLI_HANDLERS
    from tavernlab.cli._worktree import IN_RUN
    from tavernlab.notebook._worktrees import HANDLERS as NOTEBOOK_HANDLERS
    from tavernlab.notebook._worktrees import worktree_table

    names = [command.name for command in COMMANDS]
    assert names == ["new", "ls", "gate", "agent", "run", "start", "stop", "services", "rm",
                     "archive", "gc", "proxy"]
    assert [c.name for c in commands_for(CLI)] == [n for n in names if n != "proxy"]
    assert [c.name for c in commands_for(NOTEBOOK)] == names
    assert list(CLI_HANDLERS) == [c.name for c in commands_for(CLI)]
    assert list(NOTEBOOK_HANDLERS) == names
    cli = _cli_parsers()
    table = worktree_table()
    assert list(cli) == list(CLI_HANDLERS) and table.names == names
    for name in CLI_HANDLERS:
        command = table.get(name)
        assert command is not None
        on_cli = _flags(cli[name])
        own = ["--json", *(["--run", "--lab"] if name in IN_RUN else [])]
        assert [flag for flag in on_cli if flag in ("--json", "--run", "--lab")] == own
        for flag in own:
            del on_cli[flag]
        assert on_cli == _flags(table.parser(command)), name


def test_start_proxy_port_defaults_by_surface_and_the_help_says_where() -> None:
    cli = _cli_parsers()["start"]
    assert cli.parse_args(["web"]).proxy_port == 18780
    from tavernlab.notebook._worktrees import worktree_table

    table = worktree_table()
    start = table.get("start")
    assert start is not None
    notebook = table.parser(start)
    assert notebook.parse_args(["web", "api"]).scripts == ["web", "api"]
    assert notebook.parse_args(["web"]).proxy_port is None
    assert "(default: the current worktree)" in " ".join(notebook.format_help().split())
    assert "(default: the current directory)" in " ".join(cli.format_help().split())


# -- gate -------------------------------------------------------------------------------------


def test_gate_runs_in_the_named_the_given_or_the_current_directory(
        repo: Repo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = provision(repo, "gated")
    monkeypatch.chdir(repo.path)
    assert main(["worktree", "gate", "--worktree", "gated", "--json", "pwd"]) == 0
    assert json.loads(capsys.readouterr().out)["stdout"] == cwd + "\n"
    # the older spelling: a directory path first, then the command
    assert main(["worktree", "gate", cwd, "test", "-d", ".git"]) == 1  # a worktree's .git is a file
    assert capsys.readouterr().err == "failed (exit 1)\n"
    assert main(["worktree", "gate", cwd, "test -f .git"]) == 0
    # without a worktree: the current directory, the words joined with shell quoting
    assert main(["worktree", "gate", "printf", "%s|", "a b", "c"]) == 0
    assert capsys.readouterr().out == "a b|c|"
    # a first word that is a command, not a directory path, is never taken for the worktree
    (repo.path / "echo").mkdir()
    assert main(["worktree", "gate", "echo", "hi"]) == 0
    assert capsys.readouterr().out == "hi\n"


def test_gate_without_a_command_is_a_usage_error(repo: Repo,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo.path)
    with pytest.raises(SystemExit) as exited:
        main(["worktree", "gate", "--worktree", "x"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.endswith(
        "tavernlab worktree gate: error: give the check command (tavernlab worktree gate "
        "CMD)\n")


def test_gate_through_the_layer_returns_the_directory_and_the_command(repo: Repo) -> None:
    cwd = provision(repo, "layer")
    args = argparse.Namespace(worktree=None, repo=None, cmd=[cwd, "echo", "it's"])
    calls: list[tuple[str, dict[str, object]]] = []

    def call(tool_id: str, request: ToolInput) -> object:
        calls.append((tool_id, request.wire()))
        return {"passed": True}

    assert gate(args, call) == (cwd, "echo 'it'\"'\"'s'", {"passed": True})
    assert calls == [("worktree.run-gate", {"cwd": cwd, "cmd": "echo 'it'\"'\"'s'"})]


# -- archive ----------------------------------------------------------------------------------


def test_archive_names_the_worktree_by_slug_too(repo: Repo, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = provision(repo, "kept")
    Path(cwd, "notes.txt").write_text("mine")
    monkeypatch.chdir(repo.path)
    salvage = tmp_path / "salvage"
    assert main(["worktree", "archive", "kept", "--keep-branch", "--salvage-root",
                 str(salvage)]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"archived {cwd} to {salvage}")
    assert not Path(cwd).exists() and repo.branches("wt/kept") != ""
    assert main(["worktree", "archive", repo.root]) == 1  # the main checkout is not linked
    assert capsys.readouterr().err == (
        f"error: not_found: not a linked worktree of {repo.root}: {repo.root}\n")


# -- one provision request --------------------------------------------------------------------


def test_new_builds_one_provision_request(repo: Repo, tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_new_arguments(parser)
    args = parser.parse_args(["fix-it", "--copy-glob", "a/*.env", "--no-setup", "--dir",
                              str(tmp_path / "d"), "--write-file",
                              '{"path": "n.txt", "content": "x"}', "--retry-setup"])
    request = new_request(args, repo=repo.root, base="main")
    assert isinstance(request, ProvisionInput)
    assert (request.slug, request.copy_globs, request.run_setup) == ("fix-it", ["a/*.env"],
                                                                      False)
    assert request.wire() == {
        "repoRoot": repo.root, "slug": "fix-it", "base": "main", "dir": str(tmp_path / "d"),
        "copyGlobs": ["a/*.env"], "writeFiles": [{"path": "n.txt", "content": "x"}],
        "runSetup": False, "retrySetupOnFailure": True}
    assert ProvisionInput.model_validate(request.wire()) == request


def test_every_form_of_a_request_names_the_camel_case_field(repo: Repo) -> None:
    from tavernlab.worktree._tools import provision as provision_snake

    with pytest.raises(ToolError) as snake:
        provision_snake(repo.root, "esc", copy_globs=["../x"])
    with pytest.raises(ToolError) as wire:
        call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "esc",
                                         "copyGlobs": ["../x"]})
    with pytest.raises(ToolError) as built:
        ProvisionInput.from_python(repo_root="relative", slug="x")
    assert snake.value.message == wire.value.message == (
        "copyGlobs.0: '../x' escapes the repo root (path traversal): absolute paths and '..' "
        "segments are not allowed")
    assert built.value.message == "repoRoot: repoRoot must be an absolute path"
    assert ProvisionInput.wire_names() == {
        "repoRoot", "base", "slug", "branch", "dir", "depsCmd", "copyGlobs", "cloneGlobs",
        "linkPaths", "writeFiles", "runSetup", "setupLogPath", "retrySetupOnFailure"}


# -- inside a run -----------------------------------------------------------------------------


def _run_with_the_tools(lab_dir: Path) -> str:
    from tavernlab.host import DEFAULT_TOOLS, Lab, worktree_tools

    with Lab(lab_dir, tools=[*DEFAULT_TOOLS, worktree_tools]) as lab:
        return lab.start_run(chat_id="wt").id


def _tool_events(lab_dir: Path, run_id: str) -> list[tuple[str, str, str | None]]:
    from tavernlab.host import Lab

    with Lab(lab_dir) as lab:
        events = lab.open_run(run_id).dir / "events.jsonl"
        raw = [json.loads(line) for line in events.read_text().splitlines()]
    return [(e["type"], e["payload"]["toolId"], e["payload"].get("errorCode"))
            for e in raw if e["type"] in ("tool_call_completed", "tool_call_failed")]


def test_given_a_run_the_command_line_calls_the_tools_through_it(
        repo: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    lab_dir = tmp_path / "lab"
    run_id = _run_with_the_tools(lab_dir)
    monkeypatch.chdir(repo.path)
    where = ["--run", run_id, "--lab", str(lab_dir)]
    assert main(["worktree", "new", "in-run", "--no-setup", "--json", *where]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["branch"] == "wt/in-run"
    assert main(["worktree", "gate", *where, "--worktree", "in-run", "true"]) == 0
    Path(made["cwd"], "dirt.txt").write_text("x")
    assert main(["worktree", "rm", "in-run", *where]) == 1
    refused = capsys.readouterr().err
    # the run's failed call carries the tool contract's envelope code, not the error class's
    assert refused.startswith("passed (exit 0)\nerror: internal: worktree at ")
    assert "is not clean; git refused to remove it" in refused
    assert main(["worktree", "ls", "--json"]) == 0  # not a tool: no run involved
    capsys.readouterr()
    assert _tool_events(lab_dir, run_id)[:2] == [
        ("tool_call_completed", "worktree.provision", None),
        ("tool_call_completed", "worktree.run-gate", None)]
    assert [e[:2] for e in _tool_events(lab_dir, run_id)[2:]] == [
        ("tool_call_failed", "worktree.cleanup")]
    # without --run the same command leaves the run alone
    assert main(["worktree", "rm", "in-run", "--discard-untracked", "--delete-branch"]) == 0
    assert len(_tool_events(lab_dir, run_id)) == 3


def test_lab_without_run_is_a_usage_error(repo: Repo, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo.path)
    assert main(["worktree", "gate", "--lab", str(tmp_path), "true"]) == 2
    assert capsys.readouterr().err.endswith(
        "tavernlab: error: --lab names the lab of --run: give --run RUN_ID too\n")
    assert main(["worktree", "gate", "--run", "run_x", "--lab", str(tmp_path / "none"),
                 "true"]) == 1
    assert capsys.readouterr().err.startswith("error: workspace.invalid_data: no lab at ")


def test_start_in_a_run_records_the_start_and_the_stop(
        repo: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit_config({"scripts": {"web": {"command": "exec sleep 30", "type": "service"}}})
    cwd = provision(repo, "served")
    lab_dir = tmp_path / "lab"
    run_id = _run_with_the_tools(lab_dir)
    monkeypatch.chdir(repo.path)
    assert main(["worktree", "start", "web", "--worktree", "served", "--proxy-port", "0",
                 "--seconds", "0.1", "--json", "--run", run_id, "--lab", str(lab_dir)]) == 0
    started = json.loads(capsys.readouterr().out)
    assert [s["status"] for s in started["services"]] == ["running"]
    assert _tool_events(lab_dir, run_id) == [
        ("tool_call_completed", "worktree.start-service", None),
        ("tool_call_completed", "worktree.stop-service", None)]
    assert main(["worktree", "services", "--worktree", cwd, "--json"]) == 0
    assert [s["status"] for s in json.loads(capsys.readouterr().out)["services"]] == ["exited"]
