"""Fixtures for the worktree tests: isolated HOME and git identity, real repositories.

Every test gets its own ``HOME`` (so ``~/.agentproto`` and git's global config are private)
and a git identity through the environment, so a fresh machine without a global git config
works. ``repo`` is a real checkout with a bare ``origin`` so the default ``origin/main`` base
exists.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tavernlab.worktree._proxy_table import proxy_table
from tavernlab.worktree._scheduler import ProvisionScheduler, reset_provision_scheduler
from tavernlab.worktree._services import default_registry


def run_git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` and return stdout; fail the test on a non-zero exit."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


class Repo:
    """A real checkout at ``path`` with a bare ``origin`` next to it."""

    def __init__(self, path: Path, origin: Path) -> None:
        self.path = path
        self.origin = origin

    @property
    def root(self) -> str:
        return str(self.path)

    def git(self, *args: str) -> str:
        return run_git(self.path, *args)

    def write(self, rel: str, content: str) -> Path:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return target

    def commit(self, files: dict[str, str], message: str = "change", push: bool = True) -> str:
        for rel, content in files.items():
            self.write(rel, content)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        if push:
            self.git("push", "-q", "origin", "HEAD:main")
            self.git("fetch", "-q", "origin")
        return self.git("rev-parse", "HEAD").strip()

    def commit_config(self, config: dict[str, object], push: bool = True) -> str:
        return self.commit({"agentproto.json": json.dumps(config, indent=2)},
                           "agentproto.json", push=push)

    def write_local_config(self, config: dict[str, object]) -> None:
        self.write(".agentproto/worktree.json", json.dumps(config))

    def branches(self, pattern: str) -> str:
        return self.git("branch", "--list", pattern).strip()

    def worktree_list(self) -> str:
        return self.git("worktree", "list", "--porcelain")


def make_repo(base: Path, name: str = "app") -> Repo:
    """Create ``base/<name>`` with one commit pushed to a bare ``base/<name>-origin.git``."""
    origin = base / f"{name}-origin.git"
    path = base / name
    run_git(base, "init", "-q", "--bare", "-b", "main", str(origin))
    run_git(base, "init", "-q", "-b", "main", str(path))
    repo = Repo(path, origin)
    repo.write("README.md", "hello\n")
    repo.write(".gitignore", "node_modules/\n.agentproto/\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "initial")
    repo.git("remote", "add", "origin", str(origin))
    repo.git("push", "-q", "-u", "origin", "main")
    repo.git("remote", "set-head", "origin", "main")
    return repo


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Private HOME, git identity from the environment, fresh process-wide state."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Tavern Lab")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "lab@example.invalid")
    monkeypatch.delenv("AGENTPROTO_WORKTREES_PROVISION_CONCURRENCY", raising=False)
    monkeypatch.delenv("AGENTPROTO_WORKTREES_TURBO_CACHE_DIR", raising=False)
    monkeypatch.delenv("TURBO_CACHE_DIR", raising=False)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    reset_provision_scheduler(ProvisionScheduler())
    yield
    default_registry().close()
    proxy_table.clear()


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """A checkout at ``<tmp>/work/app`` with a bare origin; worktrees land in ``_worktrees``."""
    base = tmp_path / "work"
    base.mkdir()
    return make_repo(base)
