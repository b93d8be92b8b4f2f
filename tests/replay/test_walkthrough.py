"""``tavernlab notebook from-run``: a notebook whose cells replay the run with the magics.

These tests pin what is generated: the cells, their deterministic ids, the kernel and the
validity of the notebook; tests/notebook/test_from_run.py executes one in the real kernel.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from tavernlab.cli import main
from tavernlab.replay import read_bundle
from tavernlab.replay._walkthrough import notebook_from_bundle

from .conftest import Recorded

EXPECTED = [
    ("markdown", "## Round 1"),
    ("code", "run.call_tool('workspace.write_file', {'path': 'output/main.md', "
             "'content': 'Hello {{char}}'})"),
    ("code", "run.call_tool('workspace.read_file', {'path': 'output/main.md'})"),
    ("code", "run.call_tool('workspace.apply_patch', {'path': 'output/main.md', "
             "'old_string': 'Hello', 'new_string': 'Hi'})"),
    ("code", "run.call_tool('workspace.list_files', {'depth': 2})"),
    ("code", "run.call_tool('workspace.search_files', {'query': 'Hi'})"),
    ("code", "run.call_tool('workspace.write_file', {'path': 'persist/notes.md', "
             "'content': 'kept\\n'})"),
    ("code", "run.call_tool('workspace.read_file', {'path': 'missing.md'})"),
    ("code", "%%ws_shell --workdir /\necho $RANDOM; date; mkdir -p /scratch/d && "
             "echo x > /scratch/d/f.md; js /skills/dice/scripts/roll.js 3"),
    ("code", "%js -- -e 'console.log(new Date().toISOString(), Math.random())'"),
    ("code", "import base64\nstdin_9 = base64.b64decode('cGlwZWQgdGV4dAo=')"),
    ("code", "%js --stdin stdin_9 /skills/dice/scripts/roll.js 2"),
    ("code", "%js /skills/dice/scripts/kit.js 'Replay Me'"),
    ("code", "run.call_tool('skill.run_script', {'skill': 'dice', 'script': 'legacy', "
             "'args': {'x': 1}})"),
    ("code", "run.call_tool('skill.list', {})"),
    ("code", "run.call_tool('skill.read', {'name': 'dice'})"),
    ("code", "agent_critic_1 = run.start_subagent('critic')"),
    ("code", "run.call_tool('task.return', {'result': 'looks fine'}, "
             "invocation=agent_critic_1)"),
    ("code", "replay.play_action(16)  # cancelled in the recording"),
    ("code", "run.js(['-e', \"console.log('cell', 4)\"], '/', stdin=None, command='js', "
             "eval_name='<cell 4>')"),
    ("code", "run.js(['-e', 'console.log(1)\\nconsole.log(2)'], '/scratch', stdin=None, "
             "command='node')"),
    ("code", "run.next_round()"),
    ("markdown", "## Round 2"),
    ("code", "%%ws_shell --workdir / --no-raise\ncat /output/main.md; false"),
    ("code", "run.call_tool('workspace.commit', {'reason': 'done'})"),
    ("code", "run.finish('scene written')"),
    ("markdown", "## Verify\n\nEvery outcome compared with the recording."),
    ("code", "report = replay.verify()\nreplay.close()\nreport"),
]


def test_the_notebook_replays_each_action_with_a_magic(recorded: Recorded,
                                                       tmp_path: Path) -> None:
    bundle = read_bundle(recorded.bundle)
    notebook = notebook_from_bundle(bundle, "everything.tavernrun")
    nbformat.validate(notebook)
    cells = notebook.cells
    assert [c.id for c in cells] == [f"tavern-{n:04d}" for n in range(1, len(cells) + 1)]
    assert cells[0].source.startswith(f"# Replay of run `{recorded.run.id}`\n\n23 recorded "
                                      "actions; skills: `dice` (")
    assert cells[1].source == (
        "import tavernlab.notebook\nfrom tavernlab.replay import Replay\n\n"
        "replay = Replay.prepare('everything.tavernrun')\nrun = replay.run\n"
        "tavernlab.notebook.current_state().use_run(run)\n"
        "%config TavernMagics.round_per_cell = False")
    assert [(c.cell_type, c.source) for c in cells[2:]] == EXPECTED
    assert notebook.metadata["kernelspec"] == {"name": "tavernlab", "display_name": "tavernlab",
                                               "language": "python"}
    assert notebook.metadata["tavernlab"] == {"bundle": "everything.tavernrun",
                                              "runId": recorded.run.id}
    again = notebook_from_bundle(read_bundle(recorded.bundle), "everything.tavernrun")
    assert nbformat.writes(again) == nbformat.writes(notebook)


def test_the_cli_writes_the_notebook_beside_a_relative_bundle_path(recorded: Recorded,
                                                                   tmp_path: Path) -> None:
    target = tmp_path / "notebooks" / "demo.ipynb"
    assert main(["notebook", "from-run", str(recorded.bundle), "-o", str(target)]) == 0
    notebook = nbformat.read(str(target), as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata["tavernlab"]["bundle"] == "../bundles/everything.tavernrun"
    assert "Replay.prepare('../bundles/everything.tavernrun')" in notebook.cells[1].source
