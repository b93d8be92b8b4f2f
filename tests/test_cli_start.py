"""The command line's lazy start: the command table matches what the command modules
register, and ``import tavernlab``, ``tavernlab --help`` and one command load only what they
need (read from ``sys.modules`` of a fresh process; no timing)."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

import pytest

from tavernlab.cli import COMMAND_MODULES, COMMANDS, build_parser, command_named

#: Never imported by ``import tavernlab`` nor by ``tavernlab --help``.
HEAVY = ("nbformat", "nbclient", "IPython", "ipykernel", "ipywidgets", "anywidget", "pydantic",
         "jsbox", "bashkit", "tree_sitter", "yaml", "jupyter_client")


def registered(module: str) -> list[tuple[str, str | None]]:
    """``(name, help)`` of every top-level command ``module.register`` adds, in order."""
    parser = argparse.ArgumentParser(prog="tavernlab")
    subparsers = parser.add_subparsers(dest="command")
    importlib.import_module(module).register(subparsers)
    return [(action.dest, action.help) for action in subparsers._choices_actions]


def loaded_modules(code: str) -> list[str]:
    """The ``sys.modules`` keys after running ``code`` in a fresh interpreter."""
    probe = (f"import sys\n{code}\n"
             "import json; print(json.dumps(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    modules: list[str] = json.loads(done.stdout.splitlines()[-1])
    return modules


def heavy_in(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


HELP = ("from tavernlab.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n")


@pytest.mark.parametrize("module", COMMAND_MODULES)
def test_each_module_registers_its_rows_of_the_table_in_order(module: str) -> None:
    table = [(name, entry.help) for name, entry in COMMANDS.items() if entry.module == module]
    assert registered(module) == table


def test_the_table_lists_each_modules_commands_together() -> None:
    modules = [entry.module for entry in COMMANDS.values()]
    assert modules == sorted(modules, key=modules.index)
    assert COMMAND_MODULES == ("tavernlab.cli._demo", "tavernlab.cli._workspace",
                               "tavernlab.cli._shell", "tavernlab.cli._skills",
                               "tavernlab.cli._kit", "tavernlab.cli._worktree",
                               "tavernlab.cli._kernel", "tavernlab.cli._replay",
                               "tavernlab.cli._view", "tavernlab.cli._agent", "tavernlab.cli._mcp")


def test_help_from_the_table_is_the_help_of_every_module_loaded() -> None:
    assert build_parser().format_help() == build_parser(load_all=True).format_help()
    assert "    worktree  git worktrees for agents\n" in build_parser().format_help()


def test_a_commands_parser_is_its_module_in_full() -> None:
    args = build_parser("events").parse_args(["events", "run-1", "--json"])
    assert (args.command, args.run_id, args.json) == ("events", "run-1", True)
    with pytest.raises(SystemExit) as stopped:  # a listed command has no arguments of its own
        build_parser().parse_args(["events", "run-1"])
    assert stopped.value.code == 2


@pytest.mark.parametrize(("argv", "command"), [
    ([], None), (["--help"], None), (["-h", "runs"], "runs"), (["--version"], None),
    (["worktree", "new", "x"], "worktree"), (["run", "export", "r"], "run"),
])
def test_the_command_is_the_first_word_that_is_not_an_option(argv: list[str],
                                                             command: str | None) -> None:
    assert command_named(argv) == command


def test_import_tavernlab_loads_no_command_and_nothing_heavy() -> None:
    modules = loaded_modules("import tavernlab")
    assert heavy_in(modules) == []
    unwanted = ("tavernlab.cli", "tavernlab.notebook", "tavernlab.replay",
                "tavernlab.workspace", "tavernlab.worktree", "tavernlab.host._lab")
    assert [m for m in modules if m.startswith(unwanted)] == []


def test_help_loads_no_command_module_and_nothing_heavy() -> None:
    modules = loaded_modules(HELP)
    assert heavy_in(modules) == []
    assert [m for m in modules if m.startswith("tavernlab.cli.")] == []


def test_a_command_loads_its_own_module_only() -> None:
    modules = loaded_modules(HELP.replace("['--help']", "['kernel', '--help']"))
    assert [m for m in modules if m.startswith("tavernlab.cli.")] == ["tavernlab.cli._kernel"]
    assert heavy_in(modules) == []
    modules = loaded_modules(HELP.replace("['--help']", "['runs', '--help']"))
    assert [m for m in modules if m.startswith("tavernlab.cli.")] == [
        "tavernlab.cli._common", "tavernlab.cli._workspace"]
    assert "IPython" not in modules and "nbformat" not in modules
