"""Fast worktree removal and the trash drainer (spec section 9.4).

Deleting a worktree with a large ``node_modules`` takes seconds; renaming it into a
``.trash`` directory next to it takes microseconds. So removal checks cleanliness, renames the
worktree to ``<parent>/.trash/<basename>-<epoch ms>``, prunes git's bookkeeping and hands the
directory to a detached ``rm -rf`` that is not awaited.

Upstream detail unknown for which removal variant is current; tavernlab uses the steps below
plus a serialized drainer, :func:`ensure_trash_deleter`, that empties a whole ``.trash``
directory and never leaves its ``.trash/.deleting`` pid file behind.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tavernlab.worktree.errors import GitError
from tavernlab.worktree.git import git, git_run
from tavernlab.worktree.listing import list_worktrees, real

TRASH_DIR = ".trash"
DELETING_FILE = ".deleting"

SpawnRemoval = Callable[[str], None]


def _spawn_detached(argv: list[str]) -> None:
    subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)


def spawn_background_removal(path: str) -> None:
    """Delete ``path`` with a detached ``rm -rf`` that outlives this call (not awaited)."""
    _spawn_detached(["rm", "-rf", "--", path])


def _removal_refused(path: str, reason: str) -> GitError:
    message = f"git worktree remove failed (exit 128): '{path}' {reason}"
    return GitError(message, args=["worktree", "remove", path], exit_code=128, stderr=message,
                    stdout="")


def remove_worktree_fast(
    repo_root: str | os.PathLike[str],
    path: str | os.PathLike[str],
    force: bool = False,
    now: Callable[[], float] | None = None,
    spawn_removal: SpawnRemoval | None = None,
) -> None:
    """Remove a linked worktree by renaming it into ``.trash`` and deleting it in the background.

    Not forced, any ``git status --porcelain`` output refuses with git's own wording
    (``contains modified or untracked files, use --force to delete it``) and nothing moves;
    ignored files never block. A path that is not a linked worktree, or a locked one, is
    refused too. If the rename fails, ``git worktree remove [--force]`` does the job.
    ``now`` returns epoch milliseconds; ``spawn_removal`` replaces the background delete.
    """
    root, target = os.fspath(repo_root), os.fspath(path)
    if not force:
        status = git(root, ["status", "--porcelain", "--ignore-submodules=none"], target=target)
        if status.strip():
            raise _removal_refused(
                target, "contains modified or untracked files, use --force to delete it")
    wanted = real(target)
    records = list_worktrees(root)
    record = next((r for r in records[1:] if real(r["path"]) == wanted), None)
    if record is None:
        raise GitError(f"not a linked worktree of {root}: {target}",
                       args=["worktree", "remove", target], exit_code=128, stderr="", stdout="")
    if "locked" in record:
        raise _removal_refused(target, "is locked; unlock it first")
    stamp = int(now() if now is not None else time.time() * 1000)
    source = Path(target)
    trash_entry = source.parent / TRASH_DIR / f"{source.name}-{stamp}"
    try:
        trash_entry.parent.mkdir(exist_ok=True)
        os.rename(source, trash_entry)
    except OSError:
        args = ["worktree", "remove", *(["--force"] if force else []), target]
        git(root, args)
        return
    git_run(root, ["worktree", "prune"])
    (spawn_removal or spawn_background_removal)(str(trash_entry))


def sweep_worktree_trash(root: str | os.PathLike[str],
                         spawn_removal: SpawnRemoval | None = None) -> list[str]:
    """Hand every ``root/.trash/*`` entry to the background remover; never deletes inline.

    A missing ``root`` or ``.trash`` is a no-op. Returns the entries handed off.
    """
    trash = Path(root) / TRASH_DIR
    try:
        entries = sorted(entry for entry in trash.iterdir() if entry.name != DELETING_FILE)
    except OSError:
        return []
    for entry in entries:
        (spawn_removal or spawn_background_removal)(str(entry))
    return [str(entry) for entry in entries]


_DRAINER = r"""
set -C
trash="$1"
echo $$ > "$trash/.deleting" 2>/dev/null || exit 0
set +C
trap 'rm -f "$trash/.deleting"' EXIT
while :; do
  found=0
  for entry in "$trash"/* "$trash"/.[!.]* "$trash"/..?*; do
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    [ "$entry" = "$trash/.deleting" ] && continue
    found=1
    rm -rf -- "$entry"
  done
  [ "$found" = 1 ] || break
done
"""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def ensure_trash_deleter(trash_parent: str | os.PathLike[str]) -> bool:
    """Start one detached drainer that empties ``<trash_parent>/.trash``; serialized.

    A live drainer's ``.trash/.deleting`` pid file means one is already at work (returns
    False); a stale pid file is removed first. The drainer deletes its pid file on exit and
    keeps draining until the directory is empty, so entries added meanwhile go too.
    """
    trash = Path(trash_parent) / TRASH_DIR
    if not trash.is_dir():
        return False
    pid_file = trash / DELETING_FILE
    try:
        pid = int(pid_file.read_text().strip() or "0")
    except (OSError, ValueError):
        pid = 0
    if pid_file.exists():
        if pid and _pid_alive(pid):
            return False
        pid_file.unlink(missing_ok=True)
    _spawn_detached(["/bin/sh", "-c", _DRAINER, "trash-drainer", str(trash)])
    return True
