"""The branch ladder's tip classifier (spec section 9.7), used by GC's in-base promotion.

A branch whose tip is not an ancestor of the base may still be fully integrated: squash
merges, cherry-picks and re-applied edits leave no ancestry behind. Each rung asks git a
cheaper-to-stronger question; the first that answers yes names the verdict.
"""

from __future__ import annotations

from typing import Literal

from tavernlab.worktree.git import git_run

TipVerdict = Literal["merged", "squash-merged", "patch-merged", "content-merged", "unmerged"]


def classify_tip(repo_root: str, tip: str, base: str) -> TipVerdict:
    """``merged`` (ancestor), ``squash-merged`` (merging changes nothing), ``patch-merged``
    (every commit cherry-picked), ``content-merged`` (every changed file's blob is in base),
    else ``unmerged``. Git errors on a rung count as "no".

    The ``pr-merged`` rung needs a forge and belongs to the full branch GC (out of scope);
    the "rest is ignored there" refinement of ``content-merged`` is not implemented:
    every changed path must match base exactly.
    """
    if git_run(repo_root, ["merge-base", "--is-ancestor", tip, base]).exit_code == 0:
        return "merged"
    merged_tree = git_run(repo_root, ["merge-tree", "--write-tree", base, tip])
    base_tree = git_run(repo_root, ["rev-parse", f"{base}^{{tree}}"])
    if merged_tree.exit_code == 0 and base_tree.exit_code == 0 \
            and merged_tree.stdout.split("\n", 1)[0].strip() == base_tree.stdout.strip():
        return "squash-merged"
    cherry = git_run(repo_root, ["cherry", base, tip])
    lines = [line for line in cherry.stdout.splitlines() if line.strip()]
    if cherry.exit_code == 0 and lines and all(line.startswith("-") for line in lines):
        return "patch-merged"
    if _content_merged(repo_root, tip, base):
        return "content-merged"
    return "unmerged"


def _blobs(repo_root: str, ref: str, paths: list[str]) -> dict[str, str] | None:
    result = git_run(repo_root, ["ls-tree", "-r", "-z", ref, "--", *paths])
    if result.exit_code != 0:
        return None
    blobs = {}
    for record in result.stdout.split("\0"):
        if record:
            meta, _, path = record.partition("\t")
            blobs[path] = meta.split()[2]
    return blobs


def _content_merged(repo_root: str, tip: str, base: str) -> bool:
    merge_base = git_run(repo_root, ["merge-base", base, tip])
    if merge_base.exit_code != 0:
        return False
    changed = git_run(repo_root, ["diff", "--name-only", "-z", merge_base.stdout.strip(), tip])
    if changed.exit_code != 0:
        return False
    paths = [p for p in changed.stdout.split("\0") if p]
    if not paths:
        return False
    at_tip, at_base = _blobs(repo_root, tip, paths), _blobs(repo_root, base, paths)
    if at_tip is None or at_base is None:
        return False
    return all(at_tip.get(path) == at_base.get(path) for path in paths)
