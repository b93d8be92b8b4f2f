"""Globs for ``copyGlobs`` and ``cloneGlobs``, and the clone copy (docs/worktrees.md).

``copyGlobs`` expand to individual files (``**`` allowed) and are copied over whatever is
there. ``cloneGlobs`` match whole entries segment by segment (``**`` rejected) and are cloned
with copy-on-write where the filesystem supports it — never as a symlink, so ``depsCmd`` can
mutate the clone without touching the source checkout.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path

from tavernlab.cancel import CancelToken
from tavernlab.worktree._errors import (
    CloneError,
    GlobPatternError,
    GlobTraversalError,
    ProvisionCancelledError,
)
from tavernlab.worktree._names import relative_path_problem
from tavernlab.worktree._process import RunResult, run_argv

#: Directory names the file-glob walk never enters.
SKIPPED_DIRS = frozenset({".git", "node_modules"})

ArgvRunner = Callable[..., RunResult]


def _has_wildcard(segment: str) -> bool:
    return "*" in segment or "?" in segment


@lru_cache(maxsize=512)
def _segment_regex(segment: str) -> re.Pattern[str]:
    pattern = "".join(
        "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char)
        for char in segment
    )
    return re.compile(pattern + r"\Z", re.DOTALL)


def match_segment(pattern: str, name: str) -> bool:
    """Whether one path segment matches one glob segment (``*`` and ``?`` only)."""
    if not _has_wildcard(pattern):
        return pattern == name
    return _segment_regex(pattern).match(name) is not None


def _match_parts(patterns: Sequence[str], parts: Sequence[str]) -> bool:
    if not patterns:
        return not parts
    head, rest = patterns[0], patterns[1:]
    if head == "**":
        if not rest:
            return True
        return any(_match_parts(rest, parts[index:]) for index in range(len(parts) + 1))
    return bool(parts) and match_segment(head, parts[0]) and _match_parts(rest, parts[1:])


def _walk_files(root: str, start: str, max_depth: int | None) -> Iterator[str]:
    stack = [(start, 0)]
    while stack:
        directory, depth = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, directory) if directory else root))
        except OSError:
            continue
        for entry in entries:
            rel = f"{directory}/{entry.name}" if directory else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED_DIRS and (max_depth is None or depth < max_depth):
                        stack.append((rel, depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    yield rel
            except OSError:
                continue


def expand_file_glob(root: str | os.PathLike[str], pattern: str) -> list[str]:
    """Expand a ``copyGlobs`` pattern to regular files, as sorted root-relative POSIX paths.

    The walk starts at the longest literal directory prefix, skips ``.git`` and
    ``node_modules``, never follows symlinked directories, and yields nothing for missing
    or unreadable directories. A pattern that is absolute or has a ``..`` segment raises
    :class:`GlobTraversalError` (tavernlab's addition; upstream copies from anywhere).
    """
    if relative_path_problem(pattern) is not None:
        raise GlobTraversalError(pattern)
    segments = [s for s in pattern.split("/") if s]
    if not segments:
        return []
    prefix: list[str] = []
    for segment in segments[:-1]:
        if _has_wildcard(segment) or segment == "**":
            break
        prefix.append(segment)
    rest = segments[len(prefix):]
    max_depth = None if "**" in rest else len(rest) - 1
    base = os.fspath(root)
    matches = [
        rel for rel in _walk_files(base, "/".join(prefix), max_depth)
        if _match_parts(segments, rel.split("/"))
    ]
    return sorted(matches)


def check_clone_pattern(pattern: str) -> list[str]:
    """Reject traversal and ``**`` before any filesystem access; return the segments."""
    if relative_path_problem(pattern) is not None:
        raise GlobTraversalError(pattern)
    segments = [s for s in pattern.split("/") if s]
    if "**" in segments:
        raise GlobPatternError(
            f"cloneGlobs pattern '{pattern}': '**' is not supported; "
            "name each path segment explicitly"
        )
    return segments


def expand_clone_glob(root: str | os.PathLike[str], pattern: str) -> list[str]:
    """Expand a ``cloneGlobs`` pattern to whole entries (files or directories).

    A match on the last segment is returned without descending into it, so a
    ``node_modules`` with thousands of files costs one ``lstat``.
    """
    segments = check_clone_pattern(pattern)
    if not segments:
        return []
    base = os.fspath(root)
    current = [""]
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        found: list[str] = []
        for rel in current:
            directory = os.path.join(base, rel) if rel else base
            if not _has_wildcard(segment):
                names = [segment] if segment != ".git" else []
            else:
                try:
                    names = sorted(name for name in os.listdir(directory)
                                   if name != ".git" and match_segment(segment, name))
                except OSError:
                    continue
            for name in names:
                child = f"{rel}/{name}" if rel else name
                try:
                    mode = os.lstat(os.path.join(base, child)).st_mode
                except OSError:
                    continue
                if last or stat.S_ISDIR(mode):
                    found.append(child)
        current = found
    return current


def cow_copy_argv(src: str, dest: str, platform: str | None = None) -> list[str] | None:
    """The copy-on-write ``cp`` vector for this platform, or ``None`` where there is none."""
    name = platform or sys.platform
    if name == "darwin":
        return ["cp", "-Rc", src, dest]
    if name.startswith("linux"):
        return ["cp", "-r", "--reflink=auto", src, dest]
    return None


def clone_entries(
    source_root: str | os.PathLike[str],
    dest_root: str | os.PathLike[str],
    patterns: Sequence[str],
    *,
    signal: CancelToken | None = None,
    runner: ArgvRunner = run_argv,
) -> list[str]:
    """Clone every match of ``patterns`` from ``source_root`` into ``dest_root``.

    Existing destinations are skipped (never clobbered). Each entry is tried with the
    platform's copy-on-write ``cp`` and falls back to ``cp -R``; cancellation raises
    :class:`ProvisionCancelledError` without a fallback. ``runner`` runs the ``cp`` argv
    (tests substitute a fake ``cp``). Returns the cloned relative paths.
    """
    cloned: list[str] = []
    src_base, dest_base = os.fspath(source_root), os.fspath(dest_root)
    for pattern in patterns:
        for rel in expand_clone_glob(src_base, pattern):
            if signal is not None and signal.cancelled:
                raise ProvisionCancelledError()
            src, dest = os.path.join(src_base, rel), os.path.join(dest_base, rel)
            if os.path.lexists(dest):
                continue
            parent = os.path.dirname(dest)
            Path(parent).mkdir(parents=True, exist_ok=True)
            argv = cow_copy_argv(src, dest)
            if argv is not None:
                result = runner(argv, cwd=parent, signal=signal)
                if result.exit_code == 0:
                    cloned.append(rel)
                    continue
                if signal is not None and signal.cancelled:
                    raise ProvisionCancelledError()
                if os.path.lexists(dest):  # a partial copy must not block the fallback
                    _remove_entry(dest)
            result = runner(["cp", "-R", src, dest], cwd=parent, signal=signal)
            if signal is not None and signal.cancelled:
                raise ProvisionCancelledError()
            if result.exit_code != 0:
                detail = result.stderr.strip() or result.stdout.strip()
                raise CloneError(f"clone of '{src}' into '{dest}' failed: {detail}")
            cloned.append(rel)
    return cloned


def _remove_entry(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


def copy_files(
    source_root: str | os.PathLike[str],
    dest_root: str | os.PathLike[str],
    patterns: Sequence[str],
    *,
    signal: CancelToken | None = None,
) -> list[str]:
    """Copy every file matching ``copyGlobs`` to the same relative path, overwriting."""
    copied = []
    for pattern in patterns:
        for rel in expand_file_glob(source_root, pattern):
            if signal is not None and signal.cancelled:
                raise ProvisionCancelledError()
            dest = Path(dest_root) / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(source_root) / rel, dest)
            copied.append(rel)
    return copied
