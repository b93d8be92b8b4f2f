"""git through GitPython's command wrapper (spec section 1.3).

Every call is ``git -C <target> <args…>`` with the working directory set to the stable main
repository root, never to a worktree that may already be gone. A non-zero exit raises
:class:`GitError` with ``git <args> failed (exit <N>): <stderr, or stdout if stderr is empty>``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from git.cmd import Git

from tavernlab.worktree.errors import GitError, SpawnError
from tavernlab.worktree.process import RunResult


def git_run(repo_root: str | os.PathLike[str], args: Sequence[str], *,
            target: str | os.PathLike[str] | None = None,
            global_options: Sequence[str] = ()) -> RunResult:
    """Run git and return its result without raising on a non-zero exit.

    ``target`` is the ``-C`` directory (default ``repo_root``); ``global_options`` go before
    ``-C`` (for example ``--no-optional-locks``).
    """
    root = os.fspath(repo_root)
    where = os.fspath(target) if target is not None else root
    argv = ["git", *global_options, "-C", where, *args]
    try:
        status, out, err = Git(root).execute(
            argv,
            with_extended_output=True,
            with_exceptions=False,
            strip_newline_in_stdout=False,
        )
    except OSError as exc:  # missing working directory or git binary
        raise SpawnError(f"could not run git in {root}: {exc}") from exc
    return RunResult(exit_code=int(status), stdout=str(out), stderr=str(err))


def git(repo_root: str | os.PathLike[str], args: Sequence[str], *,
        target: str | os.PathLike[str] | None = None,
        global_options: Sequence[str] = ()) -> str:
    """Run git and return stdout; a non-zero exit raises :class:`GitError`."""
    result = git_run(repo_root, args, target=target, global_options=global_options)
    if result.exit_code != 0:
        raise git_failure(args, result)
    return result.stdout


def git_failure(args: Sequence[str], result: RunResult) -> GitError:
    """The upstream error for a failed git call."""
    detail = result.stderr.strip() or result.stdout.strip()
    return GitError(
        f"git {' '.join(args)} failed (exit {result.exit_code}): {detail}",
        args=list(args), exit_code=result.exit_code, stderr=result.stderr, stdout=result.stdout,
    )


def git_ok(repo_root: str | os.PathLike[str], args: Sequence[str], *,
           target: str | os.PathLike[str] | None = None) -> bool:
    """Whether git exits 0 (for predicates such as ``merge-base --is-ancestor``)."""
    try:
        return git_run(repo_root, args, target=target).exit_code == 0
    except SpawnError:
        return False
