"""What the first tool call of a fresh process loads: ``from tavernlab import Lab``, a run
started and one ``workspace.write_file`` import only the workspace, the host and the event
models they use (not the agent loop's or the commits' event families), never the notebook,
the JavaScript sandbox, the shell (not even its tool's declaration: the registry asks that
provider on first use), the legacy skill tools, the reading tools' handlers (imported on their
first call), the providers or the agent loop (read from ``sys.modules`` of a fresh process; no
timing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: Third-party packages the first call never imports.
HEAVY = ("IPython", "ipykernel", "ipywidgets", "anywidget", "nbformat", "nbclient",
         "jupyter_client", "jsbox", "bashkit", "tree_sitter", "tree_sitter_javascript", "yaml",
         "mcp", "openai", "anthropic", "httpx", "h11", "git")
#: tavernlab packages the first call never imports.
UNUSED = ("tavernlab.agent", "tavernlab.models", "tavernlab.notebook", "tavernlab.view",
          "tavernlab.views", "tavernlab.replay", "tavernlab.worktree", "tavernlab.mcp_server",
          "tavernlab.mcp_client", "tavernlab.cli", "tavernlab.demo", "tavernlab.js._pool",
          "tavernlab.js._command", "tavernlab.js.kit", "tavernlab.shell.session",
          "tavernlab.skills._package", "tavernlab.events._agent", "tavernlab.events._commits",
          "tavernlab.events._unions", "tavernlab.events._ending",
          "tavernlab.events._steps", "tavernlab.host._sessions", "tavernlab.shell._tool",
          "tavernlab.shell._resources", "tavernlab.shell._result", "tavernlab.skills._run_script",
          "tavernlab.skills._compat_tools", "tavernlab.host._agent_tools", "tavernlab.js._errors",
          "tavernlab.workspace.tools._reading", "tavernlab.workspace.tools._search",
          "tavernlab.workspace.tools._listing", "tavernlab.workspace.text._selection",
          "tavernlab.workspace.scope._tree")

FIRST_CALL = (
    "import sys, tempfile\n"
    "from tavernlab import Lab\n"
    "lab = Lab(sys.argv[1])\n"
    "run = lab.start_run(chat_id='c')\n"
    "result = run.call_tool('workspace.write_file', {'path': 'output/a.md', 'content': 'x'})\n"
    "assert not result.is_error, result\n"
    "lab.close()\n"
    "import json; print(json.dumps(sorted(sys.modules)))\n"
)


def first_call_modules(where: Path) -> list[str]:
    """The ``sys.modules`` keys after a fresh process's first call, in a lab at ``where``."""
    done = subprocess.run([sys.executable, "-c", FIRST_CALL, str(where)], capture_output=True,
                          text=True, check=True, timeout=120)
    modules: list[str] = json.loads(done.stdout.splitlines()[-1])
    return modules


def test_the_first_call_loads_no_heavy_package(tmp_path: Path) -> None:
    modules = first_call_modules(tmp_path / "lab")
    assert "tavernlab.workspace.tools._writing" in modules
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []
    assert sorted(m for m in modules
                  if any(m == u or m.startswith(u + ".") for u in UNUSED)) == []
    assert (tmp_path / "lab").is_dir()


def test_a_reading_tool_loads_its_handler_on_its_first_call(tmp_path: Path) -> None:
    code = ("import sys\n"
            "from tavernlab import Lab\n"
            "run = Lab(sys.argv[1]).start_run(chat_id='c')\n"
            "run.call_tool('workspace.write_file', {'path': 'output/a.md', 'content': 'x'})\n"
            "assert 'tavernlab.workspace.tools._reading' not in sys.modules\n"
            "print(run.call_tool('workspace.read_file', {'path': 'output/a.md'}).content)\n"
            "import tavernlab.workspace.tools as face, tavernlab.workspace.tools._reading as r\n"
            "assert face.read_file is r.read_file\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "lab")],
                          capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.endswith("\n1 | x\n"), done.stdout
