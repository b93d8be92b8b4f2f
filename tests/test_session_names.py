""""Session" names one kind of thing per family: a Session target's session (the host's
``Session`` and its files), an agentproto coding-agent session (``worktree/_sessions.py``), a
model session (``close_session("<runId>:<invocationId>")``), MCP's ``ClientSession``. The
notebook's current lab/run/worktree is a ``NotebookState`` and a replay in progress a
``Replay``."""

from __future__ import annotations

import ast
from pathlib import Path

import tavernlab.notebook as notebook
import tavernlab.replay as replay

SRC = Path(__file__).resolve().parents[1] / "src" / "tavernlab"


def test_only_session_targets_have_session_classes() -> None:
    classes = {(path.relative_to(SRC).as_posix(), node.name)
               for path in SRC.rglob("*.py")
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.ClassDef) and "session" in node.name.lower()}
    assert sorted(classes) == [("host/_sessions.py", "Session"),
                               ("host/_sessions.py", "SessionRecord"),
                               ("host/_sessions.py", "SessionStore"),
                               ("workspace/records/_records.py", "SessionTarget")]


def test_only_the_two_upstream_session_registries_are_session_modules() -> None:
    modules = sorted(path.relative_to(SRC).as_posix() for path in SRC.rglob("*.py")
                     if "session" in path.name)
    assert modules == ["host/_sessions.py", "worktree/_sessions.py"]


def test_the_notebook_state_and_the_replay_say_what_they_are() -> None:
    assert {"NotebookState", "current_state"} <= set(notebook.__all__)
    assert not {"NotebookSession", "current_session"} & set(dir(notebook))
    assert "Replay" in replay.__all__ and not hasattr(replay, "ReplaySession")
    assert replay.Replay.prepare.__qualname__ == "Replay.prepare"
