"""One-shot commands in a worktree: ``worktree.run-gate`` and ``worktree.run-script``
(docs/worktrees.md)."""

from __future__ import annotations

import os
from typing import Any

from tavernlab.errors import ToolError
from tavernlab.worktree._config import load_committed_config
from tavernlab.worktree._environment import HookContext, hook_environment
from tavernlab.worktree._git import DEFAULT_REF
from tavernlab.worktree._process import LineObserver, run_shell


def run_gate(cwd: str, cmd: str, on_line: LineObserver | None = None) -> dict[str, Any]:
    """Run a caller-supplied check in ``cwd``: ``{passed, exitCode, stdout, stderr}``.

    The command sees only the inherited environment, has no timeout of its own and never
    raises on a non-zero exit (``passed`` is ``exitCode == 0``). ``on_line(stream, line)``,
    when given, sees each output line as it is printed (the result still holds all of it).
    """
    result = run_shell(cmd, cwd=cwd, on_line=on_line)
    return {"passed": result.exit_code == 0, **result.to_json()}


def run_script(repo_root: str, worktree_path: str, branch: str, script: str,
               base: str = DEFAULT_REF) -> dict[str, Any]:
    """Run a committed ``scripts.<name>`` once in the worktree with the hook environment.

    The script's ``type`` is not checked, so a service script runs as a one-shot. A missing
    config or script raises ``ToolError(not_found)``; a config parse error propagates as
    ``ConfigError``.
    """
    config = load_committed_config(repo_root, base)
    spec = config.find_script(script) if config else None
    if spec is None:
        raise ToolError("not_found", f'no script "{script}" in {base}:agentproto.json')
    env = hook_environment(HookContext(os.path.abspath(repo_root), worktree_path, branch))
    result = run_shell(spec["command"], cwd=worktree_path, env=env)
    return {"passed": result.exit_code == 0, **result.to_json()}
