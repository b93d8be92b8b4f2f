"""Whole-file writes: publication (flushed), durable replacement (fsynced), the
must-not-exist write, and the one module that makes them."""

from __future__ import annotations

import ast
import hashlib
import os
from pathlib import Path

import pytest

from tavernlab.workspace.storage import _atomic as atomic
from tavernlab.workspace.storage._atomic import TEMP_PREFIX

SRC = Path(__file__).resolve().parents[2] / "src" / "tavernlab"


def test_publish_replaces_whole_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"old")
    atomic.publish(target, b"new bytes")
    assert target.read_bytes() == b"new bytes"
    assert os.listdir(tmp_path) == ["a.txt"]


def test_publish_stages_in_the_staging_folder_and_makes_it(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    atomic.publish(target, b"x", staging=tmp_path / ".staging")
    assert target.read_bytes() == b"x"
    assert sorted(os.listdir(tmp_path)) == [".staging", "a.txt"]
    assert os.listdir(tmp_path / ".staging") == []


def test_publish_into_a_missing_folder_fails_unless_parents(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "a.json"
    with pytest.raises(FileNotFoundError):
        atomic.publish(target, b"{}")
    assert not (tmp_path / "deep").exists()
    atomic.publish(target, b"{}", parents=True)
    assert target.read_bytes() == b"{}"
    staged = tmp_path / "run" / "out.json"
    atomic.publish(staged, b"1", temp=atomic.writer_temp(staged, tmp_path / "st"),
                   parents=True)
    assert staged.read_bytes() == b"1" and os.listdir(tmp_path / "st") == []


def test_writer_temp_names_the_writer(tmp_path: Path) -> None:
    name = atomic.writer_temp(tmp_path / "run.json")
    folder, _, base = name.rpartition("/")
    assert folder == str(tmp_path)
    assert base.startswith(f".run.json.tmp-{os.getpid()}-") and len(base) == len(
        f".run.json.tmp-{os.getpid()}-") + 32
    assert atomic.writer_temp("run.json", "/s").startswith(f"/s/.run.json.tmp-{os.getpid()}-")


def test_writer_temp_names_a_forked_child_by_its_own_id(tmp_path: Path) -> None:
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.write(write, f"{os.getpid()} {atomic.writer_temp('run.json')}".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        pid, name = pipe.read().decode().split(" ")
    os.waitpid(child, 0)
    assert pid == str(child) and name.startswith(f"./.run.json.tmp-{child}-")


def test_an_owned_temporary_name_overwrites_a_leftover_but_not_a_folder(tmp_path: Path) -> None:
    target = tmp_path / "index.json"
    leftover = tmp_path / "index.json.tmp"
    leftover.write_bytes(b"half a file")
    atomic.publish(target, b"whole", temp=str(leftover))
    assert target.read_bytes() == b"whole" and not leftover.exists()
    leftover.mkdir()
    with pytest.raises(IsADirectoryError):
        atomic.publish(target, b"never", temp=str(leftover))
    assert target.read_bytes() == b"whole" and leftover.is_dir()


def test_a_failed_write_removes_its_temporary_file_and_keeps_the_target(tmp_path: Path) -> None:
    target = tmp_path / "a"
    target.mkdir()
    (target / "inside").write_bytes(b"")
    with pytest.raises(OSError):
        atomic.publish(target, b"x")
    assert sorted(os.listdir(tmp_path)) == ["a"]
    assert os.listdir(target) == ["inside"]


def test_replace_durably_sets_the_mode_whatever_the_umask(tmp_path: Path) -> None:
    target = tmp_path / "script.js"
    old = os.umask(0o077)
    try:
        atomic.replace_durably(target, b"run()", 0o755)
        atomic.replace_durably(tmp_path / "d" / "m.json", b"{}", parents=True)
    finally:
        os.umask(old)
    assert target.read_bytes() == b"run()"
    assert target.stat().st_mode & 0o7777 == 0o755
    assert (tmp_path / "d" / "m.json").stat().st_mode & 0o7777 == 0o644
    assert sorted(os.listdir(tmp_path)) == ["d", "script.js"]


def test_replace_durably_takes_a_bare_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.chdir(tmp_path)
    atomic.replace_durably("bundle.zip", b"PK")
    assert (tmp_path / "bundle.zip").read_bytes() == b"PK"


def test_create_new_refuses_an_existing_file_and_leaves_it(tmp_path: Path) -> None:
    target = tmp_path / "args.json"
    atomic.create_new(target, b'{"a": 1}\n')
    assert target.read_bytes() == b'{"a": 1}\n'
    with pytest.raises(FileExistsError):
        atomic.create_new(target, b"{}")
    assert target.read_bytes() == b'{"a": 1}\n'
    assert os.listdir(tmp_path) == ["args.json"]
    deep = tmp_path / "x" / "y.json"
    atomic.create_new(deep, b"[]", staging=tmp_path / "st", parents=True)
    assert deep.read_bytes() == b"[]" and os.listdir(tmp_path / "st") == []


def test_create_new_refuses_a_symlink_in_its_place(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_bytes(b"keep")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileExistsError):
        atomic.create_new(tmp_path / "link", b"x")
    with pytest.raises(FileExistsError):
        atomic.create_in_place(tmp_path / "link", b"x")
    assert (tmp_path / "elsewhere").read_bytes() == b"keep"


def test_create_in_place_writes_a_new_file_only(tmp_path: Path) -> None:
    target = tmp_path / "n" / "run.json"
    atomic.create_in_place(target, b"{}\n", parents=True)
    assert target.read_bytes() == b"{}\n"
    with pytest.raises(FileExistsError):
        atomic.create_in_place(target, b"other")
    assert target.read_bytes() == b"{}\n"


def test_sync_takes_files_and_folders(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"1")
    atomic.sync(tmp_path / "f")
    atomic.sync(tmp_path)
    with pytest.raises(FileNotFoundError):
        atomic.sync(tmp_path / "missing")


def test_temporary_names_have_a_fixed_length(tmp_path: Path) -> None:
    first = atomic.temp_sibling(str(tmp_path / "a"))
    second = atomic.temp_sibling(str(tmp_path / ("b" * 200)))
    assert first != second
    assert len(first) == len(second) == len(f"{tmp_path}/{TEMP_PREFIX}") + 32


def _calls(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "os":
            found.add(node.func.attr)
    return found


def test_only_the_atomic_module_replaces_or_fsyncs_files() -> None:
    """Every whole-file write goes through one module: nobody else renames a temporary
    file over a target, fsyncs, or writes a file's temporary copy itself."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "workspace" / "storage" / "_atomic.py":
            continue
        calls = _calls(ast.parse(path.read_text(encoding="utf-8")))
        for name in ("replace", "fsync", "fdatasync"):
            if name in calls:
                offenders.append(f"{path.relative_to(SRC)}: os.{name}")
    assert offenders == []


@pytest.mark.parametrize("size", [0, 1, 1024, atomic.DIGEST_CHUNK - 1, atomic.DIGEST_CHUNK,
                                  atomic.DIGEST_CHUNK + 1, 3 * atomic.DIGEST_CHUNK + 7])
def test_digest_regular_is_the_sha256_of_the_whole_file(tmp_path: Path, size: int) -> None:
    """Whatever the size hint (exact, stale-small, zero or too large), the digest covers the
    file from its first byte to its end."""
    target = tmp_path / "f.bin"
    data = bytes(i % 251 for i in range(size))
    target.write_bytes(data)
    expected = hashlib.sha256(data).hexdigest()
    for hint in {size, max(size - 1, 0), 0, size + 10}:
        assert atomic.digest_regular(target, hint) == expected


def test_digest_regular_refuses_links_and_special_files(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x")
    os.symlink(tmp_path / "f", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError):
        atomic.digest_regular(tmp_path / "link")
    with pytest.raises(atomic.NotRegularFile):
        atomic.digest_regular(tmp_path / "fifo")
