"""Nothing changes silently: a lab is created only when asked, each notebook has its own chat,
a lab keeps itself out of git, an unknown event type is an error, and the command line finds
the notebook's lab."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from notebook_support import Notebook, start_kernel, stop_kernel

from tavernlab.cli import main
from tavernlab.events import EVENT_TYPES, JOURNAL_TYPES
from tavernlab.host import Lab
from tavernlab.host._lab import LAB_GITIGNORE
from tavernlab.notebook import current_state


def test_a_typo_creates_no_lab(nb: Notebook, tmp_path: Path) -> None:
    current = nb.cell("%tavern lab").value
    refused = nb.cell("%tavern lab .tavenrlab")
    assert isinstance(refused.error, UsageError)
    assert str(refused.error) == (f"%tavern lab: no lab at {tmp_path / '.tavenrlab'}: pass "
                                  "--create to create a new lab there")
    assert not (tmp_path / ".tavenrlab").exists()
    assert current_state(nb.shell).lab is current  # nothing switched either
    made = nb.cell("%tavern lab second --create").value
    assert made.root == tmp_path / "second"
    nb.cell("%tavern lab .tavernlab")  # an existing lab needs no --create
    assert current_state(nb.shell).lab.root == tmp_path / ".tavernlab"
    assert nb.cell("%tavern lab second --create").value.root == tmp_path / "second"


def test_each_notebook_gets_its_own_chat(nb: Notebook, tmp_path: Path) -> None:
    nb.ns["__session__"] = str(tmp_path / "analysis.ipynb")  # what ipykernel sets
    try:
        run = current_state(nb.shell).run
        assert run.record.target.stable_chat_id == "notebook:analysis.ipynb"
        status = nb.cell("%tavern status").value
        assert ("new runs start in the chat notebook:analysis.ipynb (this notebook's own)"
                in status.text)
        other = nb.cell("%tavern run new").value
        assert other.record.target.stable_chat_id == "notebook:analysis.ipynb"
        nb.ns["__session__"] = str(tmp_path / "sub" / "report.ipynb")
        third = nb.cell("%tavern run new").value
        assert third.record.target.stable_chat_id == "notebook:sub/report.ipynb"
        shared = nb.cell("%tavern run new --shared-chat").value
        assert shared.record.target.stable_chat_id == "notebook"
        named = nb.cell("%tavern run new --chat alice").value
        assert named.record.target.stable_chat_id == "alice"
        both = nb.cell("%tavern run new --chat alice --shared-chat")
        assert str(both.error) == ("%tavern run new: give --chat ID or --shared-chat, "
                                   "not both")
        nb.cell("%config TavernMagics.chat_per_notebook = False")
        off = nb.cell("%tavern run new").value
        assert off.record.target.stable_chat_id == "notebook"
        assert ("new runs start in the chat notebook (shared (chat_per_notebook is off))"
                in nb.cell("%tavern status").value.text)
    finally:
        nb.ns.pop("__session__", None)


def test_an_unknown_notebook_uses_the_shared_chat_and_says_so(
        nb: Notebook, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert current_state(nb.shell).run.record.target.stable_chat_id == "notebook"
    assert ("new runs start in the chat notebook (shared: the kernel does not know this "
            "notebook's path (no __session__ or JPY_SESSION_NAME))"
            in nb.cell("%tavern status").value.text)
    monkeypatch.setenv("JPY_SESSION_NAME", "/elsewhere/other.ipynb")
    run = nb.cell("%tavern run new").value
    assert run.record.target.stable_chat_id == "notebook:/elsewhere/other.ipynb"


def test_a_kernel_started_by_jupyter_names_its_chat_after_the_notebook(
        jupyter_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "kernel" / "story.ipynb"))
    (tmp_path / "kernel").mkdir()
    kernel = start_kernel(tmp_path / "kernel", home=tmp_path / "home")
    try:
        reply, messages = kernel.execute(
            "from tavernlab.notebook import current_state\n"
            "print(current_state().run.record.target.stable_chat_id)")
        assert reply["content"]["status"] == "ok"
        out = "".join(m["content"].get("text", "") for _, m in messages
                      if m["msg_type"] == "stream")
        assert out == "notebook:story.ipynb\n"
    finally:
        stop_kernel(kernel)


def test_a_new_lab_keeps_itself_out_of_git(nb: Notebook, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    nb.cell("%tavern run new")
    assert (tmp_path / ".tavernlab" / ".gitignore").read_text() == LAB_GITIGNORE
    status = subprocess.run(["git", "-C", str(tmp_path), "status", "--porcelain",
                             "--untracked-files=all"], check=True, capture_output=True,
                            text=True).stdout
    assert status == ""
    # a lab opened in a folder that exists already leaves that folder as it is
    (tmp_path / "mine").mkdir()
    Lab(tmp_path / "mine").close()
    assert not (tmp_path / "mine" / ".gitignore").exists()


def test_an_unknown_event_type_is_an_error_listing_the_known_ones(nb: Notebook) -> None:
    refused = nb.cell("%tavern events --type tool_call_complete")
    assert isinstance(refused.error, UsageError)
    known = sorted(EVENT_TYPES | JOURNAL_TYPES)
    assert str(refused.error) == ("%tavern events: unknown event type 'tool_call_complete'; "
                                  f"the types are: {', '.join(known)}")
    assert nb.cell("%tavern events --type round_ended --type run_created").error is None


def test_the_command_line_finds_the_notebook_s_lab(nb: Notebook, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("TAVERNLAB_LAB", raising=False)
    run = nb.cell("%tavern run new").value
    capsys.readouterr()
    assert main(["runs"]) == 0
    assert run.id in capsys.readouterr().out
    assert main(["runs", "--demo"]) == 1
    assert capsys.readouterr().err == ("error: workspace.invalid_data: no lab at "
                                       "tavernlab-demo/lab (run `tavernlab demo` first)\n")
    assert main(["runs", "--demo", "--lab", "x"]) == 2
    assert "give --lab DIR or --demo, not both" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    assert main(["runs"]) == 1
    assert capsys.readouterr().err == (
        "error: workspace.invalid_data: no lab at .tavernlab (pass --lab DIR, or --demo for "
        "the lab `tavernlab demo` made)\n")
