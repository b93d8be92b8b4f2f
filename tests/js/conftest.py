"""Fixtures for the JavaScript sandbox: a real workspace, its scoped view and a runner.

Every test uses real storage under ``tmp_path`` and real worker processes (the kernel-wide
pool of the pytest process); nothing is mocked.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tavernlab.cancel import CancelToken
from tavernlab.js import CommandResult, run_js_command
from tavernlab.workspace.macros import FrozenContext, FrozenMacros
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.scope._scope import Policy
from tavernlab.workspace.storage import WorkspaceFs

#: A frozen prompt snapshot with world info, variables of every JSON type and macros.
SNAPSHOT: dict[str, Any] = {
    "worldInfoActivation": {"entries": [
        {"uid": "1", "ref": "worldinfo:lore#1", "content": "The tower is old.",
         "constant": True, "position": "before", "displayName": "Tower", "world": "lore"},
        {"uid": "2", "ref": "worldinfo:lore#2", "content": "Rain.", "constant": False,
         "world": "lore"},
    ]},
    "variables": {"local": {"score": 3, "ratio": 1.5, "name": "Ann", "flags": [True, None],
                            "nested": {"k": "v"}},
                  "global": {"theme": "dark"}},
    "macroContext": {"names": {"char": "Frozen Alice", "user": "Bob"},
                     "chat": {"lastMessageId": 7}},
}


def frozen(snapshot: dict[str, Any] | None = SNAPSHOT) -> FrozenContext:
    """A FrozenContext over ``snapshot`` (``None``: a run without host context)."""
    return FrozenContext(snapshot, FrozenMacros.from_snapshot(snapshot))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The run directory with the hidden input file and a few scratch files."""
    root = tmp_path / "run"
    (root / "input").mkdir(parents=True)
    (root / "input" / "prompt_snapshot.json").write_text("{}")
    (root / "input" / "hidden.js").write_text("console.log('hidden')\n")
    for name in ("output", "scratch", "plan", "summaries", "persist"):
        (root / name).mkdir()
    return root


@pytest.fixture
def scope(workspace: Path) -> ScopedWorkspaceFs:
    """The default Profile's view of ``workspace``."""
    return ScopedWorkspaceFs(WorkspaceFs(workspace), Policy.from_profile())


JsRunner = Callable[..., CommandResult]


@pytest.fixture
def js(scope: ScopedWorkspaceFs) -> JsRunner:
    """``js(*argv, cwd=..., stdin=..., command=..., timeout=..., context=...)`` runs the
    command over ``scope`` with a 20 s deadline unless ``timeout`` says otherwise."""

    def run(*argv: str, cwd: str = "/", stdin: bytes | None = None, command: str = "js",
            timeout: float = 20.0, context: FrozenContext | None = None,
            token: CancelToken | None = None, **kwargs: Any) -> CommandResult:
        return run_js_command(list(argv), scope=scope, context=context or frozen(), cwd=cwd,
                              stdin=stdin, command=command, token=token,
                              deadline=time.monotonic() + timeout, **kwargs)

    return run


def write(root: Path, path: str, text: str | bytes) -> Path:
    """Create ``root/path`` with ``text`` (parents included)."""
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        target.write_bytes(text)
    else:
        target.write_text(text)
    return target


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The largest number of ``(start, end)`` intervals that run at the same instant."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals],
                    key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def wait_for(path: Path, timeout: float = 20.0) -> None:
    """Block until ``path`` exists (a marker a running script wrote)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.01)
