"""Provisioning (docs/worktrees.md): file globs, clone globs and the clone copy."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tavernlab.cancel import CancelToken
from tavernlab.worktree import GlobTraversalError, ProvisionCancelledError
from tavernlab.worktree._errors import GlobPatternError
from tavernlab.worktree._globs import (
    CloneError,
    clone_entries,
    expand_clone_glob,
    expand_file_glob,
)
from tavernlab.worktree._process import RunResult, run_argv


def touch(root: Path, rel: str, content: str = "x") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)


def big_node_modules(root: Path, files: int) -> None:
    for index in range(files):
        touch(root, f"node_modules/pkg{index % 50}/f{index}.js")


def test_file_glob_skips_node_modules(tmp_path: Path) -> None:
    touch(tmp_path, ".env")
    big_node_modules(tmp_path, 2500)
    (tmp_path / "node_modules" / "link").symlink_to(tmp_path)
    assert expand_file_glob(tmp_path, ".env") == [".env"]


def test_double_star_file_glob(tmp_path: Path) -> None:
    touch(tmp_path, "envs/dev/.env.local")
    touch(tmp_path, "envs/prod/.env.local")
    touch(tmp_path, "envs/dev/other.txt")
    assert expand_file_glob(tmp_path, "envs/**/.env.local") == [
        "envs/dev/.env.local", "envs/prod/.env.local"]


def test_file_glob_details(tmp_path: Path) -> None:
    touch(tmp_path, "a/x.json")
    touch(tmp_path, "a/b/y.json")
    touch(tmp_path, ".git/config")
    (tmp_path / "linked").symlink_to(tmp_path / "a")
    assert expand_file_glob(tmp_path, "a/*.json") == ["a/x.json"]
    assert expand_file_glob(tmp_path, "a/**") == ["a/b/y.json", "a/x.json"]
    assert expand_file_glob(tmp_path, "?/x.json") == ["a/x.json"]
    assert expand_file_glob(tmp_path, "**/*.json") == ["a/b/y.json", "a/x.json"]
    assert expand_file_glob(tmp_path, "**/config") == []
    assert expand_file_glob(tmp_path, "missing/*.json") == []


def test_clone_glob_whole_entries(tmp_path: Path) -> None:
    big_node_modules(tmp_path, 3000)
    touch(tmp_path, "cache.db")
    assert expand_clone_glob(tmp_path, "node_modules") == ["node_modules"]
    assert expand_clone_glob(tmp_path, "cache.db") == ["cache.db"]


def test_clone_glob_wildcard_segment(tmp_path: Path) -> None:
    touch(tmp_path, "packages/a/node_modules/x.js")
    touch(tmp_path, "packages/b/node_modules/y.js")
    touch(tmp_path, "packages/c/src/z.js")
    assert expand_clone_glob(tmp_path, "packages/*/node_modules") == [
        "packages/a/node_modules", "packages/b/node_modules"]
    assert expand_clone_glob(tmp_path, "missing") == []
    assert expand_clone_glob(tmp_path, "") == []


@pytest.mark.parametrize("pattern", ["../secrets", "node_modules/../../etc", "/etc/passwd",
                                     "../x", "/etc"])
def test_clone_glob_traversal(tmp_path: Path, pattern: str) -> None:
    with pytest.raises(GlobTraversalError, match=r"escapes the repo root \(path traversal\)"):
        expand_clone_glob(tmp_path / "does-not-exist", pattern)


def test_clone_glob_rejects_double_star(tmp_path: Path) -> None:
    with pytest.raises(GlobPatternError, match=r"\*\*"):
        expand_clone_glob(tmp_path, "**/node_modules")


def test_existing_destination_is_never_clobbered(tmp_path: Path) -> None:
    src, dest = tmp_path / "src", tmp_path / "dest"
    touch(src, "cache.db", "fresh\n")
    touch(dest, "cache.db", "already-there\n")
    assert clone_entries(src, dest, ["cache.db"]) == []
    assert (dest / "cache.db").read_text() == "already-there\n"


def test_clone_is_independent_of_source(tmp_path: Path) -> None:
    src, dest = tmp_path / "src", tmp_path / "dest"
    touch(src, "node_modules/pkg/index.js", "original")
    dest.mkdir()
    assert clone_entries(src, dest, ["node_modules"]) == ["node_modules"]
    clone = dest / "node_modules"
    assert clone.is_dir() and not clone.is_symlink()
    (clone / "pkg" / "index.js").write_text("changed")
    assert (src / "node_modules/pkg/index.js").read_bytes() == b"original"


def test_fake_cp_that_cancels_stops_after_one_call(tmp_path: Path) -> None:
    src, dest = tmp_path / "src", tmp_path / "dest"
    touch(src, "node_modules/x.js")
    dest.mkdir()
    signal = CancelToken()
    calls: list[list[str]] = []

    def fake_cp(argv: list[str], **_: Any) -> RunResult:
        calls.append(argv)
        signal.cancel()
        return RunResult(143, "", "Terminated")

    with pytest.raises(ProvisionCancelledError):
        clone_entries(src, dest, ["node_modules"], signal=signal, runner=fake_cp)
    assert len(calls) == 1
    assert calls[0][:3] == ["cp", "-r", "--reflink=auto"]


def test_two_failing_cp_calls(tmp_path: Path) -> None:
    src, dest = tmp_path / "src", tmp_path / "dest"
    touch(src, "node_modules/x.js")
    dest.mkdir()
    calls: list[list[str]] = []

    def failing_cp(argv: list[str], **_: Any) -> RunResult:
        calls.append(argv)
        return RunResult(1, "", "cp: no space left")

    with pytest.raises(CloneError, match=r"clone of '.*' into '.*' failed: cp: no space left"):
        clone_entries(src, dest, ["node_modules"], runner=failing_cp)
    assert len(calls) == 2
    assert calls[1][:2] == ["cp", "-R"]


def test_fallback_copy_runs_in_destination_parent(tmp_path: Path) -> None:
    src, dest = tmp_path / "src", tmp_path / "dest"
    touch(src, "deep/node_modules/x.js", "x")
    dest.mkdir()
    seen: list[str] = []

    def cow_fails(argv: list[str], **kwargs: Any) -> RunResult:
        seen.append(os.fspath(kwargs["cwd"]))
        if "--reflink=auto" in argv:
            return RunResult(1, "", "reflink unsupported")
        return run_argv(argv, **kwargs)

    assert clone_entries(src, dest, ["deep/node_modules"], runner=cow_fails) == [
        "deep/node_modules"]
    assert seen == [str(dest / "deep")] * 2
    assert (dest / "deep/node_modules/x.js").read_text() == "x"


def test_already_cancelled_signal_raises_before_cp(tmp_path: Path) -> None:
    src, dest = tmp_path / "src", tmp_path / "dest"
    touch(src, "node_modules/x.js")
    dest.mkdir()
    signal = CancelToken()
    signal.cancel()
    calls: list[list[str]] = []

    def never(argv: list[str], **_: Any) -> RunResult:
        calls.append(argv)
        return RunResult(0, "", "")

    with pytest.raises(ProvisionCancelledError):
        clone_entries(src, dest, ["node_modules"], signal=signal, runner=never)
    assert calls == []
