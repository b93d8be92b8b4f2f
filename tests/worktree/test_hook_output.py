"""tavernlab's output seam: the lines the ``deps`` command and the setup hooks print reach
``ProvisionContext.on_output`` as they are printed, while upstream's progress events stay
exactly as they were."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tavernlab.worktree import (
    OutputLine,
    ProgressEvent,
    ProvisionContext,
    ToolError,
    call_tool,
    run_with_provision_context,
)
from tavernlab.worktree._process import run_shell

from .conftest import Repo


def provision_watched(repo: Repo, slug: str, **extra: Any
                      ) -> tuple[list[ProgressEvent | OutputLine], dict[str, Any]]:
    seen: list[ProgressEvent | OutputLine] = []
    context = ProvisionContext(on_progress=seen.append, on_output=seen.append)
    out = run_with_provision_context(context, lambda: call_tool(
        "worktree.provision", {"repoRoot": repo.root, "slug": slug, "base": "main", **extra}))
    return seen, out


def test_setup_hook_lines_arrive_in_order_between_the_progress_events(repo: Repo) -> None:
    repo.commit_config({"worktree": {"setup": ["echo one; echo two", "printf 'three'"]}})
    seen, _ = provision_watched(repo, "lines")
    assert seen == [
        {"kind": "started", "phase": "setup"},
        {"kind": "phase", "phase": "setup"},
        {"phase": "setup", "stream": "stdout", "line": "one"},
        {"phase": "setup", "stream": "stdout", "line": "two"},
        {"phase": "setup", "stream": "stdout", "line": "three"},
        {"kind": "done", "outcome": "ok"},
    ]


def test_a_line_is_delivered_while_the_hook_still_runs(repo: Repo, tmp_path: Path) -> None:
    """The hook waits (at most 20 s) for a file that only the observer creates, once it has
    seen the hook's first line: without streaming the hook would exit 3."""
    go = tmp_path / "go"
    repo.commit_config({"worktree": {"setup": (
        f"echo ready; i=0; while [ ! -f {go} ]; do i=$((i+1)); "
        f"[ $i -gt 400 ] && exit 3; sleep 0.05; done; echo after")}})

    def on_output(line: OutputLine) -> None:
        lines.append(line["line"])
        if line["line"] == "ready":
            go.write_text("")

    lines: list[str] = []
    run_with_provision_context(ProvisionContext(on_output=on_output), lambda: call_tool(
        "worktree.provision", {"repoRoot": repo.root, "slug": "live", "base": "main"}))
    assert lines == ["ready", "after"]


def test_deps_output_is_streamed_with_its_phase_and_stream(repo: Repo) -> None:
    seen, _ = provision_watched(repo, "deps", depsCmd="echo installing; echo warned >&2")
    lines = [item for item in seen if "line" in item]
    assert sorted(map(str, lines)) == sorted(map(str, [
        {"phase": "deps", "stream": "stdout", "line": "installing"},
        {"phase": "deps", "stream": "stderr", "line": "warned"}]))
    assert [item for item in seen if "kind" in item] == [
        {"kind": "started", "phase": "deps"}, {"kind": "phase", "phase": "deps"},
        {"kind": "done", "outcome": "ok"}]


def test_a_failing_hook_is_streamed_and_still_reports_its_tail(repo: Repo) -> None:
    repo.commit_config({"worktree": {"setup": "echo before-failure; exit 4"}})
    lines: list[OutputLine] = []
    with pytest.raises(ToolError) as caught:
        run_with_provision_context(ProvisionContext(on_output=lines.append), lambda: call_tool(
            "worktree.provision", {"repoRoot": repo.root, "slug": "fails", "base": "main"}))
    assert caught.value.message == ("worktree setup hook failed (exit 4): echo before-failure; "
                                    "exit 4\nbefore-failure")
    assert lines == [{"phase": "setup", "stream": "stdout", "line": "before-failure"}]


def test_an_observer_that_raises_never_breaks_the_provision(repo: Repo) -> None:
    repo.commit_config({"worktree": {"setup": "echo fine"}})

    def broken(line: OutputLine) -> None:
        raise RuntimeError("observer bug")

    out = run_with_provision_context(ProvisionContext(on_output=broken), lambda: call_tool(
        "worktree.provision", {"repoRoot": repo.root, "slug": "robust", "base": "main"}))
    assert out["branch"] == "wt/robust"


def test_run_shell_streams_lines_and_keeps_the_whole_output(tmp_path: Path) -> None:
    lines: list[tuple[str, str]] = []
    result = run_shell("printf 'a\\nb\\n'; printf 'c' >&2; printf 'tail'", cwd=tmp_path,
                       on_line=lambda stream, line: lines.append((stream, line)))
    assert (result.exit_code, result.stdout, result.stderr) == (0, "a\nb\ntail", "c")
    assert [line for line in lines if line[0] == "stdout"] == [
        ("stdout", "a"), ("stdout", "b"), ("stdout", "tail")]
    assert [line for line in lines if line[0] == "stderr"] == [("stderr", "c")]


def test_without_an_observer_nothing_is_streamed(repo: Repo) -> None:
    assert ProvisionContext().line_observer("setup") is None
    repo.commit_config({"worktree": {"setup": "echo quiet"}})
    seen: list[ProgressEvent] = []
    run_with_provision_context(ProvisionContext(on_progress=seen.append), lambda: call_tool(
        "worktree.provision", {"repoRoot": repo.root, "slug": "quiet", "base": "main"}))
    assert seen == [{"kind": "started", "phase": "setup"}, {"kind": "phase", "phase": "setup"},
                    {"kind": "done", "outcome": "ok"}]
