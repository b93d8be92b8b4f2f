"""``%worktree`` against a real repository: provision with live progress, gate, scripts, a
service behind the notebook's proxy, removal, GC, the progress seam and bad input."""

from __future__ import annotations

import http.client
import json
import re
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from notebook_support import Notebook
from worktree.conftest import Repo, make_repo

from tavernlab.cancel import CancelToken
from tavernlab.errors import ToolError
from tavernlab.errors import UsageError as TavernUsageError
from tavernlab.notebook import current_state, set_progress_factory
from tavernlab.notebook._display import WorktreeResult
from tavernlab.worktree import Outcome, OutputLine, ProgressEvent
from tavernlab.worktree._proxy_table import proxy_table
from tavernlab.worktree._scheduler import ProvisionScheduler, reset_provision_scheduler
from tavernlab.worktree._services import default_registry

CONFIG = {
    "worktree": {"setup": 'echo "set up $AGENTPROTO_BRANCH_NAME" > setup-ran.txt'},
    "scripts": {
        "test": {"command": "test -f setup-ran.txt"},
        "web": {"command": f"exec {sys.executable} -m http.server $AGENTPROTO_PORT "
                           "--bind 127.0.0.1 >/dev/null 2>&1", "type": "service"},
    },
}


@pytest.fixture
def repo(nb: Notebook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Repo]:
    """A repository with a bare origin and a committed agentproto.json; the notebook works
    inside it (its lab elsewhere), with a private HOME and git identity."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Tavern Lab")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "lab@example.invalid")
    reset_provision_scheduler(ProvisionScheduler())
    base = tmp_path / "work"
    base.mkdir()
    made = make_repo(base)
    made.write(".gitignore", "node_modules/\n.agentproto/\nsetup-ran.txt\n")
    made.commit({"agentproto.json": json.dumps(CONFIG, indent=2)}, "config")
    nb.cell(f"%config TavernMagics.lab_path = {str(tmp_path / 'lab')!r}")
    monkeypatch.chdir(made.path)
    try:
        yield made
    finally:
        default_registry().close()
        proxy_table.clear()


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def test_a_worktree_from_provision_to_removal(nb: Notebook, repo: Repo) -> None:
    set_progress_factory(None)  # the text line (the widgets plugin installs the widget)
    made = nb.cell("%worktree new add-search --deps-cmd 'echo deps'")
    assert made.error is None
    result = made.value
    assert isinstance(result, WorktreeResult)
    assert result["branch"] == "wt/add-search"
    cwd = Path(result["cwd"])
    assert (cwd / "setup-ran.txt").read_text() == "set up wt/add-search\n"
    lines = [o["text/plain"] for o in made.outputs]
    assert re.fullmatch(r"worktree add-search \[\s*\d+\.\d\ds\] starting", lines[0])
    assert any(line.endswith("] slot granted, starting deps") for line in lines)
    assert re.fullmatch(r"worktree add-search \[\s*\d+\.\d\ds\] done: ok", lines[-1])
    assert current_state(nb.shell).worktree is not None

    listed = nb.cell("%worktree ls").value
    assert [r.get("branch") for r in listed.data] == ["main", "wt/add-search"]
    gate = nb.cell("%worktree gate test -f setup-ran.txt").value
    assert (gate["passed"], gate["exitCode"]) == (True, 0)
    quoted = nb.cell("%worktree gate 'echo \"a b\" && exit 3'").value
    assert (quoted["passed"], quoted["exitCode"], quoted["stdout"]) == (False, 3, "a b\n")
    assert nb.cell("%worktree run test").value["passed"] is True

    _serve_through_the_proxy(nb)

    removed = nb.cell("%worktree rm add-search --delete-branch --discard-untracked").value
    assert removed.data == {"removed": True}
    assert not cwd.exists() and repo.branches("wt/add-search") == ""
    assert current_state(nb.shell).worktree is None
    assert nb.cell("%worktree gc").value.data == []


def _serve_through_the_proxy(nb: Notebook) -> None:
    proxy = nb.cell("%worktree proxy").value
    started = nb.cell("%worktree start web").value
    assert started["status"] == "running"
    assert started["url"].endswith(f":{proxy['port']}")
    _wait_listening(started["port"])
    connection = http.client.HTTPConnection("127.0.0.1", proxy["port"], timeout=10)
    connection.request("GET", "/setup-ran.txt", headers={"Host": started["hostname"]})
    response = connection.getresponse()
    assert (response.status, response.read()) == (200, b"set up wt/add-search\n")
    connection.close()
    listed = nb.cell("%worktree services").value
    assert [(s["name"], s["status"]) for s in listed["services"]] == [("web", "running")]
    assert nb.cell("%worktree stop web").value.data == {"stopped": True}


def test_switching_the_lab_stops_the_notebook_proxy(nb: Notebook, tmp_path: Path) -> None:
    port = nb.cell("%worktree proxy").value["port"]
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    nb.cell(f"%tavern lab {tmp_path / 'other-lab'} --create")
    assert current_state(nb.shell).proxy is None
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_the_progress_display_is_a_seam(nb: Notebook, repo: Repo) -> None:
    seen: list[tuple[str, object]] = []

    class Recorder:
        def __init__(self, slug: str, token: CancelToken) -> None:
            seen.append(("start", slug))

        def update(self, event: ProgressEvent) -> None:
            seen.append(("event", event["kind"]))

        def output(self, line: OutputLine) -> None:
            seen.append(("output", line["line"]))

        def close(self, outcome: Outcome) -> None:
            seen.append(("close", outcome))

    set_progress_factory(Recorder)
    try:
        nb.cell("%worktree new seam --no-setup")
        failed = nb.cell("%worktree new Bad_Slug")
    finally:
        set_progress_factory(None)
    assert seen[0] == ("start", "seam") and seen[-3:] == [
        ("close", "ok"), ("start", "Bad_Slug"), ("close", "failed")]
    assert ("event", "done") in seen
    assert isinstance(failed.error, ToolError) and failed.error.code == "input_invalid"
    assert failed.stdout == f"input_invalid: {failed.error.message}\n"


def test_bad_input(nb: Notebook, repo: Repo) -> None:
    cases = {
        "%worktree": "%worktree: give a command (new, ls, gate, agent, run, start, stop, services, "
                     "rm, archive, gc, proxy); `%worktree?` shows their options",
        "%worktree new": "%worktree new: the following arguments are required: SLUG",
        "%worktree rm": "%worktree rm: the following arguments are required: PATH|SLUG",
        "%worktree gate": "%worktree gate: give the check command (%worktree gate CMD)",
        "%worktree proxy --port x": "%worktree proxy: argument --port: invalid int value: 'x'",
    }
    for source, message in cases.items():
        ran = nb.cell(source)
        assert isinstance(ran.error, UsageError), source
        assert str(ran.error) == message
    no_current = nb.cell("%worktree gate true")
    assert isinstance(no_current.error, TavernUsageError)
    assert no_current.stdout == ("usage: no current worktree: run `%worktree new SLUG` first "
                                 "or pass --worktree PATH\n")
    unknown = nb.cell("%worktree rm nope")
    assert isinstance(unknown.error, ToolError)
    assert unknown.stdout == f"not_found: not a linked worktree of {repo.path}: nope\n"
    assert "%worktree new [-h] [--repo REPO] [--base BASE]" in nb.cell("%worktree?").stdout
    examples = nb.cell("%worktree?").stdout.split("Examples\n--------\n", 1)[1]
    assert "%worktree new fix-login" in examples and "%worktree gc --apply" in examples


def test_options_repo_base_branch_worktree_gc_apply_and_proxy_port(
        nb: Notebook, repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # outside the repository: --repo names it
    made = nb.cell(f"%worktree new other --repo {repo.path} --base origin/main "
                   "--branch feature/other --no-setup").value
    assert made.data == {"cwd": str(repo.path.parent / "_worktrees" / "other"),
                         "branch": "feature/other"}
    assert not (Path(made["cwd"]) / "setup-ran.txt").exists()
    gate = nb.cell(f"%worktree gate --worktree other --repo {repo.path} pwd").value
    assert (gate["passed"], gate["stdout"]) == (True, made["cwd"] + "\n")
    by_path = nb.cell(f"%worktree run --worktree {made['cwd']} test").value
    assert by_path["passed"] is False  # --no-setup: the setup hook never wrote its file
    first = nb.cell("%worktree proxy").value["port"]
    moved = nb.cell("%worktree proxy --port 0").value["port"]
    assert moved != first
    plan = nb.cell(f"%worktree gc --repo {repo.path}").value
    assert [(e["path"], e["class"]) for e in plan.data] == [(made["cwd"], "reclaim")]
    applied = nb.cell(f"%worktree gc --apply --repo {repo.path}").value
    assert [(r["path"], r["result"]) for r in applied.data] == [(made["cwd"], "reclaimed")]
    assert not Path(made["cwd"]).exists()  # no commits beyond the base: nothing to lose


def test_the_widget_progress_leaves_the_final_state_in_the_cell(nb: Notebook, repo: Repo
                                                                ) -> None:
    made = nb.cell("%worktree new shown --deps-cmd 'echo deps'")
    assert made.error is None
    snapshots = [o["text/plain"] for o in made.outputs if "text/plain" in o]
    assert snapshots[0].startswith("Worktree shown: running")  # as the widget appeared
    assert len(snapshots) == 2  # and as it ended: the display was updated in place
    final = snapshots[1]
    assert final.startswith("Worktree shown: ready in ")
    assert [line.split()[:2] for line in final.splitlines()[1:]] == [
        ["ok", "prepare"], ["ok", "deps"], ["ok", "setup"], ["|", "deps"]]
    assert made.value["branch"] == "wt/shown"


def test_a_gc_plan_is_stamped_by_the_lab_clock(nb: Notebook, repo: Repo, tmp_path: Path
                                               ) -> None:
    nb.cell(f"%tavern lab '{tmp_path / 'fixed'}' --create --fixed-clock")
    made = nb.cell("%worktree new stamped --no-setup").value
    plan = nb.cell("%worktree gc").value.data
    assert [entry["path"] for entry in plan] == [made["cwd"]]
    assert plan[0]["integration"]["checkedAt"].startswith("2026-01-01T00:00:00.")


def test_a_shell_call_on_another_run(nb: Notebook) -> None:
    nb.cell("other = %tavern run new --chat other")
    nb.cell("%tavern run new --chat main")
    nb.cell("%ws_shell --run other echo x > /scratch/mark.txt")
    assert nb.ns["other"].files("scratch") == ["scratch/mark.txt"]
    assert current_state(nb.shell).run.files("scratch") == []


def test_new_in_a_repository_without_origin_branches_from_the_current_branch(
        nb: Notebook, repo: Repo) -> None:
    repo.git("remote", "remove", "origin")
    repo.git("checkout", "-q", "-b", "trunk")
    repo.write("trunk.txt", "on trunk\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "trunk work")
    made = nb.cell("%worktree new from-trunk --no-setup")
    assert made.error is None, made.error
    assert (f"no origin/main in {repo.path}: branching from the current branch trunk\n"
            in made.stdout)
    assert made.stderr == ""
    assert (Path(made.value["cwd"]) / "trunk.txt").read_text() == "on trunk\n"
    # an explicit --base is used as given, with no note
    again = nb.cell("%worktree new from-main --no-setup --base main")
    assert again.error is None and "no origin/main" not in again.stdout
    assert not (Path(again.value["cwd"]) / "trunk.txt").exists()


def test_new_takes_the_command_lines_flags(nb: Notebook, repo: Repo, tmp_path: Path) -> None:
    made = nb.cell(f"%worktree new flags --no-setup --dir {tmp_path / 'elsewhere'} "
                   """--write-file '{"path": "notes.txt", "content": "hi\\n"}'""")
    assert made.error is None, made.stdout
    assert made.value.data == {"cwd": str(tmp_path / "elsewhere"), "branch": "wt/flags"}
    assert (tmp_path / "elsewhere" / "notes.txt").read_text() == "hi\n"
    bad = nb.cell("%worktree new bad --write-file '{nope'")
    assert bad.stdout == "usage: --write-file value is not valid JSON: {nope\n"
    by_slug = nb.cell(f"%worktree services --worktree flags --repo {repo.path}").value
    assert [(s["name"], s["status"]) for s in by_slug["services"]] == [("web", "exited")]


def _tool_calls(run: object) -> list[tuple[str, str, str | None]]:
    raw = [json.loads(line) for line in
           (run.dir / "events.jsonl").read_text().splitlines()]  # type: ignore[attr-defined]
    return [(e["type"], e["payload"]["toolId"], e["payload"].get("errorCode")) for e in raw
            if e["type"] in ("tool_call_completed", "tool_call_failed")]


def test_with_a_current_run_offering_the_tools_the_commands_are_its_calls(
        nb: Notebook, repo: Repo, tmp_path: Path) -> None:
    nb.cell("from tavernlab.host import DEFAULT_TOOLS, Lab, worktree_tools\n"
            "from tavernlab.notebook import current_state\n"
            f"lab = Lab({str(tmp_path / 'tool-lab')!r}, tools=[*DEFAULT_TOOLS, worktree_tools])\n"
            "current_state(get_ipython()).use_lab(lab)")
    assert not current_state(nb.shell).has_run
    outside = nb.cell("%worktree new before-run --no-setup")
    assert outside.error is None
    assert not current_state(nb.shell).has_run  # %worktree never starts a run
    run = nb.cell("%tavern run new --chat wt").value
    made = nb.cell("%worktree new in-run --no-setup")
    assert made.error is None, made.stdout
    assert made.value.data == {"cwd": str(repo.path.parent / "_worktrees" / "in-run"),
                               "branch": "wt/in-run"}
    assert nb.cell("%worktree gate true").value["passed"] is True
    assert nb.cell("%worktree rm in-run").value.data == {"removed": True}
    assert nb.cell("%worktree ls").value.data[1]["branch"] == "wt/before-run"  # not a tool
    assert _tool_calls(run) == [
        ("tool_call_completed", "worktree.provision", None),
        ("tool_call_completed", "worktree.run-gate", None),
        ("tool_call_completed", "worktree.cleanup", None)]
    bad = nb.cell("%worktree gate --worktree nope true")  # named nothing: no call was made
    assert isinstance(bad.error, ToolError) and len(_tool_calls(run)) == 3
    nb.cell("current_state(get_ipython()).forget_lab(); lab.close()")


def test_without_the_tools_the_current_run_is_left_alone(nb: Notebook, repo: Repo) -> None:
    run = nb.cell("%tavern run new --chat plain").value
    made = nb.cell("%worktree new no-tools --no-setup")
    assert made.error is None, made.stdout
    assert nb.cell("%worktree gate true").value["passed"] is True
    assert _tool_calls(run) == []


def test_archive_salvages_removes_and_forgets_the_current_worktree(
        nb: Notebook, repo: Repo, tmp_path: Path) -> None:
    made = nb.cell("%worktree new boxed --no-setup").value
    Path(made["cwd"], "notes.txt").write_text("keep me")
    salvage = tmp_path / "salvage"
    archived = nb.cell(f"%worktree archive boxed --salvage-root {salvage}")
    assert archived.error is None, archived.stdout
    assert archived.value["manifest"]["untrackedFiles"] == ["notes.txt"]
    assert Path(archived.value["salvageDir"], "untracked", "notes.txt").read_text() == "keep me"
    assert not Path(made["cwd"]).exists() and repo.branches("wt/boxed") == ""
    assert current_state(nb.shell).worktree is None


def test_start_takes_the_command_lines_flags(nb: Notebook, repo: Repo) -> None:
    nb.cell("%worktree new served")
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    served = nb.cell(f"%worktree start web --proxy-port {port} --seconds 0.1")
    assert served.error is None, served.stdout
    assert served.value["status"] == "running" and served.value["url"].endswith(f":{port}")
    assert current_state(nb.shell).proxy_port(start=False) == port
    listed = nb.cell(f"%worktree services --proxy-port {port}").value  # stopped after 0.1 s
    assert [(s["name"], s["status"]) for s in listed["services"]] == [("web", "exited")]
