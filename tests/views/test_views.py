"""The pure renderers of :mod:`tavernlab.views`, without a kernel: exact text forms, and HTML
that folds long content but never cuts it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tavernlab import views
from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.host import Lab, Run
from tavernlab.js import CommandResult
from tavernlab.notebook._display import summarize_run
from tavernlab.skills import SkillIndexEntry
from tavernlab.views._markup import FOLD_LINES
from tavernlab.workspace.tools import ToolResult


@pytest.fixture
def fixed_run(tmp_path: Path) -> Run:
    """A run in a lab with a fixed clock and sequential ids, one file written."""
    lab = Lab(tmp_path / "lab", clock=FixedClock(), ids=SequentialIds())
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "hello\nworld\n"})
    return run


def test_tool_result_text_shows_every_field(fixed_run: Run) -> None:
    result = fixed_run.call_tool("workspace.read_file", {"path": "output/nope.md"})
    assert views.tool_result_text(result) == (
        "ToolResult ✗ workspace.file_not_found workspace.read_file (call_2)\n"
        "  content:\n"
        "    workspace path `output/nope.md` was not found.\n"
        "  structured:\n"
        "    {\n"
        '      "error": {\n'
        '        "code": "workspace.file_not_found",\n'
        '        "message": "workspace path `output/nope.md` was not found."\n'
        "      }\n"
        "    }")


def test_long_content_folds_in_html_and_is_never_cut() -> None:
    text = "".join(f"line {i} <b>\n" for i in range(FOLD_LINES + 5))
    html = views.tool_result_html(ToolResult(content=text, tool_id="workspace.read_file"))
    assert "<details><summary>content (25 lines, " in html
    for i in range(FOLD_LINES + 5):
        assert f"line {i} &lt;b&gt;" in html
    short = views.tool_result_html(ToolResult(content="short"))
    assert "<details" not in short and "short" in short


def test_command_and_shell_results(fixed_run: Run) -> None:
    assert views.command_result_text(CommandResult(5, "1\n", "", timed_out=True)) == (
        "CommandResult exit 5, timed out\n  stdout:\n    1")
    shell = fixed_run.shell("echo a; echo b >&2; exit 2")
    assert views.shell_result_text(shell) == (
        "ShellResult completed, exit 2 ✗ workspace.shell_exit (call_2)\n"
        "  stdout:\n    a\n  stderr:\n    b")
    html = views.shell_result_html(shell)
    assert "workspace.shell_exit" in html and "<code>call_2</code>" in html


def test_run_card(fixed_run: Run) -> None:
    summary = summarize_run(fixed_run)
    assert (summary.tool_calls, summary.js_jobs, summary.round) == (1, 0, 1)
    assert summary.files_changed[0] == "output/main.md"
    assert views.run_card_text(summary).split("\n")[:2] == [
        "Run run_00000000000000000000000000000001 (chat alice, foreground): calling_model",
        "  rounds: 1   tool calls: 1   js jobs: 0"]
    html = views.run_card_html(summary)
    assert "<code>run_00000000000000000000000000000001</code>" in html
    assert "chat commits (0)" in html and "files changed (2)" in html


def test_event_lines_keep_every_value(fixed_run: Run) -> None:
    last = fixed_run.events()[-2:]
    assert views.events_text(last) == (
        '   15 00:00:00.024 info  tool_call_completed round=1 '
        'invocationId="inv_00000000000000000000000000000001" callId="call_1" '
        'toolId="workspace.write_file" name="workspace_write_file" isError=false elapsedMs=8 '
        'resourceRefs=["output/main.md"]\n'
        '   16 00:00:00.026 info  status_changed status="calling_model"')
    html = views.events_html(last)
    assert html.count("<tr>") == 3 and "tool_call_completed" in html
    assert views.events_text([]) == "no events"


def test_tree_text(fixed_run: Run) -> None:
    assert views.tree_text(fixed_run.tree("output")) == (
        "output/  writable root\n└── main.md  12 B  writable")
    html = views.tree_html(fixed_run.tree())
    assert "main.md" in html and "writable" in html and "<details open>" in html


def test_a_root_the_model_writes_in_wears_no_read_only_badge(fixed_run: Run) -> None:
    text = views.tree_text(fixed_run.tree(depth=1))
    rows = dict(line.lstrip("├└─ ").split("  ", 1) for line in text.splitlines()[1:])
    assert rows["output/"] == rows["scratch/"] == rows["plan/"] == "writable root"
    assert rows["skills/"] == rows["tool-results/"] == "read-only"  # really read-only
    html = views.tree_html(fixed_run.tree(depth=1))
    assert "read-only, new entries allowed" not in html
    assert html.count('color:#2e7d32;border-radius:3px;padding:0 4px;font-size:85%">'
                      'writable root</span>') == text.count("writable root")


def test_a_lab_folds_its_older_runs(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab", clock=FixedClock(), ids=SequentialIds())
    for _ in range(views._runs.RECENT_RUNS + 2):
        lab.start_run(chat_id="c")
    html = views.lab_html(str(lab.root), lab.runs())
    assert "<details><summary>2 older runs</summary>" in html
    assert html.count("<code>run_") == views._runs.RECENT_RUNS + 2
    text = views.lab_text("/lab", lab.runs()[:1])
    assert text == ("Lab /lab (1 run)\n  run_0000000000000000000000000000000c  calling_model  "
                    "foreground chat c  2026-01-01 00:00:00")


def test_skill_entries() -> None:
    entry = SkillIndexEntry(name="greet", description="Greets.", version="1.0", tags=["a"],
                            installed_hash="ab" * 32, file_count=2, total_bytes=30,
                            has_scripts=True, has_binary=False,
                            installed_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert views.skill_entries_text([entry]) == (
        "greet (global) 1.0: Greets.\n  2 files, 30 bytes, scripts; installed "
        f"2026-01-02 03:04:05\n  hash {'ab' * 32}\n  tags: a")
    assert f"<code>{'ab' * 32}</code>" in views.skill_entries_html([entry])
    assert views.skill_entries_text([]) == "no skills installed"


def test_worktree_results() -> None:
    gate = {"passed": False, "exitCode": 3, "stdout": "a\nb\n", "stderr": ""}
    assert views.worktree_result_text("gate", gate) == (
        "gate\n  passed: false\n  exitCode: 3\n  stdout:\n    a\n    b\n  stderr: ")
    listing = [{"path": "/r", "branch": "main"}, {"path": "/w", "branch": None}]
    assert views.worktree_result_text("ls", listing) == (
        "ls\n  - path=/r  branch=main\n  - path=/w  branch=null")
    html = views.worktree_result_html("services", {"services": listing})
    assert html.count("<tr>") == 4  # the card's one field row, then a header and two records
    assert views.worktree_result_text("gc", []) == "gc\n  (nothing)"
    assert views.progress_line("s", 1.2, {"kind": "phase", "phase": "deps"}) == (
        "worktree s [  1.20s] phase deps")
