"""Tab completion of ``%tavern``, ``%worktree``, ``%%js`` and ``%ws_shell`` lines, asked of
IPython's own completer (and once of a real kernel): subcommands, options and their values."""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest
from IPython.core import magic_arguments
from IPython.core.completer import provisionalcompleter
from IPython.core.magic import Magics, line_magic, magics_class
from notebook_support import Kernel, Notebook

from tavernlab.notebook import current_state
from tavernlab.notebook._completion import MAGIC_COMPLETERS, parser_completer

SKILL = "---\nname: {name}\ndescription: Says hello.\n---\nHello.\n"


def complete(nb: Notebook, line: str) -> list[str]:
    """What IPython offers with the cursor at the end of ``line``."""
    with provisionalcompleter():
        return [c.text for c in nb.shell.Completer.completions(line, len(line))]


def test_subcommands_complete_word_by_word(nb: Notebook) -> None:
    assert {"events", "lab", "run", "skill", "status", "tree"} <= set(complete(nb, "%tavern "))
    assert complete(nb, "%tavern r") == ["run"]
    assert complete(nb, "%tavern run ") == ["cancel", "finish", "new", "open"]
    assert complete(nb, "%tavern skill i") == ["install"]
    assert complete(nb, "%worktree g") == ["gate", "gc"]


def test_options_not_python_builtins(nb: Notebook) -> None:
    offered = complete(nb, "%tavern tree --")
    assert {"--depth", "--hidden", "--help"} <= set(offered)
    assert all(o.startswith("--") for o in offered)
    assert complete(nb, "%tavern tree --d") == ["--depth"]
    assert "--hidden" not in complete(nb, "%tavern tree --hidden --")  # given already
    assert complete(nb, "%%js --c") == ["--command", "--cwd"]
    assert complete(nb, "%js --c") == ["--command", "--cwd"]
    assert complete(nb, "%ws_shell --w") == ["--workdir"]
    assert complete(nb, "%worktree new --de") == ["--deps-cmd"]
    assert complete(nb, "%%js --command ") == ["js", "node", "deno"]  # choices in order
    # the older entry point sees the same
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        legacy = nb.shell.complete("", "%tavern tree --", 15)
    assert legacy == ("--", ["--depth", "--help",
                                                                  "--hidden", *[
        o for o in offered if o not in ("--depth", "--help", "--hidden")]])


def test_worktree_agent_flags_complete(nb: Notebook, tmp_path: Path) -> None:
    assert complete(nb, "%worktree ag") == ["agent"]
    assert complete(nb, "%worktree a") == ["agent", "archive"]
    assert complete(nb, "%worktree agent --co") == ["--copy-glob"]
    assert complete(nb, "%worktree agent --n") == ["--no-cleanup"]
    assert "--slug" not in complete(nb, "%worktree agent --slug x --")  # given already
    assert "--link" in complete(nb, "%worktree agent --link a --")  # repeatable
    assert complete(nb, "%worktree agent --slug fi") == ["fi"]  # the new slug is the user's
    (tmp_path / "apps").mkdir()
    assert complete(nb, f"%worktree agent --repo {tmp_path}/ap") == [f"{tmp_path}/apps/"]


def test_values_event_types_scopes_and_variables(nb: Notebook) -> None:
    assert complete(nb, "%tavern events --type tool_call_") == [
        "tool_call_completed", "tool_call_failed", "tool_call_requested", "tool_call_started"]
    assert complete(nb, "%tavern events --type round_") == ["round_ended"]
    assert complete(nb, "%tavern skill install x --scope ") == [
        "global", "preset:", "profile:", "character:"]
    nb.cell("my_input = 'hello'\nmy_other = 2")
    assert complete(nb, "%%js --stdin my_") == ["my_input", "my_other"]


def test_run_ids_skill_names_and_workspace_paths(nb: Notebook, tmp_path: Path) -> None:
    for name in ("hello", "helper"):
        folder = tmp_path / "src-skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(SKILL.format(name=name))
    nb.cell("%tavern skill install src-skills")
    assert complete(nb, "%tavern run new --skills he") == ["hello", "helper"]
    assert complete(nb, "%tavern run new --skills hello,") == ["hello,helper"]
    run = nb.cell("%tavern run new").value
    assert complete(nb, "%tavern run open run_") == [
        r.id for r in current_state(nb.shell).lab.runs()]
    assert run.id in complete(nb, "%tavern run open ")
    nb.cell("%ws_shell mkdir -p output/notes && echo hi > output/a.md")
    assert complete(nb, "%tavern tree out") == ["output/"]
    assert complete(nb, "%tavern tree output/") == ["output/a.md", "output/notes/"]
    assert complete(nb, "%ws_shell cat /output/a") == ["/output/a.md"]
    assert complete(nb, "%js /output/") == ["/output/a.md", "/output/notes/"]
    assert complete(nb, "%%js --save output/n") == ["output/notes/"]
    assert complete(nb, "%tavern lab src-") == ["src-skills/"]  # a lab is a folder on disk
    assert complete(nb, "%tavern skill install sr") == ["src-skills/"]
    assert complete(nb, "%tavern skill dev src-skills/h") == ["src-skills/hello/",
                                                             "src-skills/helper/"]
    assert complete(nb, "%%ws_shell --workdir /output/") == ["/output/notes/"]
    assert complete(nb, "%%js --cwd /o") == ["/output/"]


def test_completing_creates_no_lab_and_starts_no_run(nb: Notebook, tmp_path: Path) -> None:
    assert "--help" in complete(nb, "%tavern run open ")
    # nothing to offer: the word stands alone (no Python names on a magic's line)
    assert complete(nb, "%tavern tree output/") == ["output/"]
    assert complete(nb, "%tavern run new --skills h") == ["h"]
    assert complete(nb, "%tavern tree --depth ") == [""]
    assert not (tmp_path / ".tavernlab").exists()
    assert not current_state(nb.shell).has_run


def test_worktree_slugs(nb: Notebook, tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)
    git("init", "-q", "-b", "main")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "i")
    git("worktree", "add", "-q", "-b", "wt/fix-login", str(tmp_path / "wts" / "fix-login"))
    assert complete(nb, "%worktree rm f") == ["fix-login"]
    assert complete(nb, "%worktree gate --worktree ") == ["fix-login"]
    assert complete(nb, "%worktree new f") == ["f"]  # a new slug is the user's to choose


def test_other_lines_complete_as_python(nb: Notebook) -> None:
    assert "print" in complete(nb, "pri")
    assert "%%js" in complete(nb, "%%j")  # the magic's name itself: IPython's matcher
    # inside a %%js cell body only the first line is the magic's
    text = "%%js --cwd /\npri"
    with provisionalcompleter():
        body = [c.text for c in nb.shell.Completer.completions(text, len(text))]
    assert "print" in body
    text = "%%js\n%tavern ru"  # a cell body is JavaScript, even where it looks like a magic
    with provisionalcompleter():
        body = [c.text for c in nb.shell.Completer.completions(text, len(text))]
    assert "run" not in body


def test_unloading_removes_the_matcher(nb: Notebook) -> None:
    import tavernlab

    count = len(nb.shell.Completer.custom_matchers)
    tavernlab.unload_ipython_extension(nb.shell)
    assert len(nb.shell.Completer.custom_matchers) == count - 1
    tavernlab.load_ipython_extension(nb.shell)
    assert complete(nb, "%tavern run ") == ["cancel", "finish", "new", "open"]


@magics_class
class _AgentMagics(Magics):
    @magic_arguments.magic_arguments()  # type: ignore[misc,no-untyped-call]
    @magic_arguments.argument("--model", choices=("scripted", "recorded"))  # type: ignore[misc,no-untyped-call]
    @magic_arguments.argument("--run", metavar="VAR")  # type: ignore[misc,no-untyped-call]
    @line_magic  # type: ignore[misc]
    def agent(self, line: str) -> None:
        """A stand-in magic with its own options."""


def test_a_new_magic_plugs_in_with_one_table_entry(nb: Notebook,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    nb.shell.register_magics(_AgentMagics)
    try:
        parser: Any = _AgentMagics.agent.parser
        monkeypatch.setitem(MAGIC_COMPLETERS, "agent", parser_completer(lambda m: parser))
        assert complete(nb, "%agent --") == ["--model", "--run"]
        assert complete(nb, "%agent --model s") == ["scripted"]
    finally:
        nb.shell.magics_manager.magics["line"].pop("agent", None)


def test_a_real_kernel_answers_complete_requests(kernel: Kernel) -> None:
    code = "%tavern tree --"
    msg_id = kernel.client.complete(code, len(code))
    while True:
        reply = kernel.client.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    content = reply["content"]
    assert content["status"] == "ok"
    assert {"--depth", "--hidden"} <= set(content["matches"])
    assert all(m.startswith("--") for m in content["matches"])
    assert (content["cursor_start"], content["cursor_end"]) == (len(code) - 2, len(code))
