"""Fast worktree removal and the trash drainer (docs/worktrees.md).

Deleting a worktree with a large ``node_modules`` takes seconds; renaming it into a
``.trash`` directory next to it takes microseconds. So removal checks cleanliness, renames the
worktree to ``<parent>/.trash/<basename>-<epoch ms>``, prunes git's bookkeeping and hands the
bytes to one detached, serialized drainer per ``.trash`` directory
(:func:`ensure_trash_deleter`, as upstream's current variant does) that is not awaited and
never leaves its ``.trash/.deleting`` pid file behind. The cleanliness check passes
``--untracked-files=normal`` so a ``status.showUntrackedFiles=no`` configuration can never
hide an untracked file from it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from tavernlab.clock import SYSTEM_CLOCK, Clock, epoch_ms
from tavernlab.worktree._errors import GitError
from tavernlab.worktree._git import END_OF_OPTIONS, git, git_run
from tavernlab.worktree._listing import list_worktrees, real
from tavernlab.worktree._process import pid_alive

TRASH_DIR = ".trash"
DELETING_FILE = ".deleting"

SpawnRemoval = Callable[[str], None]


def _spawn_detached(argv: list[str]) -> None:
    subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)


def _removal_refused(path: str, reason: str) -> GitError:
    message = f"git worktree remove failed (exit 128): '{path}' {reason}"
    return GitError(message, args=["worktree", "remove", path], exit_code=128, stderr=message,
                    stdout="")


def _refuse_dirt(root: str, target: str) -> None:
    args = ["status", "--porcelain", "--untracked-files=normal", "--ignore-submodules=none"]
    result = git_run(root, args, target=target)
    if result.exit_code != 0:
        detail = result.stderr.strip() or result.stdout.strip()
        raise GitError(f"git status failed in {target} (exit {result.exit_code}): {detail}",
                       args=args, exit_code=result.exit_code, stderr=result.stderr,
                       stdout=result.stdout)
    if result.stdout.strip():
        raise _removal_refused(
            target, "contains modified or untracked files, use --force to delete it")


def remove_worktree_fast(
    repo_root: str | os.PathLike[str],
    path: str | os.PathLike[str],
    force: bool = False,
    clock: Clock = SYSTEM_CLOCK,
    spawn_removal: SpawnRemoval | None = None,
) -> None:
    """Remove a linked worktree by renaming it into ``.trash`` and deleting it in the background.

    Not forced, any ``git status --porcelain --untracked-files=normal`` output refuses with
    git's own wording (``contains modified or untracked files, use --force to delete it``)
    and nothing moves; ignored files never block. A path that is not a linked worktree, or a
    locked one, is refused too. If the rename fails, ``git worktree remove [--force]`` does
    the job. ``clock`` stamps the trash entry (epoch ms); ``spawn_removal`` replaces the
    background drainer (it receives the trash entry).
    """
    root, target = os.fspath(repo_root), os.fspath(path)
    if not force:
        _refuse_dirt(root, target)
    wanted = real(target)
    records = list_worktrees(root)
    record = next((r for r in records[1:] if real(r["path"]) == wanted), None)
    if record is None:
        raise GitError(f"not a linked worktree of {root}: {target}",
                       args=["worktree", "remove", target], exit_code=128, stderr="", stdout="")
    if "locked" in record:
        raise _removal_refused(target, "is locked; unlock it first")
    source = Path(target)
    trash_entry = source.parent / TRASH_DIR / f"{source.name}-{epoch_ms(clock.now())}"
    try:
        trash_entry.parent.mkdir(exist_ok=True)
        os.rename(source, trash_entry)
    except OSError:
        git(root, ["worktree", "remove", *(["--force"] if force else []), END_OF_OPTIONS,
                   target])
        return
    git_run(root, ["worktree", "prune"])
    if spawn_removal is not None:
        spawn_removal(str(trash_entry))
    else:
        ensure_trash_deleter(trash_entry.parent)


def sweep_worktree_trash(root: str | os.PathLike[str],
                         spawn_removal: SpawnRemoval | None = None) -> list[str]:
    """Hand every ``root/.trash/*`` entry to the background remover; never deletes inline.

    Each entry goes to ``spawn_removal`` when given, else the ``.trash`` directory's drainer
    is made sure to run. A missing ``root`` or ``.trash`` is a no-op. Returns the entries
    handed off.
    """
    trash = Path(root) / TRASH_DIR
    try:
        entries = sorted(entry for entry in trash.iterdir() if entry.name != DELETING_FILE)
    except OSError:
        return []
    if spawn_removal is not None:
        for entry in entries:
            spawn_removal(str(entry))
    elif entries:
        ensure_trash_deleter(trash)
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


def ensure_trash_deleter(trash_dir: str | os.PathLike[str]) -> bool:
    """Start one detached drainer that empties the ``.trash`` directory ``trash_dir``
    (upstream's argument: the trash directory itself); serialized.

    A live drainer's ``.trash/.deleting`` pid file means one is already at work (returns
    False); a stale pid file is removed first. The drainer deletes its pid file on exit and
    keeps draining until the directory is empty, so entries added meanwhile go too.
    """
    trash = Path(trash_dir)
    if not trash.is_dir():
        return False
    pid_file = trash / DELETING_FILE
    try:
        pid = int(pid_file.read_text().strip() or "0")
    except (OSError, ValueError):
        pid = 0
    if pid_file.exists():
        if pid and pid_alive(pid):
            return False
        pid_file.unlink(missing_ok=True)
    _spawn_detached(["/bin/sh", "-c", _DRAINER, "trash-drainer", str(trash)])
    return True
