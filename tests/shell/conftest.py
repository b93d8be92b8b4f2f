"""Fixtures for the workspace shell: a real run-like workspace on disk and its scoped view."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

import tavernlab.shell  # noqa: F401  (registers workspace.shell)
from tavernlab.cancel import CancelToken
from tavernlab.paths import WorkspacePath
from tavernlab.shell import ShellResult, execute_shell
from tavernlab.workspace.scope import ScopedWorkspaceFs
from tavernlab.workspace.scope._scope import DEFAULT_ROOTS, Policy
from tavernlab.workspace.storage import WorkspaceFs

ShellRunner = Callable[..., ShellResult]


class Workspace:
    """A run directory with the default roots, a hidden ``input/`` and the main view."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        for root in (*DEFAULT_ROOTS, "tool-results", "input"):
            (directory / root).mkdir(parents=True)
        (directory / "input" / "prompt_snapshot.json").write_text('{"secret": true}\n')
        (directory / "output" / "main.md").write_text("draft\n")
        self.fs = WorkspaceFs(directory)
        self.scope = ScopedWorkspaceFs(self.fs, Policy.from_profile())

    def read(self, path: str) -> str:
        """A file's text straight from disk."""
        return (self.dir / path).read_text()

    def exists(self, path: str) -> bool:
        """Whether the path exists on disk."""
        return (self.dir / path).exists()

    def tree(self, root: str) -> list[str]:
        """Every file and directory below ``root`` (relative, sorted)."""
        base = self.dir / root
        return sorted(str(p.relative_to(self.dir)) for p in base.rglob("*"))

    def shell(self, command: str, workdir: str = "/", *, deadline_s: float = 30.0,
              token: CancelToken | None = None,
              scope: ScopedWorkspaceFs | None = None) -> ShellResult:
        """Run one shell call over the main view (or ``scope``)."""
        return execute_shell(scope or self.scope, None, command, workdir,
                             deadline_s=deadline_s, token=token)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A fresh workspace."""
    return Workspace(tmp_path / "run")


def lock_waiter_blocked(fs: WorkspaceFs, mode: str = "WRITE") -> bool:
    """True when a thread of this process waits for ``fs``'s lock in ``mode`` (from
    ``/proc/locks``: a ``->`` line on the lock file's inode)."""
    fs.exists(WorkspacePath("output"))  # make sure the lock file exists
    inode = os.stat(fs.lock.path).st_ino
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if ("->" in fields and mode in fields and fields[-3].endswith(f":{inode}")
                and fields[fields.index(mode) + 1] == str(os.getpid())):
            return True
    return False
