"""A run directory's layout is described once: the paths a run writes are the ones the
description gives, and no other module spells them."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

import tavernlab.layout as layout
from tavernlab.events._journal import TornTail
from tavernlab.host import Run
from tavernlab.workspace.roots import DEFAULT_ROOTS, READ_ONLY_ROOTS, RESERVED_ROOT_NAMES, Profile

SRC = Path(__file__).resolve().parents[2] / "src" / "tavernlab"


def test_the_paths_of_a_call_and_a_round() -> None:
    record = layout.tool_record_name(3, "call_00000000000000ab")
    assert record == "round-003-call_ab6a6a889892539e"  # the first 8 bytes of SHA-256(id)
    assert layout.tool_args_dir("inv_1") == "tool-args/inv_1"
    assert layout.tool_args_path("inv_1", record) == f"tool-args/inv_1/{record}.json"
    assert layout.tool_result_path("inv_1", record) == f"tool-results/inv_1/{record}.json"
    assert layout.tool_result_view_path("run_9", record) == f"tool-results/run_9/{record}.txt"
    assert layout.tool_snapshot_path("inv_root") == \
        "input/invocations/inv_root/tool_snapshot.json"
    assert layout.model_response_path(None, 2) == "model-responses/round-002.json"
    assert layout.model_response_path("inv_7", 12) == "model-responses/inv_7/round-012.json"
    assert layout.js_job_path("job_1") == "js-jobs/job_1.json"


def test_the_named_files() -> None:
    assert (layout.RUN_RECORD, layout.MANIFEST, layout.EVENTS, layout.JOURNAL) == (
        "run.json", "manifest.json", "events.jsonl", "journal.jsonl")
    assert layout.LOGS == ("events.jsonl", "journal.jsonl")
    assert [layout.PROMPT_SNAPSHOT, layout.RESOLVED_PROFILE, layout.ORIGIN,
            layout.SKILL_BINDINGS, layout.SYSTEM_PROMPT, layout.PERSIST_SNAPSHOT,
            layout.HOST_CHAT, layout.RESOLVED_SKILLS, layout.LOOP_START] == [
        "input/prompt_snapshot.json", "input/resolved_profile.json", "input/origin.json",
        "input/skill_bindings.json", "input/system_prompt.md", "input/persist_snapshot.json",
        "input/host_chat.json", "input/resolved_skills.json", "input/loop_start.json"]
    assert {".workspace.lock", ".tavernlab-staging",
                                     ".tavernlab-calls"} == layout.INTERNAL_NAMES


def test_the_policy_and_the_profile_take_their_names_from_the_layout() -> None:
    assert DEFAULT_ROOTS == ("output", "scratch", "plan", "summaries", "persist")
    assert READ_ONLY_ROOTS == ("tool-results", "skills")
    assert {
        "runs", "input", "invocations", "tasks", "agent-results", "model-responses",
        "tool-args", "checkpoints", "events.jsonl", "manifest.json", "run.json",
        "journal.jsonl", "js-jobs"} == RESERVED_ROOT_NAMES
    profile = Profile()
    assert profile.workspace.message_body_path == layout.MESSAGE_BODY == "output/main.md"


def test_the_journal_names_the_logs_of_the_layout() -> None:
    assert get_args(TornTail.model_fields["file"].annotation) == layout.LOGS


def test_a_run_writes_where_the_layout_says(run: Run) -> None:
    result = run.call_tool("workspace.write_file", {"path": layout.MESSAGE_BODY, "content": "hi"})
    assert not result.is_error
    run.js(["-e", "console.log(1)"])
    for name in (layout.RUN_RECORD, layout.MANIFEST, layout.EVENTS, layout.JOURNAL,
                 layout.PROMPT_SNAPSHOT, layout.RESOLVED_PROFILE, layout.ORIGIN,
                 layout.SKILL_BINDINGS, layout.SYSTEM_PROMPT, layout.MESSAGE_BODY):
        assert (run.dir / name).is_file(), name
    stored = sorted(p.relative_to(run.dir).as_posix()
                    for p in (run.dir / layout.TOOL_RESULTS).rglob("*.json"))
    args = sorted(p.relative_to(run.dir).as_posix()
                  for p in (run.dir / layout.TOOL_ARGS).rglob("*.json"))
    assert len(stored) == len(args) == 1
    invocation, record = Path(stored[0]).parent.name, Path(stored[0]).stem
    assert stored[0] == layout.tool_result_path(invocation, record)
    assert args[0] == layout.tool_args_path(invocation, record)
    assert re.fullmatch(r"round-\d{3}-call_[0-9a-f]{16}", record)
    (job,) = (run.dir / layout.JS_JOBS).iterdir()
    assert job.relative_to(run.dir).as_posix() == layout.js_job_path(job.stem)


#: Strings that name a run directory's files or folders (alone or as a path's start).
_NAMES = re.compile(r"^(run\.json|manifest\.json|events\.jsonl|journal\.jsonl|tool-args|"
                    r"tool-results|model-responses|js-jobs|input(/|$)|output(/|$)|"
                    r"\.tavernlab-staging|\.tavernlab-calls|\.workspace\.lock)")
#: Where such a string is something else: a persist state's and a bundle's own manifest, a
#: provider's wire field, a result's "output" label or envelope key, the demo's model
#: arguments, the journal's ``Literal`` of its logs (pinned above to the layout).
_ELSEWHERE = {"workspace/persist/_persist.py", "replay/_bundle.py", "models/_claude.py",
              "views/_results.py", "worktree/_tools.py", "demo/_workspace.py", "demo/_shell.py",
              "events/_journal.py"}


def test_no_other_module_spells_the_layout() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel == "layout.py" or rel in _ELSEWHERE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(node.value) for node in ast.walk(tree)
                if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docs and " " not in node.value \
                    and _NAMES.match(node.value):
                offenders.append(f"{rel}:{node.lineno} {node.value!r}")
    assert offenders == []
