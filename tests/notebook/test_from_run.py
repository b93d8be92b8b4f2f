"""``tavernlab notebook from-run`` for real: the notebook written from a recorded run is executed
by nbclient in the tavernlab kernel, its magics play every action again, and its last cell
says the replay is identical (and says where it is not when the skill changed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from tavernlab.cli import main
from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.host import Lab
from tavernlab.replay import Replay
from tavernlab.replay._errors import ReplaySetupError

SKILL_MD = ("---\nname: greet\ndescription: Greets someone.\n---\n"
            "Run `js /skills/greet/scripts/hi.js NAME`.\n")
HI = "console.log(JSON.stringify({hello: process.argv[2] ?? 'world', r: Math.random()}));\n"


def _skill(folder: Path, script: str) -> Path:
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL_MD)
    (folder / "scripts" / "hi.js").write_text(script)
    return folder


def _record(tmp_path: Path) -> Path:
    lab = Lab(tmp_path / "recorded", clock=FixedClock(), ids=SequentialIds("from-run"))
    with lab:
        lab.skills.install(_skill(tmp_path / "greet", HI))
        run = lab.start_run(chat_id="alice", skills=["greet"])
        run.call_tool("workspace.write_file", {"path": "output/a.md", "content": "one\n"})
        run.shell("echo $RANDOM > /scratch/r.txt; date; cat /output/a.md")
        run.js(["/skills/greet/scripts/hi.js", "Mika"])
        run.js(["-e", "\nconsole.log(new Date().toISOString())\n"], eval_name="<cell 5>")
        run.js(["-e", "\nconsole.log(Math.random())\n"], eval_name="<cell 9>")
        run.shell("ls /output\n")
        run.next_round()
        run.call_tool("workspace.read_file", {"path": "scratch/r.txt"})
        run.call_tool("workspace.finish", {"result": "done"})
        return run.export(tmp_path / "bundles" / "greet.tavernrun")


def _execute(notebook_path: Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(str(notebook_path), as_version=4)
    NotebookClient(notebook, timeout=180, allow_errors=False, record_timing=False,
                   resources={"metadata": {"path": str(notebook_path.parent)}}).execute()
    nbformat.validate(notebook)
    return notebook


def test_the_notebook_of_a_run_replays_it_identically_in_the_kernel(jupyter_path: Path,
                                                                    tmp_path: Path) -> None:
    bundle = _record(tmp_path)
    target = tmp_path / "notebooks" / "greet.ipynb"
    assert main(["notebook", "from-run", str(bundle), "-o", str(target)]) == 0
    notebook = _execute(target)
    verdict = notebook.cells[-1].outputs[-1]
    assert verdict.output_type == "execute_result"
    assert verdict.data["text/plain"].startswith("identical: ")
    assert "<table" in verdict.data["text/html"] or "<div" in verdict.data["text/html"]
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code[2].source.startswith("%%ws_shell --workdir /\necho $RANDOM")
    assert "one\n" in "".join(o.get("text", "") for o in code[2].outputs)
    assert code[4].source == "%%js\nconsole.log(new Date().toISOString())"
    assert code[5].source.startswith("run.js(") and "eval_name='<cell 9>'" in code[5].source
    assert code[6].source.startswith("run.call_tool('workspace.shell'")


def test_the_notebook_shows_where_a_changed_skill_diverges(jupyter_path: Path,
                                                           tmp_path: Path) -> None:
    bundle = _record(tmp_path)
    target = tmp_path / "notebooks" / "greet.ipynb"
    assert main(["notebook", "from-run", str(bundle), "-o", str(target)]) == 0
    notebook = nbformat.read(str(target), as_version=4)
    changed = _skill(tmp_path / "greet-2", HI.replace("hello", "hi"))
    setup = notebook.cells[1]
    setup.source = setup.source.replace(
        "Replay.prepare('../bundles/greet.tavernrun')",
        f"Replay.prepare('../bundles/greet.tavernrun', "
        f"skills={{'greet': {str(changed)!r}}})")
    nbformat.write(notebook, str(target))
    verdict = _execute(target).cells[-1].outputs[-1]
    assert verdict.data["text/plain"].startswith("diverged: ")


def test_from_run_refuses_to_overwrite_without_force(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    bundle = _record(tmp_path)
    target = tmp_path / "mine.ipynb"
    target.write_text("my own notebook\n")
    assert main(["notebook", "from-run", str(bundle), "-o", str(target)]) == 1
    assert capsys.readouterr().err == (f"error: replay.output_exists: {target} exists; pass "
                                       "--force to replace it\n")
    assert target.read_text() == "my own notebook\n"
    assert main(["notebook", "from-run", str(bundle), "-o", str(target), "--force"]) == 0
    assert nbformat.read(str(target), as_version=4).metadata["tavernlab"]["bundle"] == \
        "bundles/greet.tavernrun"


def test_the_verify_cell_runs_again_after_the_replay_closed(tmp_path: Path) -> None:
    bundle = _record(tmp_path)
    target = tmp_path / "notebooks" / "greet.ipynb"
    assert main(["notebook", "from-run", str(bundle), "-o", str(target)]) == 0
    verify_cell = nbformat.read(str(target), as_version=4).cells[-1].source
    assert verify_cell == "report = replay.verify()\nreplay.close()\nreport"
    replay = Replay.prepare(bundle)
    replay.play()
    namespace: dict[str, Any] = {"replay": replay}
    exec(verify_cell.rsplit("\n", 1)[0], namespace)
    first = namespace["report"]
    assert first.identical
    exec(verify_cell.rsplit("\n", 1)[0], namespace)  # the cell run a second time
    assert namespace["report"] is first
    closed = Replay.prepare(bundle)
    closed.close()
    with pytest.raises(ReplaySetupError, match="closed before it was verified"):
        closed.verify()
