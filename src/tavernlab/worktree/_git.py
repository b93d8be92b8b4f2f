"""git through the worktree package's one process runner (docs/worktrees.md).

Every call is ``git -C <target> <args…>`` with the working directory set to the stable main
repository root, never to a worktree that may already be gone. A non-zero exit raises
:class:`GitError` with ``git <args> failed (exit <N>): <stderr, or stdout if stderr is empty>``.

git runs through :func:`tavernlab.worktree._process.run_argv`, so a cancel signal (or a
``KeyboardInterrupt``) stops it like any other child, and with ``LC_ALL=C`` so the messages
the package recognizes (``unknown revision`` and friends) are git's English ones whatever the
user's locale. Callers put ``--end-of-options`` (or ``--``) before every caller-supplied
value, so a value can never be read as an option.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from tavernlab.cancel import CancelToken
from tavernlab.worktree._errors import GitError, SpawnError
from tavernlab.worktree._process import RunResult, run_argv

#: Extra environment for every git child.
GIT_ENVIRONMENT = {"LC_ALL": "C", "LANGUAGE": "C", "GIT_TERMINAL_PROMPT": "0"}
#: The ref new worktrees branch from and work is compared with, unless told another.
DEFAULT_REF = "origin/main"
#: Marks the end of options: everything after it is a value (git >= 2.24).
END_OF_OPTIONS = "--end-of-options"


def git_run(repo_root: str | os.PathLike[str], args: Sequence[str], *,
            target: str | os.PathLike[str] | None = None,
            global_options: Sequence[str] = (),
            signal: CancelToken | None = None,
            stdin: bytes | None = None) -> RunResult:
    """Run git and return its result without raising on a non-zero exit.

    ``target`` is the ``-C`` directory (default ``repo_root``); ``global_options`` go before
    ``-C`` (for example ``--no-optional-locks``). A missing ``repo_root`` or git binary
    raises :class:`SpawnError`.
    """
    root = os.fspath(repo_root)
    where = os.fspath(target) if target is not None else root
    argv = ["git", *global_options, "-C", where, *args]
    try:
        return run_argv(argv, cwd=root, env=GIT_ENVIRONMENT, signal=signal, stdin=stdin)
    except SpawnError as exc:
        if not os.path.isdir(root):
            raise SpawnError(f"the repository directory {root} does not exist") from exc
        raise


def git(repo_root: str | os.PathLike[str], args: Sequence[str], *,
        target: str | os.PathLike[str] | None = None,
        global_options: Sequence[str] = (),
        signal: CancelToken | None = None) -> str:
    """Run git and return stdout; a non-zero exit raises :class:`GitError`."""
    result = git_run(repo_root, args, target=target, global_options=global_options,
                     signal=signal)
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


def resolves_to_commit(repo_root: str | os.PathLike[str], ref: str) -> bool:
    """Whether ``ref`` names a commit in the repository."""
    return git_ok(repo_root, ["rev-parse", "--verify", "--quiet", END_OF_OPTIONS,
                              f"{ref}^{{commit}}"])
