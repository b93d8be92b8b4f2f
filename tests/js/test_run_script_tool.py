"""The legacy ``skill.run_script`` tool (docs/js-and-skills.md, "The legacy engine").

Runs go through ``Lab(tmp_path).start_run(..., legacy_run_script=True)`` and
``run.call_tool("skill.run_script", {...})`` with a real installed skill package. A change to
the workspace "after the snapshot" is made by a real ``logging`` handler on
``tavernlab.skill_script``: the script logs while it runs, and the handler (called in the
parent while the log call is served) edits the file on disk.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tavernlab.host import CallContext, Lab, Run
from tavernlab.js import SkillScriptValidationError, SnapshotFile
from tavernlab.js._errors import SkillScriptContextError
from tavernlab.js._legacy import ScriptWrite
from tavernlab.skills._run_script import build_request, write_back
from tavernlab.workspace.roots import Profile
from tavernlab.workspace.roots._profile import WorkspaceSettings
from tavernlab.workspace.tools import Arguments, ToolResult

from .conftest import SNAPSHOT, write

V1 = "import { workspace, context, log } from '@tauritavern/runtime/v1';\n"

SCRIPTS = {
    "main.js": V1 + "import { twice } from './lib/util.js';\n"
                    "export default (a) => ({ doubled: twice(a.x), local: context.variables.local"
                    ".score });\n",
    "lib/util.js": "export const twice = (x) => x * 2;\n",
    "helper.js": "export default () => 'helper';\n",
    "helper-2.js": "export default () => 'helper-2';\n",
    "0helper.js": "export default () => '0helper';\n",
    "write.js": V1 + "export default (a) => {\n"
                     "  for (const [path, text] of a.writes) {\n"
                     "    if (path === 'log') log.info(text);\n"
                     "    else workspace.writeText(path, text);\n"
                     "  }\n"
                     "  return a.writes.length;\n"
                     "};\n",
    "snapshot.js": V1 + "export default () => [workspace.listFiles(),\n"
                        "  workspace.listFiles('output'), workspace.exists('output/bin.dat'),\n"
                        "  workspace.exists('skills/demo')];\n",
}


@pytest.fixture
def skill_lab(tmp_path: Path) -> Lab:
    """A lab with the skill ``demo`` installed globally."""
    package = tmp_path / "demo"
    write(package, "SKILL.md", "---\nname: demo\ndescription: Demo scripts.\n---\n# Demo\n")
    for name, source in SCRIPTS.items():
        write(package, f"scripts/{name}", source)
    write(package, "scripts/data.json", "{}")
    write(package, "scripts/latin1.js", b"// caf\xe9\n")
    lab = Lab(tmp_path / "lab")
    lab.skills.install(package)
    return lab


@pytest.fixture
def legacy_run(skill_lab: Lab) -> Run:
    """A Chat run with the compatibility mode on and the shared frozen context."""
    return skill_lab.start_run(chat_id="alice", legacy_run_script=True, context=SNAPSHOT)


def call(run: Run, arguments: dict[str, Any], **kwargs: Any) -> ToolResult:
    """``run.call_tool("skill.run_script", arguments)``."""
    return run.call_tool("skill.run_script", arguments, **kwargs)


def error(result: ToolResult) -> tuple[str | None, str]:
    """``(errorCode, content)`` of an error result."""
    assert result.is_error
    return result.error_code, result.content


@pytest.fixture
def on_log() -> Iterator[Callable[[Callable[[str], None]], None]]:
    """Install a real handler on ``tavernlab.skill_script`` that calls ``action(message)``."""
    logger = logging.getLogger("tavernlab.skill_script")
    handlers: list[logging.Handler] = []
    level = logger.level

    def install(action: Callable[[str], None]) -> None:
        class Hook(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                action(record.getMessage())

        handler = Hook()
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        handlers.append(handler)

    yield install
    for handler in handlers:
        logger.removeHandler(handler)
    logger.setLevel(level)


# --- happy path ------------------------------------------------------------------------


def test_success_result(legacy_run: Run) -> None:
    result = call(legacy_run, {"skill": " demo ", "script": "main", "args": {"x": 21}})
    assert not result.is_error
    assert result.content == ('Executed skill script `demo/scripts/main.js`. Result:\n'
                              '{"doubled":42,"local":3}')
    assert result.structured == {"doubled": 42, "local": 3}
    assert result.resource_refs == []


def test_off_by_default(skill_lab: Lab) -> None:
    run = skill_lab.start_run(chat_id="bob")
    assert error(call(run, {"skill": "demo", "script": "main"})) == (
        "tool.unknown", "Unknown tool `skill.run_script`.")


@pytest.mark.parametrize(("arguments", "message"), [
    ({"script": "main"}, "skill is required"),
    ({"skill": "  ", "script": "main"}, "skill is required"),
    ({"skill": "demo"}, "script is required"),
    ({"skill": "demo", "script": "main", "args": [1]}, "args must be an object"),
    ({"skill": "demo", "script": "main", "args": "x"}, "args must be an object"),
    ({"skill": "demo", "script": "main", "extra": 1}, "extra is not supported"),
])
def test_invalid_arguments(legacy_run: Run, arguments: dict[str, Any], message: str) -> None:
    assert error(call(legacy_run, arguments)) == ("tool.invalid_arguments", message)


# --- the tool through a run ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["helper", "helper-2", "0helper"])
def test_acceptance_19_valid_names(legacy_run: Run, name: str) -> None:
    assert call(legacy_run, {"skill": "demo", "script": name}).structured == name


@pytest.mark.parametrize("name", ["Helper", "bad_name", "bad/name", "bad.js", ".hidden", "",
                                  "-leading", "a..b"])
def test_acceptance_19_invalid_names(legacy_run: Run, name: str) -> None:
    code, content = error(call(legacy_run, {"skill": "demo", "script": name}))
    assert code == "skill.run_script_invalid_name"
    assert content == (f"script name `{name}` is invalid: use lowercase letters, digits, and "
                       "hyphens (pattern ^[a-z0-9][a-z0-9-]*$). Check the exact script name in "
                       "this skill's SKILL.md.")


def test_acceptance_20_policy_effective_set_and_missing_script(skill_lab: Lab) -> None:
    denied = skill_lab.start_run(chat_id="a", legacy_run_script=True,
                                 profile={"skills": {"deny": ["demo"]}})
    assert error(call(denied, {"skill": "demo", "script": "main"})) == (
        "skill.run_script_skill_not_visible", "Skill `demo` is not available under the current "
        "policy. Call skill_list to see available skills.")
    unbound = skill_lab.start_run(chat_id="b", legacy_run_script=True, skills=[])
    assert error(call(unbound, {"skill": "demo", "script": "main"})) == (
        "skill.run_script_skill_not_visible", "Skill `demo` is not available in the current "
        "Skill set. Call skill_list to see available skills.")
    run = skill_lab.start_run(chat_id="c", legacy_run_script=True)
    assert error(call(run, {"skill": "demo", "script": "nope"})) == (
        "skill.run_script_not_found", "Script `scripts/nope.js` was not found in skill `demo`. "
        "Call skill_read on this skill's SKILL.md to check which scripts it ships.")
    assert error(call(run, {"skill": "demo", "script": "latin1"}))[0] == (
        "skill.run_script_not_found")


def test_acceptance_21_engine_request(legacy_run: Run) -> None:
    sub = legacy_run.start_subagent("helper", Profile(workspace=WorkspaceSettings(
        visible_roots=["output", "scratch"], writable_roots=["scratch"])))
    write(legacy_run.workspace_dir, "output/seen.md", "seen")
    tool_call = CallContext(legacy_run._core, sub, "call_x", "skill.run_script", 1)
    request = build_request(tool_call, Arguments(
        {"skill": "demo", "script": "write", "args": {"writes": [], "n": [1, None]}},
        ("skill", "script", "args")))
    assert request.entry == "scripts/write.js"
    assert sorted(request.modules) == ["scripts/0helper.js", "scripts/helper-2.js",
                                       "scripts/helper.js", "scripts/lib/util.js",
                                       "scripts/main.js", "scripts/snapshot.js",
                                       "scripts/write.js"]
    assert request.modules["scripts/main.js"] == SCRIPTS["main.js"]
    assert request.args == {"writes": [], "n": [1, None]}
    assert request.visible_roots == ("output", "scratch", "skills", "tool-results")
    assert request.writable_roots == ("scratch",)
    assert legacy_run.internals.profile.policy().writable_roots != request.writable_roots
    assert request.context["variables"] == SNAPSHOT["variables"]
    assert request.context["worldInfo"] == {"entries": SNAPSHOT["worldInfoActivation"]["entries"]}
    assert "output/seen.md" in request.files
    result = call(legacy_run, {"skill": "demo", "script": "write",
                               "args": {"writes": [["output/x.md", "x"]]}}, invocation=sub)
    assert error(result)[1].startswith("Skill script scripts/write.js failed: Error: path is "
                                       "outside the writable workspace roots: output/x.md")


def test_acceptance_22_malformed_context_aborts(skill_lab: Lab) -> None:
    run = skill_lab.start_run(chat_id="m", legacy_run_script=True,
                              context={"worldInfoActivation": {"entries": {"not": "a list"}}})
    with pytest.raises(SkillScriptContextError) as caught:
        call(run, {"skill": "demo", "script": "main", "args": {"x": 1}})
    assert caught.value.message == ("agent.invalid_skill_script_context: "
                                    "worldInfoActivation.entries must be an array")


def test_acceptance_23_writes_are_resource_refs_and_feed_auto_commit(legacy_run: Run) -> None:
    writes = [["output/b.md", "B"], ["scratch/data.json", "{}"], ["output/a.md", "A"]]
    result = call(legacy_run, {"skill": "demo", "script": "write", "args": {"writes": writes}})
    assert result.resource_refs == ["output/a.md", "output/b.md", "scratch/data.json"]
    assert legacy_run.read("output/a.md") == "A" and legacy_run.read("output/b.md") == "B"
    assert legacy_run.internals.scope.tracker.candidate == "output/a.md"
    none = call(legacy_run, {"skill": "demo", "script": "helper"})
    assert none.resource_refs == [] and not none.is_error


def test_last_write_that_is_not_text_keeps_the_earlier_candidate(legacy_run: Run) -> None:
    call(legacy_run, {"skill": "demo", "script": "write",
                      "args": {"writes": [["output/first.md", "1"]]}}, call_id="first")
    call(legacy_run, {"skill": "demo", "script": "write",
                      "args": {"writes": [["output/z.md", "z"], ["scratch/last.json", "{}"]]}},
         call_id="second")
    assert legacy_run.internals.scope.tracker.candidate == "output/first.md"
    # the auto-commit still names the call that set that candidate
    assert legacy_run.internals.scope.tracker.candidate_call_id == "first"


def test_acceptance_24_one_non_writable_path_writes_nothing(legacy_run: Run) -> None:
    from tavernlab.errors import ToolError

    delta = [ScriptWrite("output/a.md", "a"), ScriptWrite("skills/demo/x.md", "x"),
             ScriptWrite("scratch/z.md", "z")]
    with pytest.raises(ToolError) as caught:
        write_back(legacy_run.internals.scope, {}, delta, "scratch/z.md")
    assert (caught.value.code, caught.value.message) == (
        "skill.run_script_write_failed", "Write path `skills/demo/x.md` is outside the writable "
        "workspace roots (output, persist, plan, scratch, summaries).")
    assert not (legacy_run.workspace_dir / "output" / "a.md").exists()
    assert not (legacy_run.workspace_dir / "scratch" / "z.md").exists()


def test_acceptance_25_stale_first_file_has_zero_side_effects(
        legacy_run: Run, on_log: Callable[[Callable[[str], None]], None]) -> None:
    target = write(legacy_run.workspace_dir, "output/a.md", "original")
    on_log(lambda message: target.write_text("changed by someone else"))
    writes = [["output/a.md", "script"], ["log", "snapshot taken"], ["output/b.md", "b"]]
    code, content = error(call(legacy_run, {"skill": "demo", "script": "write",
                                            "args": {"writes": writes}}))
    assert code == "skill.run_script_write_failed"
    assert content.startswith("Write to `output/a.md` failed: workspace file `output/a.md` "
                              "changed: expected sha256 ")
    assert content.endswith(". 0/2 writes were applied; already written: none. Re-read the "
                            "listed files before retrying.")
    assert target.read_text() == "changed by someone else"
    assert not (legacy_run.workspace_dir / "output" / "b.md").exists()


def test_acceptance_26_failure_mid_batch_keeps_earlier_files(
        legacy_run: Run, on_log: Callable[[Callable[[str], None]], None]) -> None:
    call(legacy_run, {"skill": "demo", "script": "write",
                      "args": {"writes": [["output/earlier.md", "e"]]}})
    assert legacy_run.internals.scope.tracker.candidate == "output/earlier.md"
    created = legacy_run.workspace_dir / "output" / "b.md"
    on_log(lambda message: created.write_text("appeared"))
    writes = [["output/c.md", "c"], ["output/a.md", "a"], ["log", "now"], ["output/b.md", "b"]]
    result = call(legacy_run, {"skill": "demo", "script": "write", "args": {"writes": writes}})
    code, content = error(result)
    assert code == "skill.run_script_write_failed"
    assert content == ("Write to `output/b.md` failed: workspace file `output/b.md` already "
                       "exists. 1/3 writes were applied; already written: output/a.md. Re-read "
                       "the listed files before retrying.")
    assert result.resource_refs == ["output/a.md"]
    assert legacy_run.read("output/a.md") == "a"
    assert created.read_text() == "appeared"
    assert not (legacy_run.workspace_dir / "output" / "c.md").exists()
    assert legacy_run.internals.scope.tracker.candidate is None


def test_acceptance_27_a_root_over_1000_entries_fails_before_execution(legacy_run: Run) -> None:
    crowded = legacy_run.workspace_dir / "scratch" / "crowded"
    crowded.mkdir(parents=True)
    for i in range(1001):
        os.close(os.open(crowded / f"{i}.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    with pytest.raises(SkillScriptValidationError) as caught:
        call(legacy_run, {"skill": "demo", "script": "write",
                          "args": {"writes": [["output/never.md", "x"]]}})
    assert "truncated" in caught.value.message
    assert not (legacy_run.workspace_dir / "output" / "never.md").exists()


def test_workspace_snapshot_leaves_out_skills_and_binary_files(legacy_run: Run) -> None:
    write(legacy_run.workspace_dir, "output/text.md", "t")
    write(legacy_run.workspace_dir, "output/bin.dat", b"\xff\x00")
    result = call(legacy_run, {"skill": "demo", "script": "snapshot"})
    listed = result.structured
    assert "output" in listed[0] and "skills" not in listed[0]
    assert "text.md" in listed[1] and "bin.dat" not in listed[1]
    assert listed[2:] == [False, False]
    snapshot_file = build_request(
        CallContext(legacy_run._core, legacy_run.internals.main, "c", "skill.run_script", 1),
        Arguments({"skill": "demo", "script": "snapshot"}, ("skill", "script", "args")),
    ).files["output/text.md"]
    assert snapshot_file == SnapshotFile("t", snapshot_file.sha256)
    assert len(snapshot_file.sha256) == 64


def test_module_snapshot_limit_aborts(skill_lab: Lab, tmp_path: Path) -> None:
    package = tmp_path / "many"
    write(package, "SKILL.md", "---\nname: many\ndescription: Many modules.\n---\n")
    write(package, "scripts/main.js", "export default () => 1;\n")
    for i in range(64):
        write(package, f"scripts/m{i}.js", "export {};\n")
    skill_lab.skills.install(package)
    run = skill_lab.start_run(chat_id="z", legacy_run_script=True)
    with pytest.raises(SkillScriptValidationError) as caught:
        call(run, {"skill": "many", "script": "main"})
    assert caught.value.message == ("skill `many` scripts exceed the 64-module / 2097152-byte "
                                    "snapshot limit")


@pytest.mark.parametrize("failure", ["throw new Error('late')", "return undefined",
                                     "return 'x'.repeat(300 * 1024)", "return 1n"])
def test_a_failing_script_writes_nothing(skill_lab: Lab, tmp_path: Path, failure: str) -> None:
    package = tmp_path / "failing"
    write(package, "SKILL.md", "---\nname: failing\ndescription: Fails late.\n---\n")
    write(package, "scripts/main.js", V1 + "export default () => {\n"
                                           "  workspace.writeText('output/partial.md', 'p');\n"
                                           f"  {failure};\n"
                                           "};\n")
    skill_lab.skills.install(package)
    run = skill_lab.start_run(chat_id="f", legacy_run_script=True)
    before = sorted(p.relative_to(run.workspace_dir).as_posix()
                    for p in (run.workspace_dir / "output").rglob("*"))
    result = call(run, {"skill": "failing", "script": "main"})
    assert result.is_error and result.resource_refs == []
    assert result.error_code in ("skill.run_script_execution_failed",
                                 "skill.run_script_result_too_large")
    assert sorted(p.relative_to(run.workspace_dir).as_posix()
                  for p in (run.workspace_dir / "output").rglob("*")) == before
    assert run.internals.scope.tracker.candidate is None
