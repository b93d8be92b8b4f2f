"""Provisioning limits (docs/worktrees.md): the global cap, per-repository caps and the load
factor, parsed from ``~/.agentproto/config.json`` and the environment without ever raising.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: A cap with no limit.
UNLIMITED = math.inf
DEFAULT_CONCURRENCY = 2
CONCURRENCY_ENV = "AGENTPROTO_WORKTREES_PROVISION_CONCURRENCY"


@dataclass(frozen=True)
class ProvisionLimits:
    """``{concurrency, perRepo, loadFactor}``; ``math.inf`` means no cap, 0 disables the guard."""

    concurrency: float = DEFAULT_CONCURRENCY
    per_repo: Mapping[str, float] = field(default_factory=dict)
    load_factor: float = 0.0


def parse_cap(value: Any) -> float | None:
    """A cap: an integer >= 0 (or a non-blank numeric string); 0 → unlimited; else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    if value < 0 or value != int(value):
        return None
    return UNLIMITED if value == 0 else float(int(value))


def _repo_key(raw: str, home: str) -> str:
    key = raw.strip()
    if key == "~" or key.startswith("~/"):
        key = home + key[1:]
    if "/" in key or "\\" in key:
        key = os.path.abspath(key)
    return key


def parse_provision_limits(section: Any, env: Mapping[str, str] | None = None) -> ProvisionLimits:
    """Limits from the ``worktrees`` object of ``~/.agentproto/config.json``; never raises.

    ``AGENTPROTO_WORKTREES_PROVISION_CONCURRENCY`` (if valid) wins over
    ``provisionConcurrency``; ``provisionConcurrencyByRepo`` gives per-repo caps keyed by an
    absolute path (``~`` expanded) or a bare directory name; ``provisionLoadFactor`` is a
    finite number > 0, else 0 (guard off).
    """
    data = section if isinstance(section, dict) else {}
    environ = os.environ if env is None else env
    concurrency = parse_cap(environ.get(CONCURRENCY_ENV))
    if concurrency is None:
        concurrency = parse_cap(data.get("provisionConcurrency"))
    if concurrency is None:
        concurrency = DEFAULT_CONCURRENCY
    per_repo: dict[str, float] = {}
    raw_repos = data.get("provisionConcurrencyByRepo")
    if isinstance(raw_repos, dict):
        home = str(Path.home())
        for raw_key, raw_value in raw_repos.items():
            if not isinstance(raw_key, str) or not raw_key.strip():
                continue
            cap = parse_cap(raw_value)
            if cap is not None:
                per_repo[_repo_key(raw_key, home)] = cap
    factor = data.get("provisionLoadFactor")
    load_factor = (
        float(factor)
        if isinstance(factor, int | float) and not isinstance(factor, bool)
        and math.isfinite(factor) and factor > 0
        else 0.0
    )
    return ProvisionLimits(concurrency=concurrency, per_repo=per_repo, load_factor=load_factor)


def load_provision_limits(env: Mapping[str, str] | None = None) -> ProvisionLimits:
    """Limits from ``~/.agentproto/config.json`` (``worktrees``) plus the environment.

    A missing or unreadable file counts as no configuration.
    """
    try:
        config = json.loads((Path.home() / ".agentproto" / "config.json").read_text("utf-8"))
    except (OSError, ValueError):
        config = {}
    section = config.get("worktrees") if isinstance(config, dict) else None
    return parse_provision_limits(section, env)
