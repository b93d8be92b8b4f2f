"""What a fresh process loads for its first tool call (the target: at most 2.5 times the same
files written in plain Python): the services are made on first use, the engines are imported
by the call that needs them, and the agent loop's event models by the first use of one. The
speed itself is measured by ``bench/imports.py``; these tests pin which modules load, and that
every engine still works when it is first used later."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tavernlab.host import LabServices
from tavernlab.js._errors import PoolClosedError

#: Modules the first ``workspace.write_file`` of a process must not load.
ENGINES = ("bashkit", "jsbox", "tavernlab.js._pool", "tavernlab.js._command",
           "tavernlab.js.kit", "tavernlab.shell._engine", "tavernlab.skills._binding",
           "tavernlab.skills._repository", "tavernlab.worktree", "tavernlab.host._retention")

SCRIPT = """\
import json, subprocess, sys
from tavernlab import Lab
ENGINES = {engines!r}

def loaded():
    return sorted(name for name in ENGINES if name in sys.modules)

lab = Lab({lab!r})
run = lab.start_run(chat_id="c")
wrote = run.call_tool("workspace.write_file", {{"path": "output/a.md", "content": "x"}})
before = loaded()
shell = run.shell("cat output/a.md; echo hi")
js = run.js(["-e", "console.log(6 * 7)"])
import tavernlab.worktree
repo = {repo!r}
for args in (["init", "-q", "-b", "main", repo], ["-C", repo, "commit", "-q", "--allow-empty",
             "-m", "base"]):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True)
services = tavernlab.worktree.call_tool("worktree.list-services", {{
    "repoRoot": repo, "worktreePath": repo, "branch": "main"}},
    runtime=lab.services.worktree)
print(json.dumps({{"wrote": wrote.is_error, "before": before, "shell": shell.stdout,
                  "js": js.stdout, "services": services, "after": loaded()}}))
lab.close()
"""


def test_the_first_write_loads_no_engine_and_each_engine_works_after(tmp_path: Path) -> None:
    code = SCRIPT.format(engines=ENGINES, lab=str(tmp_path / "lab"),
                         repo=str(tmp_path / "repo"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    report = json.loads(done.stdout)
    assert report["wrote"] is False
    assert report["before"] == []
    assert report["shell"] == "xhi\n"
    assert report["js"] == "42\n"
    assert report["services"] == {"services": []}
    # (jsbox runs in the worker processes, never in this one)
    assert {"tavernlab.js._pool", "tavernlab.shell._engine", "tavernlab.worktree",
            "bashkit"} <= set(report["after"])


def test_private_services_make_nothing_until_used_and_stay_closed() -> None:
    services = LabServices.private()
    services.close()  # nothing was made: nothing to stop
    pool = services.js_pool  # made after closing: handed out closed
    assert pool.closed
    with pytest.raises(PoolClosedError):
        pool.warm()
    assert services.js_pool is pool
