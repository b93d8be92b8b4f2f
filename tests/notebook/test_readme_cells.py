"""The README's first hour in a notebook: its cells run, in order, as written."""

from __future__ import annotations

import re

from notebook_support import REPO, Notebook


def readme_cells() -> list[str]:
    """The ```` ```ipython ```` blocks of the README's notebook section, in order."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## In a notebook", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```ipython\n(.*?)```", section, flags=re.DOTALL)


def test_the_readme_cells_run_as_written(nb: Notebook) -> None:
    cells = readme_cells()
    assert len(cells) == 8
    ran = [nb.cell(cell) for cell in cells]
    assert [r.error for r in ran] == [None] * len(cells)
    first, shell, tree, events, commit, finish, _answers, agent = ran
    assert commit.value.content.startswith(
        "Committed output/main.md to the current chat message with mode Replace.")
    assert first.stdout == "main.md\n"
    assert shell.stdout.startswith("Hello, Mika!\n-rw-r--r--")
    text, _html = tree.value.snapshot()  # %tavern tree is the live FileTree
    assert "main.md" in text and f"{len('Hello, Mika!' + chr(10))} B" in text
    assert len(events.value) == 5
    assert finish.value.content == "Finished the Agent run."
    assert agent.stdout == "Writing the greeting.\n"
    outcome = nb.ns["_agent_outcome"]
    assert (outcome.status, outcome.rounds) == ("completed", 2)
    assert nb.ns["_agent"].read("output/main.md") == "Hello from the model!\n"
    assert outcome.commits[0]["path"] == "output/main.md"
