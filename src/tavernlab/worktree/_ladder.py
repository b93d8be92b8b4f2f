"""The branch ladder's tip classifier (docs/worktrees.md), used by GC's in-base promotion.

A branch whose tip is not an ancestor of the base may still be fully integrated: squash
merges, cherry-picks and re-applied or moved edits leave no ancestry behind. Upstream's
``classifyTip`` order, which tavernlab follows:

1. ``merged`` — the tip is an ancestor of the base;
2. ``squash-merged`` — the trial merge (``merge-tree --write-tree``) is clean and yields the
   base's own tree;
3. ``patch-merged`` — **only when the trial merge conflicts**: ``git cherry`` finds every
   commit already applied. A clean merge that still adds something is never patch-merged,
   so a branch that was cherry-picked and then reverted in the base stays unmerged;
4. ``content-merged`` — every path the branch changed (merge-base..tip, no rename
   detection) is, by blob, somewhere in the base's tree (moves survive) or gitignored there,
   and the branch deletes nothing the base still has;
5. else ``unmerged``.

The ``pr-merged`` rung needs a forge and belongs to the full branch GC (out of scope), as do
re-rooted bases (a tip without history in common with the base is ``unmerged``).
"""

from __future__ import annotations

from typing import Literal

from tavernlab.worktree._git import END_OF_OPTIONS, git, git_run

TipVerdict = Literal["merged", "squash-merged", "patch-merged", "content-merged", "unmerged"]
_NULL_SHA = "0" * 40


def classify_tip(repo_root: str, tip: str, base: str) -> TipVerdict:
    """The first rung of the ladder that proves ``tip`` is in ``base``, else ``unmerged``.

    Raises :class:`~tavernlab.worktree._errors.GitError` when the base does not resolve
    (callers treat that as "no").
    """
    base_sha = git(repo_root, ["rev-parse", "--verify", END_OF_OPTIONS,
                               f"{base}^{{commit}}"]).strip()
    merge_base = git_run(repo_root, ["merge-base", END_OF_OPTIONS, base_sha, tip])
    if merge_base.exit_code != 0:
        return "unmerged"  # no history in common
    if git_run(repo_root, ["merge-base", "--is-ancestor", END_OF_OPTIONS, tip,
                           base_sha]).exit_code == 0:
        return "merged"
    base_tree = git(repo_root, ["rev-parse", "--verify", END_OF_OPTIONS,
                                f"{base_sha}^{{tree}}"]).strip()
    trial = git_run(repo_root, ["merge-tree", "--write-tree", "--no-messages", END_OF_OPTIONS,
                                base_sha, tip])
    conflicts = trial.exit_code != 0
    if not conflicts and trial.stdout.split("\n", 1)[0].strip() == base_tree:
        return "squash-merged"
    if conflicts:
        cherry = git(repo_root, ["cherry", END_OF_OPTIONS, base_sha, tip])
        if not any(line.startswith("+") for line in cherry.splitlines()):
            return "patch-merged"
    if _content_merged(repo_root, tip, base_sha, merge_base.stdout.strip()):
        return "content-merged"
    return "unmerged"


def _tree_index(repo_root: str, ref: str) -> dict[str, str]:
    out = git(repo_root, ["ls-tree", "-r", "-z", END_OF_OPTIONS, ref])
    index = {}
    for record in out.split("\0"):
        meta, tab, path = record.partition("\t")
        if tab:
            index[path] = meta.split()[2]
    return index


def _changed_blobs(repo_root: str, merge_base: str, tip: str) -> dict[str, str | None]:
    """Per changed path, the tip's blob (``None`` when the tip deletes the path)."""
    out = git(repo_root, ["diff", "--raw", "-z", "--no-abbrev", "--no-renames", END_OF_OPTIONS,
                          merge_base, tip])
    parts = out.split("\0")
    changed: dict[str, str | None] = {}
    for meta, path in zip(parts[::2], parts[1::2], strict=False):
        if meta.startswith(":") and path:
            blob = meta[1:].split(" ")[3]
            changed[path] = None if blob == _NULL_SHA else blob
    return changed


def _ignored(repo_root: str, paths: list[str]) -> set[str]:
    stdin = ("\0".join(paths) + "\0").encode("utf-8")
    result = git_run(repo_root, ["check-ignore", "--no-index", "--stdin", "-z"], stdin=stdin)
    if result.exit_code not in (0, 1):  # 1: none of them is ignored
        return set()
    return {path for path in result.stdout.split("\0") if path}


def _content_merged(repo_root: str, tip: str, base_sha: str, merge_base: str) -> bool:
    index = _tree_index(repo_root, base_sha)
    blobs = set(index.values())
    pending = []
    for path, blob in _changed_blobs(repo_root, merge_base, tip).items():
        if blob == index.get(path):
            continue
        if blob is None:
            return False  # the branch deletes a path the base still has
        if blob not in blobs:
            pending.append(path)
    if not pending:
        return True
    # What is left is "evolved" (same name in base, other content) or "unique": either one
    # keeps the tip unmerged unless the base ignores the path.
    ignored = _ignored(repo_root, pending)
    return all(path in ignored for path in pending)
