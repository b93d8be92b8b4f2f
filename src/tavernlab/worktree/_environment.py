"""Environment variables given to hooks, scripts and services (docs/worktrees.md).

``depsCmd`` and run-gate get none of these: they see only the inherited environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class HookContext:
    """Where a hook, script or service runs: source checkout, worktree and branch."""

    source: str
    worktree: str
    branch: str


@dataclass(frozen=True)
class ServiceEndpoint:
    """A declared service's name, port and proxy URL, for sibling discovery."""

    name: str
    port: int
    url: str


#: Defaults for hooks, which run without a TTY (upstream: setup and teardown only).
NON_INTERACTIVE_DEFAULTS = {"CI": "true", "npm_config_confirm_modules_purge": "false"}


def hook_environment(ctx: HookContext) -> dict[str, str]:
    """The variables every hook, script and service gets: source checkout, worktree, branch."""
    return {
        "AGENTPROTO_SOURCE_CHECKOUT_PATH": os.path.abspath(ctx.source),
        "AGENTPROTO_WORKTREE_PATH": os.path.abspath(ctx.worktree),
        "AGENTPROTO_BRANCH_NAME": ctx.branch,
    }


def non_interactive_defaults(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``CI=true`` and ``npm_config_confirm_modules_purge=false`` unless already defined.

    Upstream detail unknown for other children; tavernlab applies these to setup and
    teardown hooks only.
    """
    current = os.environ if environ is None else environ
    return {key: value for key, value in NON_INTERACTIVE_DEFAULTS.items() if key not in current}


def turbo_cache_dir(environ: Mapping[str, str] | None = None) -> str:
    """``TURBO_CACHE_DIR`` for setup hooks.

    ``AGENTPROTO_WORKTREES_TURBO_CACHE_DIR`` made absolute against the process working
    directory; else an existing ``TURBO_CACHE_DIR`` verbatim; else ``~/.agentproto/turbo-cache``.
    """
    current = os.environ if environ is None else environ
    override = current.get("AGENTPROTO_WORKTREES_TURBO_CACHE_DIR")
    if override:
        return os.path.abspath(override)
    existing = current.get("TURBO_CACHE_DIR")
    if existing:
        return existing
    return str(Path.home() / ".agentproto" / "turbo-cache")


def service_token(name: str) -> str:
    """The service name as an environment token: ``web-api`` → ``WEB_API``."""
    return re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_")


def peer_environment(peers: Sequence[ServiceEndpoint]) -> dict[str, str]:
    """``AGENTPROTO_SERVICE_<TOKEN>_PORT``/``_URL`` for every given sibling service."""
    env: dict[str, str] = {}
    for peer in peers:
        token = service_token(peer.name)
        env[f"AGENTPROTO_SERVICE_{token}_PORT"] = str(peer.port)
        env[f"AGENTPROTO_SERVICE_{token}_URL"] = peer.url
    return env


def service_environment(ctx: HookContext, own: ServiceEndpoint,
                        services: Sequence[ServiceEndpoint]) -> dict[str, str]:
    """A service's extra variables: the hook context, its own port/URL and its peers."""
    env = hook_environment(ctx)
    env["AGENTPROTO_PORT"] = str(own.port)
    env["AGENTPROTO_URL"] = own.url
    env.update(peer_environment([peer for peer in services if peer.name != own.name]))
    return env
