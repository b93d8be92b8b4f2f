"""The worktree tools as declarations of the one tool contract, offered by a lab that is
given the ``worktree_tools`` provider (and only then)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tavernlab.host import DEFAULT_TOOLS, Lab, worktree_tools
from tavernlab.worktree._tools import SCHEMAS, TOOLS, call_tool

from .conftest import make_repo

WORKTREE_IDS = ["worktree.cleanup", "worktree.list-services", "worktree.provision",
                "worktree.run-gate", "worktree.run-script", "worktree.start-service",
                "worktree.stop-service"]


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    with Lab(tmp_path / "lab", tools=[*DEFAULT_TOOLS, worktree_tools]) as opened:
        yield opened


def test_a_lab_given_the_provider_shows_the_tools_with_their_schemas(lab: Lab) -> None:
    shown = lab.tool_definitions({"tools": {"allow": ["worktree.provision",
                                                      "worktree.run-gate"]}})
    assert [t["function"]["name"] for t in shown] == ["worktree_provision", "worktree_run-gate"]
    provision = shown[0]["function"]
    assert provision["description"].startswith("Create a git worktree on a new branch")
    schema = provision["parameters"]
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["required"] == ["repoRoot", "slug"]
    assert list(schema["properties"]) == [
        "repoRoot", "base", "slug", "branch", "dir", "depsCmd", "copyGlobs", "cloneGlobs",
        "linkPaths", "writeFiles", "runSetup", "setupLogPath", "retrySetupOnFailure"]
    assert schema["properties"]["slug"]["pattern"] == "^[a-z0-9][a-z0-9-]*$"
    assert schema["properties"]["base"]["default"] == "origin/main"
    assert shown[1]["function"]["parameters"] == {
        "type": "object", "additionalProperties": False, "required": ["cwd", "cmd"],
        "properties": {
            "cwd": {"type": "string", "description": "The directory to run the command in."},
            "cmd": {"type": "string",
                    "description": "The shell command; the gate passes when it exits 0."}}}
    assert sorted(spec.id for spec in lab.tools if spec.id.startswith("worktree.")) == (
        WORKTREE_IDS)


def test_each_declaration_carries_its_contract_row() -> None:
    assert sorted(TOOLS) == WORKTREE_IDS
    provision = TOOLS["worktree.provision"]
    assert dict(provision.annotations) == {
        "readOnly": False, "mutating": True, "contractVersion": "0.3.0", "mutates": "fs:write",
        "approval": "auto", "risk": 1}
    assert TOOLS["worktree.list-services"].annotations["risk"] == 0
    assert TOOLS["worktree.cleanup"].annotations["contractVersion"] == "0.2.0"
    for tool_id, spec in TOOLS.items():
        assert spec.schema == SCHEMAS[tool_id]
        assert spec.arguments == tuple(SCHEMAS[tool_id]["properties"])


def test_a_provision_through_a_run_is_recorded_like_any_tool_call(
        lab: Lab, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    run = lab.start_run(chat_id="alice")
    result = run.call_tool("worktree.provision",
                           {"repoRoot": repo.root, "slug": "feature", "base": "main"},
                           call_id="call_wt")
    cwd = str((tmp_path / "_worktrees" / "feature").resolve())
    assert not result.is_error
    assert result.structured == {"cwd": cwd, "branch": "wt/feature"}
    assert json.loads(result.content) == {"cwd": cwd, "branch": "wt/feature"}
    assert (Path(cwd) / "README.md").read_text() == "hello\n"
    assert "wt/feature" in repo.branches("wt/*")
    types = [e.type for e in run.events()]
    for kind in ("tool_call_requested", "tool_call_started", "tool_call_completed",
                 "tool_result_stored"):
        assert kind in types
    raw = [json.loads(line) for line in (run.dir / "events.jsonl").read_text().splitlines()]
    completed = next(e for e in raw if e["type"] == "tool_call_completed")["payload"]
    assert (completed["toolId"], completed["callId"], completed["name"], completed["isError"]
            ) == ("worktree.provision", "call_wt", "worktree_provision", False)
    stored = next(e for e in raw if e["type"] == "tool_result_stored")["payload"]
    assert stored["toolId"] == "worktree.provision"
    record = json.loads((run.workspace_dir / stored["path"]).read_text())
    assert record["structured"] == {"cwd": cwd, "branch": "wt/feature"}


def test_a_refused_tool_in_a_run_is_a_failed_call_with_its_code(lab: Lab, tmp_path: Path
                                                                 ) -> None:
    repo = make_repo(tmp_path)
    run = lab.start_run(chat_id="alice")
    bad = run.call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "Bad Slug"})
    assert (bad.is_error, bad.error_code) == (True, "input_invalid")
    assert "slug must be lowercase kebab-case" in bad.content
    unknown = run.call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "x",
                                                   "colour": "red"})
    assert (unknown.error_code, unknown.content) == ("tool.invalid_arguments",
                                                     "colour is not supported")
    assert not (tmp_path / "_worktrees").exists()
    assert run.status != "failed"


def test_the_default_lab_does_not_offer_them(tmp_path: Path) -> None:
    with Lab(tmp_path / "plain") as plain:
        assert "worktree.provision" not in plain.tools
        result = plain.start_run(chat_id="alice").call_tool(
            "worktree.provision", {"repoRoot": str(tmp_path), "slug": "x"})
        assert (result.error_code, result.content) == (
            "tool.unknown", "Unknown tool `worktree.provision`.")
        names = [t["function"]["name"] for t in plain.tool_definitions(
            {"tools": {"allow": ["worktree.provision", "workspace.read_file"]}})]
        assert names == ["workspace_read_file"]


def test_call_tool_outside_a_run_keeps_its_shape(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    made = call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "direct",
                                            "base": "main"})
    assert made["branch"] == "wt/direct"
    assert call_tool("worktree.run-gate", {"cwd": made["cwd"], "cmd": "exit 0"})["passed"]


def test_cancelling_the_run_cancels_a_provision_it_is_running(lab: Lab, tmp_path: Path
                                                              ) -> None:
    import threading

    repo = make_repo(tmp_path)
    started = tmp_path / "deps-started"
    run = lab.start_run(chat_id="alice")
    results = []
    worker = threading.Thread(target=lambda: results.append(run.call_tool(
        "worktree.provision", {"repoRoot": repo.root, "slug": "slow", "base": "main",
                               "depsCmd": f"touch {started}; sleep 60"})))
    worker.start()
    for _ in range(600):
        if started.exists():
            break
        worker.join(0.1)
    assert started.exists()
    assert run.cancel() == 1
    worker.join(60)
    assert not worker.is_alive()
    [result] = results
    assert (result.is_error, result.error_code, result.content) == (
        True, "cancelled", "worktree provisioning cancelled")
    assert not (tmp_path / "_worktrees" / "slow").exists()
    assert "wt/slow" not in repo.branches("wt/*")
