"""``*.localhost`` hostnames for services (docs/worktrees.md).

``*.localhost`` resolves to 127.0.0.1 everywhere, so every service of every worktree gets a
stable, readable URL behind one proxy port without any DNS setup.
"""

from __future__ import annotations

import os
import re

from tavernlab.worktree._git import git_ok, git_run

#: The proxy port used in service URLs unless the caller gives one.
DEFAULT_PROXY_PORT = 18780


def slugify(text: str) -> str:
    """Lowercase; every run outside ``[a-z0-9]`` becomes one ``-``; trim ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def repo_name(repo_root: str) -> str:
    """The basename of the repository root, trailing slashes ignored."""
    return os.path.basename(repo_root.rstrip("/")) or repo_root


def service_hostname(script: str, branch: str, repo: str, on_default_branch: bool) -> str:
    """``<script>--<branch>--<repo>.localhost``, or ``<script>--<repo>.localhost`` on the
    default branch (each part slugified)."""
    if on_default_branch:
        return f"{slugify(script)}--{slugify(repo)}.localhost"
    return f"{slugify(script)}--{slugify(branch)}--{slugify(repo)}.localhost"


def service_url(hostname: str, proxy_port: int = DEFAULT_PROXY_PORT) -> str:
    """``http://<hostname>:<proxyPort>``."""
    return f"http://{hostname}:{proxy_port}"


def default_branch(repo_root: str) -> str:
    """``origin/HEAD``'s branch; else ``main`` or ``master`` if it exists; else ``main``."""
    try:
        result = git_run(repo_root, ["symbolic-ref", "--short", "refs/remotes/origin/HEAD"])
    except Exception:
        result = None
    if result is not None and result.exit_code == 0 and result.stdout.strip():
        return result.stdout.strip().rsplit("/", 1)[-1]
    for name in ("main", "master"):
        if git_ok(repo_root, ["show-ref", "--verify", "--quiet", f"refs/heads/{name}"]):
            return name
    return "main"
