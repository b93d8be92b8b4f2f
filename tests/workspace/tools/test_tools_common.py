"""Common rules of the model-facing tools (docs/tool-calls.md): arguments, path errors,
hidden files, planted symlinks, availability."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tavernlab.errors import ToolError
from tavernlab.host import CallContext, Lab, Run
from tavernlab.host._run_control import RUN_CONTROL_TOOLS
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.roots._profile import WorkspaceSettings
from tavernlab.workspace.storage import UNSUPPORTED_NODE
from tavernlab.workspace.tools import WORKSPACE_TOOLS, Arguments

TOOLS = {spec.id: spec for spec in (*WORKSPACE_TOOLS, *RUN_CONTROL_TOOLS)}

#: The ``put`` fixture (tests/conftest.py): a shell-like unchecked write.
Put = Callable[[Run, str, str], None]

#: Valid arguments of each workspace tool (the base every bad-argument case starts from).
VALID: dict[str, dict[str, Any]] = {
    "workspace.list_files": {"path": "output"},
    "workspace.search_files": {"query": "hello"},
    "workspace.read_file": {"path": "output/main.md"},
    "workspace.write_file": {"path": "scratch/new.md", "content": "x"},
    "workspace.apply_patch": {"path": "output/main.md", "old_string": "a", "new_string": "b"},
    "workspace.commit": {},
    "workspace.finish": {},
}

#: Files the tools themselves record; everything else in the run directory must not change.
BOOKKEEPING = ("tool-results", "tool-args", "events.jsonl", "journal.jsonl", "run.json",
               "counters.jsonl", ".workspace.lock", ".tavernlab-calls", ".tavernlab-staging")


def state(run: Run) -> dict[str, bytes | None]:
    """Every file and directory of the run directory except the tools' own bookkeeping."""
    out: dict[str, bytes | None] = {}
    for path in sorted(run.workspace_dir.rglob("*")):
        rel = path.relative_to(run.workspace_dir).as_posix()
        if rel.startswith(BOOKKEEPING):
            continue
        out[rel] = None if path.is_dir() else path.read_bytes()
    return out


def expect_error(run: Run, tool: str, args: Any, code: str, message: str | None = None) -> None:
    """The call fails with ``code`` (and ``message``) as a recoverable result."""
    result = run.call_tool(tool, args)
    assert result.is_error, (tool, args, result.content)
    assert result.error_code == code, (tool, args, result.content)
    assert result.structured == {"error": {"code": code, "message": result.content}}
    if message is not None:
        assert result.content == message
    assert result.to_json()["isError"] is True


@pytest.fixture
def busy_run(run: Run, put: Put) -> Run:
    """A run with ``output/main.md`` containing ``alpha``."""
    put(run, "output/main.md", "alpha")
    return run


# --- arguments ------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", sorted(VALID))
def test_unknown_argument_keys_are_rejected(busy_run: Run, tool: str) -> None:
    before = state(busy_run)
    expect_error(busy_run, tool, {**VALID[tool], "offset": 1}, "tool.invalid_arguments",
                 "offset is not supported")
    assert state(busy_run) == before


@pytest.mark.parametrize("tool", sorted(VALID))
def test_the_first_unknown_key_in_sorted_order_is_named(busy_run: Run, tool: str) -> None:
    """Several unknown keys: tavernlab names the first in sorted key order (7.1)."""
    expect_error(busy_run, tool, {"zeta": 1, **VALID[tool], "Beta": 2, "alpha": 3},
                 "tool.invalid_arguments", "Beta is not supported")


@pytest.mark.parametrize("tool", sorted(VALID))
def test_arguments_must_be_an_object(busy_run: Run, tool: str) -> None:
    for args in ([], "path", 3, ["path", "x"]):
        expect_error(busy_run, tool, args, "tool.invalid_arguments",
                     "arguments must be a JSON object")


def test_the_allow_lists() -> None:
    assert {t: TOOLS[t].arguments for t in VALID} == {
        "workspace.list_files": ("path", "depth"),
        "workspace.search_files": ("query", "path", "limit", "context_lines"),
        "workspace.read_file": ("path", "start_line", "line_count"),
        "workspace.write_file": ("path", "content", "mode"),
        "workspace.apply_patch": ("path", "old_string", "new_string", "replace_all"),
        "workspace.commit": ("path", "mode", "reason"),
        "workspace.finish": ("reason",),
    }
    assert {TOOLS[t].model_name for t in VALID} == {
        "workspace_list_files", "workspace_search_files", "workspace_read_file",
        "workspace_write_file", "workspace_apply_patch", "workspace_commit", "workspace_finish"}


def test_the_run_offers_the_workspace_tools(run: Run) -> None:
    assert set(VALID) <= {spec.id for spec in run.tools}


@pytest.mark.parametrize(("tool", "args", "message"), [
    ("workspace.list_files", {"path": 3}, "path must be a string"),
    ("workspace.list_files", {"depth": "2"}, "depth must be a non-negative integer"),
    ("workspace.list_files", {"depth": 1.5}, "depth must be a non-negative integer"),
    ("workspace.list_files", {"depth": 2.0}, "depth must be a non-negative integer"),
    ("workspace.list_files", {"depth": True}, "depth must be a non-negative integer"),
    ("workspace.list_files", {"depth": None}, "depth must be a non-negative integer"),
    ("workspace.list_files", {"depth": -1}, "depth must be a non-negative integer"),
    ("workspace.search_files", {}, "query is required"),
    ("workspace.search_files", {"query": None}, "query is required"),
    ("workspace.search_files", {"query": ["a"]}, "query is required"),
    ("workspace.search_files", {"query": "  \t "}, "query is required"),
    ("workspace.search_files", {"query": "a", "limit": "5"},
     "limit must be a non-negative integer"),
    ("workspace.search_files", {"query": "a", "limit": -4},
     "limit must be a non-negative integer"),
    ("workspace.search_files", {"query": "a", "context_lines": 1.5},
     "context_lines must be a non-negative integer"),
    ("workspace.search_files", {"query": "a", "context_lines": -1},
     "context_lines must be a non-negative integer"),
    ("workspace.search_files", {"query": "a", "context_lines": None},
     "context_lines must be a non-negative integer"),
    ("workspace.search_files", {"query": "a", "path": {}}, "path must be a string"),
    ("workspace.read_file", {}, "path is required"),
    ("workspace.read_file", {"path": ["output/main.md"]}, "path is required"),
    ("workspace.read_file", {"path": None}, "path is required"),
    ("workspace.read_file", {"path": "output/main.md", "start_line": "2"},
     "start_line must be a non-negative integer"),
    ("workspace.read_file", {"path": "output/main.md", "line_count": False},
     "line_count must be a non-negative integer"),
    ("workspace.read_file", {"path": "output/main.md", "line_count": None},
     "line_count must be a non-negative integer"),
    ("workspace.write_file", {"path": 3, "content": "x"}, "path is required"),
    ("workspace.write_file", {"path": " ", "content": "x"}, "path is required"),
    ("workspace.apply_patch", {"path": "\n", "old_string": "a", "new_string": "b"},
     "path is required"),
    ("workspace.write_file", {"path": "scratch/a.md"}, "content is required"),
    ("workspace.write_file", {"content": "x"}, "path is required"),
    ("workspace.write_file", {"path": "scratch/a.md", "content": 5}, "content must be a string"),
    ("workspace.write_file", {"path": "scratch/a.md", "content": "x", "mode": 1},
     "mode must be a string"),
    ("workspace.apply_patch", {"path": "output/main.md", "old_string": "a"},
     "new_string is required"),
    ("workspace.apply_patch", {"path": "output/main.md", "new_string": "a"},
     "old_string is required"),
    ("workspace.apply_patch", {"path": "output/main.md", "old_string": "a", "new_string": "b",
                               "replace_all": "yes"}, "replace_all must be a boolean"),
    ("workspace.apply_patch", {"path": "output/main.md", "old_string": "a", "new_string": "b",
                               "replace_all": None}, "replace_all must be a boolean"),
    ("workspace.apply_patch", {"path": "output/main.md", "old_string": 1, "new_string": "b"},
     "old_string must be a string"),
    ("workspace.commit", {"path": 1}, "path must be a string"),
    ("workspace.commit", {"mode": ["replace"]}, "mode must be a string"),
    ("workspace.commit", {"reason": 7}, "reason must be a string"),
    ("workspace.finish", {"reason": 7}, "reason must be a string"),
])
def test_wrong_types_and_missing_keys(busy_run: Run, tool: str, args: dict[str, Any],
                                      message: str) -> None:
    before = state(busy_run)
    expect_error(busy_run, tool, args, "tool.invalid_arguments", message)
    assert state(busy_run) == before
    assert busy_run.internals.explicit_commits == 0
    assert busy_run.status == "calling_model"


def test_lone_surrogates_are_invalid_arguments(busy_run: Run) -> None:
    """Python's JSON accepts lone surrogates that upstream's parser refuses; each tool refuses
    them as bad arguments (never an internal fault) and writes nothing. The handlers are called
    the way the run dispatches them (the run's own bookkeeping is the lead's, see the report)."""
    before = state(busy_run)
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("workspace.write_file", {"path": "scratch/\udcff.md", "content": "x"},
         "path must be valid Unicode text"),
        ("workspace.write_file", {"path": "scratch/a.md", "content": "x\udcff"},
         "content must be valid Unicode text"),
        ("workspace.read_file", {"path": "output/\ud800"}, "path must be valid Unicode text"),
        ("workspace.search_files", {"query": "alpha \udcff"},
         "query must be valid Unicode text"),
        ("workspace.apply_patch", {"path": "output/main.md", "old_string": "alpha",
                                   "new_string": "\udcff"},
         "new_string must be valid Unicode text"),
        ("workspace.commit", {"reason": "\udcff"}, "reason must be valid Unicode text"),
        ("workspace.list_files", {"\udcff": 1}, "argument names must be valid Unicode text"),
    ]
    for tool, args, message in cases:
        spec = TOOLS[tool]
        call = CallContext(busy_run._core, busy_run.internals.main, "call_u", tool, 1)
        with pytest.raises(ToolError) as info:
            spec.handler(call, Arguments(args, spec.arguments))
        assert (info.value.code, info.value.message) == ("tool.invalid_arguments", message)
    assert state(busy_run) == before
    assert busy_run.internals.explicit_commits == 0


# --- common path errors -------------------------------------------------------------------------


PATH_TOOLS: list[tuple[str, dict[str, Any]]] = [
    ("workspace.list_files", {}),
    ("workspace.search_files", {"query": "alpha"}),
    ("workspace.read_file", {}),
    ("workspace.write_file", {"content": "pwned"}),
    ("workspace.write_file", {"content": "pwned", "mode": "append"}),
    ("workspace.apply_patch", {"old_string": "alpha", "new_string": "pwned"}),
    ("workspace.commit", {}),
]


INVALID_PATHS = [
    ("../secrets.json", "Workspace path cannot contain .."),
    ("output/../../secrets.json", "Workspace path cannot contain .."),
    ("output\\..\\..\\x.md", "Workspace path cannot contain .."),
    ("/etc/passwd", "Workspace path must be relative"),
    ("\\output\\main.md", "Workspace path must be relative"),
    ("C:\\Users\\me\\file", "Workspace path cannot use a Windows drive prefix"),
    ("c:output/main.md", "Workspace path cannot use a Windows drive prefix"),
    ("scratch/\0bad", "Workspace path cannot contain NUL"),
    ("./.", "Workspace path cannot be empty"),
    (".//", "Workspace path cannot be empty"),
]


@pytest.mark.parametrize(("tool", "extra"), PATH_TOOLS)
def test_invalid_paths(busy_run: Run, tool: str, extra: dict[str, Any]) -> None:
    before = state(busy_run)
    for path, message in INVALID_PATHS:
        expect_error(busy_run, tool, {**extra, "path": path}, "workspace.invalid_path",
                     f"Invalid data: {message}")
    assert state(busy_run) == before
    assert busy_run.internals.explicit_commits == 0


@pytest.mark.parametrize("tool", ["workspace.read_file", "workspace.write_file",
                                  "workspace.apply_patch", "workspace.commit"])
def test_the_root_is_an_invalid_path_for_file_tools(busy_run: Run, tool: str) -> None:
    extra = dict(PATH_TOOLS)[tool]
    for root in (".", "./"):
        expect_error(busy_run, tool, {**extra, "path": root}, "workspace.invalid_path",
                     "Invalid data: Workspace path cannot be empty")
    if tool == "workspace.commit":  # an optional path, not trimmed
        expect_error(busy_run, tool, {"path": ""}, "workspace.invalid_path",
                     "Invalid data: Workspace path cannot be empty")
    else:  # a required path, trimmed (7.1)
        expect_error(busy_run, tool, {**extra, "path": " ./ "}, "workspace.invalid_path",
                     "Invalid data: Workspace path cannot be empty")
        for empty in ("", "   "):
            expect_error(busy_run, tool, {**extra, "path": empty}, "tool.invalid_arguments",
                         "path is required")


HIDDEN = ["input/prompt_snapshot.json", "input/resolved_profile.json", "run.json",
          "manifest.json", "events.jsonl", "tool-args", "input", "output_extra/x.md"]


@pytest.mark.parametrize("hidden", HIDDEN)
def test_hidden_run_files_are_not_readable(busy_run: Run, hidden: str) -> None:
    for tool, extra in (("workspace.read_file", {}), ("workspace.list_files", {}),
                        ("workspace.search_files", {"query": "run"}), ("workspace.commit", {})):
        expect_error(busy_run, tool, {**extra, "path": hidden}, "workspace.path_not_visible",
                     f"Permission denied: `{hidden}` is not readable for this task.")


@pytest.mark.parametrize("hidden", HIDDEN)
def test_hidden_run_files_are_not_writable(busy_run: Run, hidden: str) -> None:
    before = state(busy_run)
    for tool, extra in (("workspace.write_file", {"content": "{}"}),
                        ("workspace.write_file", {"content": "{}", "mode": "append"}),
                        ("workspace.apply_patch", {"old_string": "run", "new_string": "x"})):
        expect_error(busy_run, tool, {**extra, "path": hidden}, "workspace.path_not_writable",
                     f"Permission denied: `{hidden}` is not writable for this task.")
    assert state(busy_run) == before


@pytest.mark.parametrize("path", ["output", "scratch", "persist", "skills", "tool-results",
                                  "skills/x/SKILL.md", "tool-results/x.json"])
def test_roots_and_read_only_roots_are_not_writable(busy_run: Run, path: str) -> None:
    before = state(busy_run)
    denied = f"Permission denied: `{path}` is not writable for this task."
    expect_error(busy_run, "workspace.write_file", {"path": path, "content": "x"},
                 "workspace.path_not_writable", denied)
    expect_error(busy_run, "workspace.apply_patch",
                 {"path": path, "old_string": "a", "new_string": "b"},
                 "workspace.path_not_writable", denied)
    assert state(busy_run) == before


def test_a_profile_listing_read_only_roots_as_writable_changes_nothing(lab: Lab) -> None:
    run = lab.start_run(chat_id="alice", profile={"workspace": {
        "visibleRoots": ["output", "skills", "tool-results"],
        "writableRoots": ["output", "skills", "tool-results"]}})
    expect_error(run, "workspace.write_file", {"path": "tool-results/x.json", "content": "{}"},
                 "workspace.path_not_writable", "Permission denied: `tool-results/x.json` is not "
                 "writable for this task.")
    expect_error(run, "workspace.write_file", {"path": "skills/x/SKILL.md", "content": "x"},
                 "workspace.path_not_writable", "Permission denied: `skills/x/SKILL.md` is not "
                 "writable for this task.")
    assert not (run.workspace_dir / "skills").exists()
    assert not (run.workspace_dir / "tool-results/x.json").exists()


def test_not_found_and_is_directory(busy_run: Run, put: Put) -> None:
    missing = "workspace path `output/none.md` was not found."
    expect_error(busy_run, "workspace.read_file", {"path": "output/none.md"},
                 "workspace.file_not_found", missing)
    expect_error(busy_run, "workspace.apply_patch",
                 {"path": "output/none.md", "old_string": "a", "new_string": "b"},
                 "workspace.file_not_found", missing)
    expect_error(busy_run, "workspace.commit", {"path": "output/none.md"},
                 "workspace.file_not_found", missing)
    expect_error(busy_run, "workspace.list_files", {"path": "output/none.md"},
                 "workspace.path_not_found", missing)
    expect_error(busy_run, "workspace.search_files", {"query": "a", "path": "output/none.md"},
                 "workspace.path_not_found", missing)
    directory = ("workspace path `output` is a directory; call workspace_list_files to list "
                 "its contents and re-target a specific file.")
    expect_error(busy_run, "workspace.read_file", {"path": "output"},
                 "workspace.path_is_directory", directory)
    expect_error(busy_run, "workspace.commit", {"path": "output"},
                 "workspace.path_is_directory", directory)
    put(busy_run, "scratch/d/x.md", "x")
    sub = ("workspace path `scratch/d` is a directory; call workspace_list_files to list its "
           "contents and re-target a specific file.")
    for tool, extra in (("workspace.write_file", {"content": "x"}),
                        ("workspace.write_file", {"content": "x", "mode": "append"}),
                        ("workspace.apply_patch", {"old_string": "a", "new_string": "b"})):
        expect_error(busy_run, tool, {**extra, "path": "scratch/d"},
                     "workspace.path_is_directory", sub)
    assert (busy_run.workspace_dir / "scratch/d").is_dir()


def test_missing_parent_of_a_listing_is_path_not_found(busy_run: Run) -> None:
    expect_error(busy_run, "workspace.list_files", {"path": "scratch/a/b"},
                 "workspace.path_not_found", "workspace path `scratch/a/b` was not found.")


# --- planted symlinks -------------------------------------------------------------------------


def test_symlinks_planted_in_the_run_directory(busy_run: Run, outside: Path) -> None:
    os.symlink(outside / "secret.md", busy_run.workspace_dir / "output/link.md")
    os.symlink(outside, busy_run.workspace_dir / "scratch/out")
    secret_before = {p.name: p.read_bytes() for p in outside.iterdir()}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("workspace.read_file", {"path": "output/link.md"}),
        ("workspace.read_file", {"path": "scratch/out/secret.md"}),
        ("workspace.write_file", {"path": "output/link.md", "content": "pwned"}),
        ("workspace.write_file", {"path": "output/link.md", "content": "pwned", "mode": "append"}),
        ("workspace.write_file", {"path": "scratch/out/secret.md", "content": "pwned"}),
        ("workspace.write_file", {"path": "scratch/out/new.md", "content": "pwned"}),
        ("workspace.write_file", {"path": "scratch/out/a/b.md", "content": "pwned"}),
        ("workspace.write_file", {"path": "scratch/out/new.md", "content": "p", "mode": "append"}),
        ("workspace.apply_patch", {"path": "output/link.md", "old_string": "alpha",
                                   "new_string": "pwned"}),
        ("workspace.apply_patch", {"path": "scratch/out/secret.md", "old_string": "alpha",
                                   "new_string": "pwned"}),
        ("workspace.list_files", {"path": "scratch/out"}),
        ("workspace.search_files", {"query": "secret", "path": "scratch/out"}),
        ("workspace.commit", {"path": "output/link.md"}),
    ]
    for tool, args in calls:
        expect_error(busy_run, tool, args, "workspace.invalid_data", UNSUPPORTED_NODE)
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == secret_before
    assert busy_run.internals.explicit_commits == 0
    assert sorted(os.listdir(busy_run.workspace_dir / "scratch")) == ["out"]


def test_planted_nodes_are_skipped_by_listings_and_searches(busy_run: Run, put: Put,
                                                           outside: Path) -> None:
    """One planted FIFO or symlink under ``scratch/`` no longer makes a listing or a
    search of the whole workspace fail: the entry is skipped, reported, and the rest goes on."""
    put(busy_run, "scratch/notes.md", "alpha notes")
    scratch = busy_run.workspace_dir / "scratch"
    os.mkfifo(scratch / "pipe")
    os.symlink(outside / "secret.md", scratch / "link.md")
    listing = busy_run.call_tool("workspace.list_files", {})
    assert not listing.is_error
    assert listing.content == (
        "output/\npersist/\nplan/\nscratch/\nskills/\nsummaries/\ntool-results/\n"
        "output/main.md\nscratch/notes.md\n\n"
        "Skipped 2 entries that are not regular files or directories: scratch/link.md "
        "(symlink), scratch/pipe (fifo).")
    assert listing.structured["refusedEntries"] == [
        {"path": "scratch/link.md", "node": "symlink"}, {"path": "scratch/pipe", "node": "fifo"}]
    assert listing.structured["truncated"] is False
    assert "scratch/pipe" not in listing.resource_refs
    os.unlink(scratch / "link.md")
    search = busy_run.call_tool("workspace.search_files", {"query": "alpha", "context_lines": 0})
    assert not search.is_error
    assert [h["path"] for h in search.structured["hits"]] == ["output/main.md",
                                                               "scratch/notes.md"]
    assert search.content.endswith(
        "\n\nSkipped 1 entry that is not a regular file or directory: scratch/pipe (fifo).")
    assert search.structured["refusedEntries"] == [{"path": "scratch/pipe", "node": "fifo"}]
    # main.md, notes.md and the stored result of the listing call
    assert (search.structured["searchedFiles"], search.structured["skippedFiles"]) == (3, 0)
    # starting at the planted node itself is still refused
    expect_error(busy_run, "workspace.list_files", {"path": "scratch/pipe"},
                 "workspace.invalid_data", UNSUPPORTED_NODE)
    assert (outside / "secret.md").read_text() == "alpha secret"
    os.unlink(scratch / "pipe")
    clean = busy_run.call_tool("workspace.list_files", {"path": "scratch"})
    assert (clean.content, clean.structured) == ("scratch/notes.md", {
        "entries": [{"path": "scratch/notes.md", "kind": "file"}], "truncated": False})


def test_refused_entries_are_named_up_to_twenty(busy_run: Run) -> None:
    scratch = busy_run.workspace_dir / "scratch"
    for i in range(23):
        os.mkfifo(scratch / f"p{i:02d}")
    listing = busy_run.call_tool("workspace.list_files", {"path": "scratch"})
    named = ", ".join(f"scratch/p{i:02d} (fifo)" for i in range(20))
    assert listing.content == (
        "No visible workspace files found.\n\nSkipped 23 entries that are not regular files "
        f"or directories: {named}, and 3 more.")
    assert len(listing.structured["refusedEntries"]) == 23


# --- availability --------------------------------------------------------------------------


def test_commit_and_finish_are_not_available_to_sub_agents(busy_run: Run) -> None:
    helper = busy_run.start_subagent("helper")
    for tool, name in (("workspace.commit", "workspace_commit"),
                       ("workspace.finish", "workspace_finish")):
        result = busy_run.call_tool(tool, {}, invocation=helper)
        assert (result.is_error, result.error_code, result.content) == (
            True, "tool.not_available", f"{name} is not available for this task.")
    assert busy_run.internals.explicit_commits == 0
    assert busy_run.status == "calling_model"
    assert busy_run.call_tool("workspace.read_file", {"path": "output/main.md"},
                              invocation=helper).is_error is False


def test_sub_agent_roots_follow_its_own_profile(busy_run: Run) -> None:
    narrow = Profile(workspace=WorkspaceSettings(visible_roots=["scratch"],
                                                 writable_roots=["scratch"]))
    helper = busy_run.start_subagent("helper", profile=narrow)
    listing = busy_run.call_tool("workspace.list_files", {"depth": 1}, invocation=helper)
    assert listing.content == "scratch/\nskills/\ntool-results/"
    denied = busy_run.call_tool("workspace.read_file", {"path": "output/main.md"},
                                invocation=helper)
    assert (denied.error_code, denied.content) == (
        "workspace.path_not_visible",
        "Permission denied: `output/main.md` is not readable for this task.")
    wrote = busy_run.call_tool("workspace.write_file",
                               {"path": "scratch/notes.md", "content": "n"}, invocation=helper)
    assert not wrote.is_error
    # the main agent sees the shared workspace
    assert busy_run.read("scratch/notes.md") == "n"


def test_task_return_names(busy_run: Run) -> None:
    helper = busy_run.start_subagent("helper")
    first = busy_run.call_tool("task.return", {"result": "one"}, invocation=helper)
    second = busy_run.call_tool("task.return", {"result": "two"}, invocation=helper)
    assert (first.resource_refs, second.resource_refs) == (
        ["summaries/helper-result.md"], ["summaries/helper-result-002.md"])
    assert busy_run.read("summaries/helper-result.md") == "one"
    assert busy_run.read("summaries/helper-result-002.md") == "two"


def test_commit_is_not_available_in_a_session_run(lab: Lab, put: Put) -> None:
    session = lab.sessions.create("t")
    run = lab.start_run(session=session.id)
    put(run, "work/main.md", "hi")
    result = run.call_tool("workspace.commit", {"path": "work/main.md"})
    assert (result.is_error, result.error_code, result.content) == (
        True, "tool.not_available", "workspace_commit is not available for this task.")
    assert result.structured == {"error": {"code": "tool.not_available", "message":
                                           "workspace_commit is not available for this task."}}


def test_os_refusals_are_recoverable_and_the_run_goes_on(busy_run: Run) -> None:
    """A name the OS refuses (over NAME_MAX) is a tool error, not an internal fault."""
    name = "n" * 256
    for tool, args in (("workspace.write_file", {"path": f"scratch/{name}", "content": "x"}),
                       ("workspace.write_file", {"path": f"scratch/{name}/a.md",
                                                 "content": "x"}),
                       ("workspace.read_file", {"path": f"scratch/{name}"}),
                       ("workspace.list_files", {"path": f"scratch/{name}"}),
                       ("workspace.commit", {"path": f"scratch/{name}"})):
        result = busy_run.call_tool(tool, args)
        assert result.error_code == "workspace.file_io", (tool, result.content)
        assert result.content == (f"failed to resolve workspace path `{args['path']}`: "
                                  "File name too long")
    assert busy_run.status == "calling_model"
    assert os.listdir(busy_run.workspace_dir / "scratch") == []
